"""A workspace's lineage from the configured lineage store.

:class:`flower.core.lineage.Lineage` works on the store it is given; this module opens
the store the settings configure, the way continuity wants it: a store that cannot be
opened (or, to read only, is not there) remembers nothing and the work goes on, while a
mistake in its configuration is a :class:`~flower.core.errors.ConfigError`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import msgspec

from flower.core.errors import ConfigError, StoreNotFoundError
from flower.core.i18n import _
from flower.core.lineage import Lineage, NoLineageStore, check_record, settings_for
from flower.core.protocols import (
    FencingLineageStore,
    LineageStore,
    MergingLineageStore,
    MismatchLineageStore,
)
from flower.core.records import LineageRecord
from flower.stores.encrypt import FileSealer, file_sealer
from flower.stores.open import open_lineage_store

if TYPE_CHECKING:
    from flower.core.config import Settings

log = logging.getLogger(__name__)


SEALED_EXTRA = "sealed"
"""With encryption on, the one key of a stored record's ``extra``: everything else it
held (the pending request, sentences not heard yet, ...) sealed with the keyring."""


class SealedLineageStore:
    """A lineage store whose records keep ``extra`` sealed (see :data:`SEALED_EXTRA`);
    the workspace, the wake count and the steps' session ids stay readable."""

    def __init__(self, inner: LineageStore, sealer: FileSealer) -> None:
        self.inner = inner
        self.sealer = sealer
        # Each optional capability is the inner store's, set on the instance so the
        # protocols' isinstance checks see it (they look no further than the instance).
        if isinstance(inner, MergingLineageStore):
            self.update = self._update
        if isinstance(inner, MismatchLineageStore):
            self.mismatch = inner.mismatch
        if isinstance(inner, FencingLineageStore):
            self.fences_writes = inner.fences_writes

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def _sealed(self, record: LineageRecord) -> LineageRecord:
        extra = self._opened(record).extra
        if not extra:
            return record
        return msgspec.structs.replace(
            record, extra={SEALED_EXTRA: self.sealer.seal(extra, "lineage")}
        )

    def _opened(self, record: LineageRecord) -> LineageRecord:
        sealed = record.extra.get(SEALED_EXTRA)
        if not self.sealer.is_sealed(sealed):
            return record
        opened = self.sealer.open(sealed, "lineage")
        rest = {k: v for k, v in record.extra.items() if k != SEALED_EXTRA}
        extra = {**rest, **opened} if isinstance(opened, dict) else rest
        return msgspec.structs.replace(record, extra=extra)

    def load(self, workspace: str) -> LineageRecord | None:
        record = self.inner.load(workspace)
        return None if record is None else self._opened(record)

    def save(self, record: LineageRecord) -> None:
        check_record(record)  # before sealing: a bad record is refused as the inner store would
        self.inner.save(self._sealed(record))

    def _update(
        self, workspace: str, change: Callable[[LineageRecord | None], LineageRecord]
    ) -> LineageRecord:
        def sealed_change(current: LineageRecord | None) -> LineageRecord:
            opened = None if current is None else self._opened(current)
            changed = change(opened)
            check_record(changed)
            return self._sealed(changed)

        assert isinstance(self.inner, MergingLineageStore)  # set as update only then
        return self._opened(self.inner.update(workspace, sealed_change))


def configured_lineage_store(
    settings: Settings | None = None,
    *,
    run_dir: str | os.PathLike[str] | None = None,
    read_only: bool = False,
) -> LineageStore:
    """The lineage store ``settings`` configure, or a :class:`NoLineageStore` when it
    cannot be opened (``read_only``: when it is not there either, silently)."""
    try:
        settings = settings_for(settings, run_dir)
        store = open_lineage_store(settings=settings, read_only=read_only)
    except ConfigError:
        raise
    except Exception as exc:  # continuity is an extra: never block the work
        if not (read_only and isinstance(exc, StoreNotFoundError)):
            log.warning(_("lineage store unavailable, continuing without continuity: %s"), exc)
        return NoLineageStore()
    sealer = file_sealer(settings)
    return store if sealer is None else SealedLineageStore(store, sealer)


def load_lineage(
    workspace: str | os.PathLike[str] = ".",
    *,
    settings: Settings | None = None,
    run_dir: str | os.PathLike[str] | None = None,
    store: LineageStore | None = None,
) -> Lineage:
    """:meth:`Lineage.load` from ``store``, or from the configured lineage store. Raises
    only a :class:`~flower.core.errors.ConfigError` (the lineage store's configuration)."""
    if store is None:
        store = configured_lineage_store(settings, run_dir=run_dir)
    return Lineage.load(workspace, store=store, settings=settings, run_dir=run_dir)


__all__ = ["SealedLineageStore", "configured_lineage_store", "load_lineage"]
