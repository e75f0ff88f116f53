"""Alembic, driven the way a library should drive it.

The ``Config`` is built in code (no alembic.ini, no ``fileConfig`` touching the
host's loggers) and the migration scripts get a live connection that is already
inside our transaction, taken under a lock: ``BEGIN IMMEDIATE`` on SQLite, a
transaction-scoped advisory lock on PostgreSQL. Two upgrades at once therefore run
one after the other, and the second finds nothing to do.

Alembic itself is imported only when a migration or a version check needs it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError

from flower.core.errors import SchemaOutOfDateError, StoreNotFoundError, StoreUnavailableError
from flower.core.i18n import _
from flower_plugins.sql.engine import Database
from flower_plugins.sql.schema import HEAD_REVISION, VERSION_TABLE

if TYPE_CHECKING:
    from alembic.config import Config
    from alembic.script import ScriptDirectory

T = TypeVar("T")
Status = Literal["up to date", "behind", "ahead", "empty"]

_PG_LOCK = "SELECT pg_advisory_xact_lock(hashtext('flower.migrations.' || current_schema()))"


def migrations_dir() -> Path:
    """The migration scripts: ``flower/_migrations`` in a wheel, ``alembic/`` in a checkout."""
    import flower

    packaged = Path(flower.__file__).resolve().parent / "_migrations"
    if (packaged / "env.py").is_file():
        return packaged
    source = Path(__file__).resolve().parents[2] / "alembic"
    if (source / "env.py").is_file():
        return source
    raise StoreUnavailableError(
        _(
            "flower's migration scripts are missing (looked in {packaged} and {source}); "
            "reinstall flower"
        ).format(packaged=packaged, source=source)
    )


def alembic_config(connection: Connection | None = None) -> Config:
    from alembic.config import Config

    config = Config()  # no ini file: Alembic never calls logging.fileConfig
    # ConfigParser interpolation: a literal '%' in a path must be doubled.
    config.set_main_option("script_location", str(migrations_dir()).replace("%", "%%"))
    config.attributes["connection"] = connection
    return config


@cache
def script_directory() -> ScriptDirectory:
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config())


@dataclass(frozen=True)
class SchemaState:
    current: str | None
    head: str
    status: Status


def current_revision(conn: Connection) -> str | None:
    if not sa.inspect(conn).has_table(VERSION_TABLE):
        return None
    rows = conn.exec_driver_sql(f"SELECT version_num FROM {VERSION_TABLE}").scalars().all()
    return rows[0] if len(rows) == 1 else (",".join(sorted(rows)) or None)


def schema_state(conn: Connection) -> SchemaState:
    current = current_revision(conn)
    if current == HEAD_REVISION:
        return SchemaState(current, HEAD_REVISION, "up to date")
    if current is None:
        return SchemaState(None, HEAD_REVISION, "empty")
    known = {script.revision for script in script_directory().walk_revisions()}
    status: Status = "behind" if current in known else "ahead"
    return SchemaState(current, HEAD_REVISION, status)


def _ahead_error(db: Database, state: SchemaState) -> SchemaOutOfDateError:
    return SchemaOutOfDateError(
        _(
            "{url} has schema revision {revision}, which this flower does not know (its "
            "newest is {head}): it was written by a newer flower; upgrade flower on this host"
        ).format(url=db.safe_url, revision=repr(state.current), head=repr(state.head))
    )


def read_state(db: Database) -> SchemaState:
    return db.read(schema_state)


def upgrade(db: Database, revision: str = "head") -> tuple[SchemaState, SchemaState]:
    """Upgrade under the migration lock; returns the state before and after."""
    from alembic import command

    def work(conn: Connection) -> tuple[SchemaState, SchemaState]:
        before = schema_state(conn)
        if before.status == "ahead":
            raise _ahead_error(db, before)
        if before.status != "up to date" or revision != "head":
            command.upgrade(alembic_config(conn), revision)
        return before, schema_state(conn)

    return _run_migration(db, work)


def downgrade(db: Database, revision: str) -> SchemaState:
    from alembic import command

    def work(conn: Connection) -> SchemaState:
        command.downgrade(alembic_config(conn), revision)
        return schema_state(conn)

    return _run_migration(db, work)


def _check_pg_schema(db: Database, conn: Connection) -> None:
    """The tables go to the first schema of the search path that exists: there must be one."""
    if conn.exec_driver_sql("SELECT current_schema()").scalar() is not None:
        return
    search_path = conn.exec_driver_sql("SHOW search_path").scalar()
    raise StoreUnavailableError(
        _(
            "{url}: no schema of its search_path ({search_path}) exists; create it "
            "(CREATE SCHEMA name) or set another search_path in the URL"
        ).format(url=db.safe_url, search_path=search_path)
    )


def _run_migration(db: Database, work: Callable[[Connection], T]) -> T:
    if db.dialect != "sqlite":

        def locked(conn: Connection) -> T:
            _check_pg_schema(db, conn)
            conn.exec_driver_sql(_PG_LOCK)
            return work(conn)

        return db.write(locked)
    # SQLite batch migrations copy and drop tables: with foreign keys on, dropping
    # flower_sessions would cascade into flower_entries. The pragma cannot change
    # inside a transaction, so it is switched on a dedicated connection first.
    try:
        with db.engine.connect() as conn:
            raw = conn.connection.driver_connection
            assert raw is not None  # a live sqlite3 connection
            raw.execute("PRAGMA foreign_keys=OFF")
            try:
                with conn.execution_options(flower_write=True).begin():
                    result = work(conn)
                    violations = conn.exec_driver_sql("PRAGMA foreign_key_check").fetchall()
                    if violations:
                        raise StoreUnavailableError(
                            _(
                                "{path}: a migration would leave rows without their "
                                "session ({count}); nothing was changed"
                            ).format(path=db.sqlite_path, count=len(violations))
                        )
                return result
            finally:
                raw.execute("PRAGMA foreign_keys=ON")
    except DBAPIError as exc:
        raise db.translate(exc) from exc


def ensure_schema(db: Database, *, auto_migrate: bool) -> SchemaState:
    """Check the schema on open; upgrade it when allowed, else say what to run."""
    state = read_state(db)
    if state.status == "up to date":
        return state
    if state.status == "ahead":
        raise _ahead_error(db, state)
    if auto_migrate:
        return upgrade(db)[1]
    found = state.current or _("no flower tables")
    raise SchemaOutOfDateError(
        _(
            "{url}: schema is behind ({found}; this flower needs {head}); "
            "run `flower db upgrade` (add --url if it is not the configured database), "
            "or set [tool.flower.sessions] auto_migrate = true"
        ).format(url=db.safe_url, found=found, head=state.head)
    )


def readable_schema(db: Database) -> SchemaState:
    """Check the schema for a reader, changing nothing: no flower tables at all is a
    store that does not exist yet; one behind or ahead is the error a writer gets."""
    state = read_state(db)
    if state.status == "empty":
        raise StoreNotFoundError(
            _("{url} holds no flower sessions (no flower tables)").format(url=db.safe_url)
        )
    if state.status == "up to date":
        return state
    return ensure_schema(db, auto_migrate=False)
