"""The built-in SQL backends: ``sqlite`` and ``postgres``, one store on SQLAlchemy Core.

This module is what the ``flower`` entry point loads at CLI start-up, so it imports
nothing heavy: SQLAlchemy, Alembic and the options (msgspec) are imported when a
store is opened.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from flower.core.hookspecs import hookimpl

if TYPE_CHECKING:
    from collections.abc import Mapping

    import typer

    from flower.core.config import Settings
    from flower.plugin import RegisterBackend
    from flower_plugins.sql.lineage import SqlLineageStore
    from flower_plugins.sql.options import SqlOptions
    from flower_plugins.sql.store import SqlSessionStore

BACKENDS = {"sqlite": ("sqlite",), "postgres": ("postgresql", "postgres")}
_OPTIONS = "flower_plugins.sql.options:SqlOptions"  # msgspec, imported on use


def _session_store(
    backend: str,
    *,
    url: str,
    options: SqlOptions | Mapping[str, object] | None,
    settings: Settings,
    read_only: bool = False,
) -> SqlSessionStore:
    from flower_plugins.sql.factory import open_session_store

    return open_session_store(
        backend, url=url, options=options, settings=settings, read_only=read_only
    )


def _lineage_store(
    backend: str,
    *,
    url: str | None,
    options: SqlOptions | Mapping[str, object] | None,
    settings: Settings,
    read_only: bool = False,
) -> SqlLineageStore:
    from flower_plugins.sql.factory import open_lineage_store

    return open_lineage_store(
        backend, url=url, options=options, settings=settings, read_only=read_only
    )


@hookimpl
def register_session_stores(register: RegisterBackend) -> None:
    for backend, schemes in BACKENDS.items():
        register(backend, partial(_session_store, backend), schemes=schemes, options=_OPTIONS)


@hookimpl
def register_lineage_stores(register: RegisterBackend) -> None:
    for backend, schemes in BACKENDS.items():
        register(backend, partial(_lineage_store, backend), schemes=schemes, options=_OPTIONS)


@hookimpl
def register_commands(app: typer.Typer) -> None:
    from flower_plugins.sql.cli import build_db_app

    app.add_typer(build_db_app(), name="db")
