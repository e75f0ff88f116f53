"""Settings and a URL -> an opened SQL store with its schema checked."""

from __future__ import annotations

import os
from collections.abc import Mapping

from flower.core.config import Settings
from flower.core.errors import (
    ConfigError,
    SchemaOutOfDateError,
    StoreDamagedError,
    StoreUnavailableError,
)
from flower.core.i18n import _
from flower.core.lease import lease_token
from flower_plugins.sql.engine import Database, dialect_of, open_database, parse_url, redact
from flower_plugins.sql.lineage import SqlLineageStore
from flower_plugins.sql.migrate import ensure_schema, readable_schema
from flower_plugins.sql.options import SqlOptions
from flower_plugins.sql.store import SqlSessionStore


def _options(options: SqlOptions | Mapping[str, object] | None) -> SqlOptions:
    if isinstance(options, SqlOptions):
        return options
    import msgspec

    return msgspec.convert(dict(options or {}), SqlOptions)


def open_checked(
    url: str,
    backend: str,
    options: SqlOptions | Mapping[str, object] | None,
    settings: Settings,
    *,
    read_only: bool = False,
) -> Database:
    """Open ``url`` for ``backend``; SQLite migrates itself, Postgres only when allowed,
    and nothing when ``read_only`` (a reader finds the schema as it is)."""
    dialect = dialect_of(parse_url(url))
    if dialect != backend:
        raise StoreUnavailableError(
            _(
                "backend {backend} cannot open {url}: set [tool.flower.sessions] url "
                "(or FLOWER_SESSIONS_URL) to a {name} URL"
            ).format(backend=repr(backend), url=redact(url), name=backend)
        )
    db = open_database(url, _options(options), settings.sessions.synchronous, read_only=read_only)
    try:
        if not read_only:
            ensure_schema(db, auto_migrate=dialect == "sqlite" or settings.sessions.auto_migrate)
            return db
        try:
            readable_schema(db)
            return db
        except StoreDamagedError:
            # a damaged file is still read (what its sessions hold, for repair and
            # show); only writers refuse it
            return db
        except SchemaOutOfDateError:
            if not _can_write(db.sqlite_path):
                raise
    except BaseException:
        db.close()
        raise
    # SQLite upgrades itself on first use, a reader's too, where it may write
    db.close()
    return open_checked(url, backend, options, settings)


def _can_write(sqlite_path: str | None) -> bool:
    if sqlite_path is None:
        return False
    return os.access(sqlite_path, os.W_OK) and os.access(
        os.path.dirname(sqlite_path) or ".", os.W_OK
    )


def open_session_store(
    backend: str,
    *,
    url: str | None,
    options: SqlOptions | Mapping[str, object] | None,
    settings: Settings,
    read_only: bool = False,
) -> SqlSessionStore:
    if url is None:  # only sqlite has an embedded default
        raise ConfigError(
            _(
                "[tool.flower.sessions] backend: {backend} needs a URL: set "
                "[tool.flower.sessions] url (or FLOWER_SESSIONS_URL) to a {name} URL"
            ).format(backend=repr(backend), name=backend),
            key="sessions.backend",
        )
    db = open_checked(url, backend, options, settings, read_only=read_only)
    # a wake started by a fleet worker writes only while its lease holds
    return SqlSessionStore(db, lease=None if read_only else lease_token())


def open_lineage_store(
    backend: str,
    *,
    url: str | None,
    options: SqlOptions | Mapping[str, object] | None,
    settings: Settings,
    read_only: bool = False,
) -> SqlLineageStore:
    if url is None:
        url = settings.sessions_url()
        if backend == "sqlite" and not url.startswith("sqlite"):
            url = f"sqlite:///{settings.run_path / 'sessions.db'}"
    db = open_checked(url, backend, options, settings, read_only=read_only)
    return SqlLineageStore(db, workspace_id=settings.lineage.workspace_id)
