"""A workspace's lineage from the configured lineage store.

:class:`flower.core.lineage.Lineage` works on the store it is given; this module opens
the store the settings configure, the way continuity wants it: a store that cannot be
opened (or, to read only, is not there) remembers nothing and the work goes on, while a
mistake in its configuration is a :class:`~flower.core.errors.ConfigError`.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from flower.core.errors import ConfigError, StoreNotFoundError
from flower.core.i18n import _
from flower.core.lineage import Lineage, NoLineageStore, settings_for
from flower.core.protocols import LineageStore
from flower.stores.open import open_lineage_store

log = logging.getLogger(__name__)


def configured_lineage_store(
    settings: Any = None,
    *,
    run_dir: str | os.PathLike[str] | None = None,
    read_only: bool = False,
) -> LineageStore:
    """The lineage store ``settings`` configure, or a :class:`NoLineageStore` when it
    cannot be opened (``read_only``: when it is not there either, silently)."""
    try:
        return open_lineage_store(settings=settings_for(settings, run_dir), read_only=read_only)
    except ConfigError:
        raise
    except Exception as exc:  # continuity is an extra: never block the work
        if not (read_only and isinstance(exc, StoreNotFoundError)):
            log.warning(_("lineage store unavailable, continuing without continuity: %s"), exc)
        return NoLineageStore()


def load_lineage(
    workspace: str | os.PathLike[str] = ".",
    *,
    settings: Any = None,
    run_dir: str | os.PathLike[str] | None = None,
    store: LineageStore | None = None,
) -> Lineage:
    """:meth:`Lineage.load` from ``store``, or from the configured lineage store. Raises
    only a :class:`~flower.core.errors.ConfigError` (the lineage store's configuration)."""
    if store is None:
        store = configured_lineage_store(settings, run_dir=run_dir)
    return Lineage.load(workspace, store=store, settings=settings, run_dir=run_dir)


__all__ = ["configured_lineage_store", "load_lineage"]
