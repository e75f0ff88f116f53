"""Engines for the SQL stores: one code path, two dialects (SQLite, PostgreSQL).

SQLite runs in WAL with a busy timeout; every write transaction starts with
``BEGIN IMMEDIATE`` so a writer waits for the lock up front instead of failing
half-way with "database is locked". PostgreSQL connections are pinged before use
and a write whose connection was dropped is retried once on a fresh one.
Errors leave here as :class:`~flower.core.errors.FlowerError` subclasses that name
the database without its password.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import random
import re
import threading
import time
import warnings
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import URL, Connection, Engine
from sqlalchemy.exc import ArgumentError, DBAPIError, IntegrityError

from flower.core.errors import (
    DAMAGE_MARKER_SUFFIX,
    LocalFaultError,
    StoreDamagedError,
    StoreNotFoundError,
    StoreUnavailableError,
    sqlite_locked,
)
from flower.core.fileperms import (
    check_private,
    create_private,
    local_fault_error,
    private_dir,
    read_only_reason,
)
from flower.core.i18n import _
from flower.core.redact import redact_text
from flower_plugins.sql.options import SqlOptions

if TYPE_CHECKING:
    from sqlalchemy.engine.interfaces import DBAPIConnection, DBAPICursor
    from sqlalchemy.pool import ConnectionPoolEntry, PoolProxiedConnection
    from sqlalchemy.sql.expression import ClauseElement, ReturnsRows

T = TypeVar("T")
Dialect = Literal["sqlite", "postgres"]

_WRITE = "flower_write"
_TRANSIENT_SQLSTATES = frozenset({"40P01", "40001"})
"""Postgres aborted the transaction (deadlock, serialization failure): redo it."""
_PASSWORD_IN_URL = re.compile(r"(://[^:/@]*:)[^@]*@")
_QUERY_PASSWORDS = ("password", "sslpassword")


READ_ATTEMPTS = 5
"""How often a read runs when its connection keeps being dropped under it (a read holds
nothing, so running it again is always safe); a write runs at most twice."""
READ_RETRY_PAUSE = 0.05
"""Seconds before the second try of a read; doubled for each try after it."""
ABORTED_ATTEMPTS = 5
"""How often a transaction runs that Postgres keeps aborting to break a deadlock or a
serialization conflict (idempotency by uuid makes running it again safe)."""
_LOST_SQLSTATE_CLASSES = ("08", "57")
"""Connection exception, operator intervention (a terminated backend, a shutdown)."""


def lost_connection(exc: BaseException) -> bool:
    """Whether the server ended the connection (by its SQLSTATE class), whatever the
    driver's own state says yet."""
    orig = getattr(exc, "orig", None) or exc
    sqlstate = getattr(orig, "sqlstate", None) or ""
    return sqlstate.startswith(_LOST_SQLSTATE_CLASSES)


def _pause_before(attempt: int) -> None:
    """The wait before read ``attempt`` (2, 3, ...): none for the first retry."""
    if attempt > 2:
        time.sleep(READ_RETRY_PAUSE * 2 ** (attempt - 3))


def _may_run_again(attempt: int, exc: BaseException, *, disconnected: bool, write: bool) -> bool:
    """Whether the transaction that just failed with ``exc`` on ``attempt`` runs again.

    A dropped connection: a write once more, a read up to :data:`READ_ATTEMPTS`. An
    aborted transaction: up to :data:`ABORTED_ATTEMPTS`, after a short random pause, so
    that two writers in a cycle do not meet again in the same order at once.
    """
    if disconnected:
        return attempt < (2 if write else READ_ATTEMPTS)
    if is_transient(exc) and attempt < ABORTED_ATTEMPTS:
        time.sleep(random.uniform(0, READ_RETRY_PAUSE * attempt))
        return True
    return False


def is_transient(exc: BaseException) -> bool:
    """Whether the database rolled the transaction back so that running it again may
    succeed (Postgres broke a deadlock or a serialization conflict)."""
    orig = getattr(exc, "orig", None) or exc
    return getattr(orig, "sqlstate", None) in _TRANSIENT_SQLSTATES


def redact(url: str) -> str:
    """A URL fit for messages: its password masked, in the user info (up to the last
    '@', as URL parsers read it) and in the query (``?password=``), even when the URL
    does not parse."""
    return _PASSWORD_IN_URL.sub(r"\1***@", redact_text(url))


def shown(url: URL) -> str:
    """A parsed URL fit for messages (see :func:`redact`)."""
    return redact(url.render_as_string(hide_password=False))


def _secrets(url: URL) -> list[str]:
    """The passwords a URL carries: in its user info and as libpq query parameters."""
    found = [str(url.password)] if url.password else []
    for name in _QUERY_PASSWORDS:
        value = url.query.get(name)
        found.extend([value] if isinstance(value, str) else list(value or ()))
    return [secret for secret in found if secret]


def parse_url(url: str) -> URL:
    """A SQLAlchemy URL for flower's SQL stores; Postgres always through psycopg 3."""
    try:
        parsed = sa.make_url(url)
    except ArgumentError:
        raise StoreUnavailableError(
            _("not a valid database URL: {url}").format(url=redact(url))
        ) from None
    except ValueError:  # SQLAlchemy reads the port with int()
        raise StoreUnavailableError(
            _("not a valid database URL: {url} (the port is not a number)").format(url=redact(url))
        ) from None
    if parsed.host and "@" in parsed.host:
        # user:p@ss@host is read as password 'p' at host 'ss@host': the driver's
        # error would then name that host, and the rest of the password with it.
        raise StoreUnavailableError(
            _(
                "not a valid database URL: {url} (more than one '@' before the host: "
                "write an '@' in the user name or password as %40)"
            ).format(url=redact(url))
        )
    backend, _plus, driver = parsed.drivername.partition("+")
    if backend == "sqlite":
        if driver not in ("", "pysqlite"):
            raise StoreUnavailableError(
                _("{url}: only the built-in sqlite3 driver is supported").format(url=redact(url))
            )
        return parsed
    if backend in ("postgresql", "postgres"):
        if driver not in ("", "psycopg"):
            raise StoreUnavailableError(
                _(
                    "{url}: the postgres backend uses psycopg 3; write postgresql+psycopg://..."
                ).format(url=redact(url))
            )
        return parsed.set(drivername="postgresql+psycopg")
    raise StoreUnavailableError(
        _("{url} is neither a SQLite nor a PostgreSQL URL").format(url=redact(url))
    )


def dialect_of(url: URL) -> Dialect:
    return "sqlite" if url.get_backend_name() == "sqlite" else "postgres"


QUICK_CHECK_MAX_BYTES = 256 * 2**20
"""A SQLite database (with its WAL) up to this size gets ``PRAGMA integrity_check``
each time a process opens it to write (about 0.7 s at this size on a small machine); a
larger one gets it for its sessions table and key indexes only, and its loads check
the rest."""
_DAMAGE_WORDS = ("malformed", "corrupt", "not a database")
"""What SQLite's errors about a damaged file say (``database disk image is malformed``,
``file is not a database``)."""


def is_damage(message: str) -> bool:
    lowered = message.lower()
    return any(word in lowered for word in _DAMAGE_WORDS)


def damage_line(path: str, what: str) -> str:
    """The one line a damaged SQLite database gets: the file, what was wrong, and how to
    save what is readable. ``what`` is SQLite's or flower's words, never transcript text."""
    return _(
        "{path} is damaged ({what}); flower writes nothing more into it. Save every "
        "readable session into a new store and set the damaged file aside with: "
        "flower sessions repair"
    ).format(path=path, what=what)


def damage_marker(path: str | os.PathLike[str]) -> Path:
    return Path(f"{os.fspath(path)}{DAMAGE_MARKER_SUFFIX}")


def _identity(path: str | os.PathLike[str]) -> list[int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_dev, st.st_ino]


def marked_damaged(path: str | os.PathLike[str]) -> str | None:
    """What the marker beside ``path`` says was wrong with it, or None: no marker, or
    one about another file that has since taken its place (a restored backup)."""
    marker = damage_marker(path)
    try:
        found = json.loads(marker.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return _("marked damaged by an earlier run")
    if not isinstance(found, dict) or found.get("file") != _identity(path):
        return None
    return str(found.get("why") or _("marked damaged by an earlier run"))


def mark_damaged(path: str | os.PathLike[str], why: str) -> None:
    """Leave the marker beside ``path`` (best effort: a read-only folder keeps none)."""
    marker = damage_marker(path)
    text = json.dumps({"file": _identity(path), "why": why, "at": int(time.time())})
    try:
        create_private(marker)
        marker.write_text(text, encoding="utf-8")
    except OSError:
        pass


def first_complaint(rows: list[str]) -> str | None:
    """What SQLite's ``PRAGMA quick_check`` or ``integrity_check`` said first, or None
    when it found the file sound."""
    if rows == ["ok"]:
        return None
    lines = [line.strip() for row in rows for line in row.splitlines()]
    complaints = [line for line in lines if line and not line.startswith("***")]
    return short_reason(complaints[0] if complaints else "; ".join(lines))


def short_reason(text: str) -> str:
    first = text.strip().splitlines()[0] if text.strip() else "?"
    return first if len(first) <= 120 else first[:117] + "..."


class ConnectionLostWarning(UserWarning):
    """A connection to the database was lost and flower reconnected and retried."""


LOST_CONNECTION = (
    "the connection to PostgreSQL was lost (a server restart, a failover or a "
    "terminated backend); flower reconnected and retried"
)


def _warn_lost_connection() -> None:
    # One call site, so Python's default warning filter shows it once per process.
    warnings.warn(LOST_CONNECTION, ConnectionLostWarning, stacklevel=1)


class _QuietLostConnection(logging.Filter):
    """Drops psycopg's ``error ignored terminating <psycopg.Pipeline [BAD]>: the
    connection is lost``: the statement's own error reaches flower, which reconnects,
    retries and says so once (:data:`LOST_CONNECTION`)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not str(record.msg).startswith("error ignored terminating"):
            return True
        error = record.args[-1] if isinstance(record.args, tuple) and record.args else None
        return type(error).__name__ not in ("OperationalError", "ConnectionFailure")


def _quiet_psycopg_lost_connections() -> None:
    logger = logging.getLogger("psycopg")
    if not any(isinstance(f, _QuietLostConnection) for f in logger.filters):
        logger.addFilter(_QuietLostConnection())


class HotConnection:
    """One thread's pooled connection, used straight through the driver.

    The pool's proxy (``fairy``) stays checked out while the thread lives; calls go
    to the driver connection, one attribute lookup fewer each. It is given back to
    the pool when nothing refers to it any more (the thread that owned it ended and
    its ``threading.local`` slot was dropped) or when the database closes, whichever
    comes first.
    """

    def __init__(self, fairy: PoolProxiedConnection) -> None:
        connection = fairy.dbapi_connection
        assert connection is not None  # checked out just now, not yet invalidated
        self.connection = connection
        self.cursor = self.connection.cursor()
        self._fairy = fairy
        self._release = weakref.finalize(self, fairy.close)
        self._release.atexit = False  # at exit the engine is disposed, or gone

    def release(self) -> None:
        """Back to the pool (once; later calls do nothing)."""
        self._release()

    def invalidate(self) -> None:
        """The connection is broken: the pool discards it instead of reusing it."""
        if self._release.detach() is not None:
            self._fairy.invalidate()


@dataclass
class Database:
    """An engine plus the policies every store operation shares."""

    engine: Engine
    url: URL
    dialect: Dialect
    busy_timeout: float
    _local: threading.local = field(default_factory=threading.local)
    _hot: weakref.WeakSet[HotConnection] = field(default_factory=weakref.WeakSet)
    _hot_lock: threading.Lock = field(default_factory=threading.Lock)
    damaged: str | None = None
    """Why this database was found damaged (then nothing more is written to it)."""

    def found_damaged(self, what: str) -> StoreDamagedError:
        """Remember that the database is damaged, in this process and, for a SQLite
        file, in a marker beside it; the error to raise."""
        path = self.sqlite_path
        if self.damaged is None:
            self.damaged = what
            if path and path != ":memory:":
                mark_damaged(path, what)
        return StoreDamagedError(damage_line(path or self.safe_url, what))

    def refuse_damaged(self) -> None:
        """Raise before a write when the database was found damaged."""
        if self.damaged is not None:
            raise self.found_damaged(self.damaged)

    def check_damage(self, *, thorough: bool = False, table: str | None = None) -> str | None:
        """SQLite's ``quick_check`` of the whole file now (``integrity_check``, which
        also compares every index with its table, when ``thorough``; of ``table`` and
        its indexes only, when given); None on PostgreSQL or when the file is sound."""
        if self.dialect != "sqlite":
            return None
        pragma = "integrity_check" if thorough else "quick_check"
        if table is not None:
            pragma = f"{pragma}({table})"

        def check(conn: Connection) -> str | None:
            rows = conn.exec_driver_sql(f"PRAGMA {pragma}").fetchall()
            return first_complaint([str(row[0]) for row in rows])

        return self.read(check)

    def compile(self, statement: ClauseElement) -> str:
        """SQL text of a Core statement for this dialect (named/pyformat parameters)."""
        return str(statement.compile(dialect=self.engine.dialect))

    def compile_positional(self, statement: ReturnsRows) -> tuple[str, tuple[str, ...]]:
        """SQL text with positional parameters, and the parameter names in order.

        For ``executemany`` on the hot path: tuples bind faster than dicts.
        """
        paramstyle = "qmark" if self.dialect == "sqlite" else "format"
        # every concrete dialect takes paramstyle=; the stubs of the base Dialect do not say so
        dialect = type(self.engine.dialect)(paramstyle=paramstyle)  # type: ignore[call-arg]
        compiled = statement.compile(dialect=dialect)
        return str(compiled), tuple(compiled.positiontup or ())

    @property
    def safe_url(self) -> str:
        return shown(self.url)

    @property
    def sqlite_path(self) -> str | None:
        return self.url.database if self.dialect == "sqlite" else None

    def write(self, work: Callable[[Connection], T]) -> T:
        """Run ``work`` in one short write transaction (``BEGIN IMMEDIATE`` on SQLite).

        A connection dropped under us (server restart, ``pg_terminate_backend``) gets
        the whole transaction retried once on a new connection, and one that Postgres
        aborted to break a deadlock runs again (see :func:`_may_run_again`);
        idempotency by uuid makes the retry safe.
        """
        self.refuse_damaged()
        engine = self.engine.execution_options(**{_WRITE: True})
        for attempt in range(1, ABORTED_ATTEMPTS + 1):
            try:
                with engine.begin() as conn:
                    return work(conn)
            except IntegrityError:
                raise
            except DBAPIError as exc:
                lost = exc.connection_invalidated
                if _may_run_again(attempt, exc, disconnected=lost, write=True):
                    if lost:
                        _warn_lost_connection()
                    continue
                raise self.translate(exc) from exc
        raise AssertionError("unreachable")

    def raw_write(self, work: Callable[[DBAPICursor], T]) -> T:
        """The append hot path: ``work(cursor)`` on this thread's DBAPI connection.

        No SQLAlchemy ``Connection``, events or pool checkout per call: statements are
        compiled once by the store. Same transaction rules as :meth:`write`.
        """
        return self._raw(work, write=True)

    def raw_read(self, work: Callable[[DBAPICursor], T]) -> T:
        """The load hot path: ``work(cursor)`` on the same connection, read only.

        The implicit read transaction ends at once so no snapshot is held between loads.
        """
        return self._raw(work, write=False)

    def _raw(self, work: Callable[[DBAPICursor], T], *, write: bool) -> T:
        if write:
            self.refuse_damaged()
        dbapi = self.engine.dialect.loaded_dbapi
        begin_immediate = write and self.dialect == "sqlite"
        attempts = max(READ_ATTEMPTS, ABORTED_ATTEMPTS)
        for attempt in range(1, attempts + 1):
            _pause_before(attempt)
            try:
                conn, cursor = self._hot_cursor()
            except dbapi.Error as exc:  # no connection: the server is down or unreachable
                raise self.translate(exc) from exc
            try:
                if begin_immediate:
                    cursor.execute("BEGIN IMMEDIATE")
                result = work(cursor)
                if write:
                    conn.commit()
                else:
                    conn.rollback()
                return result
            except dbapi.Error as exc:
                disconnected = self.engine.dialect.is_disconnect(
                    exc, conn, cursor
                ) or lost_connection(exc)
                try:
                    conn.rollback()
                except dbapi.Error:
                    disconnected = True
                if disconnected:
                    self._drop_hot_connection()
                if _may_run_again(attempt, exc, disconnected=disconnected, write=write):
                    if disconnected:
                        _warn_lost_connection()
                    continue
                if write and isinstance(exc, dbapi.IntegrityError):
                    raise
                raise self.translate(exc) from exc
            except BaseException:
                # Not the driver's doing (a bug, a KeyboardInterrupt): the transaction
                # must still end here, or the reused connection keeps it open, and on
                # SQLite its write lock, so every later write waits and fails.
                self._abandon(conn)
                raise
        raise AssertionError("unreachable")

    def _abandon(self, conn: DBAPIConnection) -> None:
        """Roll back ``conn``'s transaction after a failure; drop it if that fails too."""
        try:
            conn.rollback()
        except Exception:
            self._drop_hot_connection()

    def _hot_cursor(self) -> tuple[DBAPIConnection, DBAPICursor]:
        """This thread's driver connection and the one cursor every raw call reuses."""
        hot = getattr(self._local, "hot", None)
        if hot is None:
            # Only this thread's local holds it: when the thread ends, the connection
            # goes back to the pool (see HotConnection).
            hot = HotConnection(self.engine.raw_connection())
            self._local.hot = hot
            with self._hot_lock:
                self._hot.add(hot)
        return hot.connection, hot.cursor

    def _drop_hot_connection(self) -> None:
        hot = getattr(self._local, "hot", None)
        self._local.hot = None
        if hot is None:
            return
        with self._hot_lock:
            self._hot.discard(hot)
        hot.invalidate()

    def read(self, work: Callable[[Connection], T]) -> T:
        """Run ``work`` on a pooled connection; a connection dropped under it (see
        :meth:`write`) gets it run again on a new one, up to :data:`READ_ATTEMPTS` times."""
        for attempt in range(1, READ_ATTEMPTS + 1):
            _pause_before(attempt)
            try:
                with self.engine.connect() as conn:
                    return work(conn)
            except DBAPIError as exc:
                if attempt < READ_ATTEMPTS and (exc.connection_invalidated or lost_connection(exc)):
                    _warn_lost_connection()
                    continue
                raise self.translate(exc) from exc
        raise AssertionError("unreachable")

    def translate(self, exc: BaseException) -> StoreUnavailableError:
        if self.dialect == "sqlite":
            message = _driver_message(exc)
            if is_damage(message) and "not a database" not in message.lower():
                return self.found_damaged(short_reason(message))
        return translate_error(exc, self.url, self.dialect, self.busy_timeout)

    def close(self) -> None:
        with self._hot_lock:
            hot, self._hot = list(self._hot), weakref.WeakSet()
        for conn in hot:
            conn.release()  # back to the pool, which dispose() then closes
        self._local = threading.local()
        self.engine.dispose()


def _driver_message(exc: BaseException) -> str:
    orig = getattr(exc, "orig", None) or exc
    text = str(orig).strip()
    return text.splitlines()[0] if text else type(orig).__name__


def _sqlite_local_fault(exc: BaseException, path: str | None) -> LocalFaultError | None:
    """A full disk or a read-only file system under the database, which SQLite reports as
    "database or disk is full" or as a bare "disk I/O error": the machine's fault, said
    as such (see :func:`flower.core.errors.local_fault`)."""
    orig = getattr(exc, "orig", None) or exc
    name = str(getattr(orig, "sqlite_errorname", "") or "")
    if not path or not name.startswith(("SQLITE_FULL", "SQLITE_IOERR", "SQLITE_READONLY")):
        return None
    try:
        disk = os.statvfs(Path(path).parent)
    except OSError:
        return None
    if disk.f_flag & os.ST_RDONLY:
        code = errno.EROFS
    elif name == "SQLITE_FULL" or disk.f_bavail == 0:
        code = errno.ENOSPC
    else:
        return None
    return local_fault_error(OSError(code, os.strerror(code)), path)


def translate_error(
    exc: BaseException, url: URL, dialect: Dialect, busy_timeout: float = 0.0
) -> StoreUnavailableError:
    """One clear line for a database error; never the password."""
    message = _driver_message(exc)
    for secret in _secrets(url):
        message = message.replace(secret, "***")
    lowered = message.lower()
    if dialect == "sqlite":
        path = url.database
        fault = _sqlite_local_fault(exc, path)
        if fault is not None:
            return fault
        if "not a database" in lowered:
            return StoreDamagedError(
                _(
                    "{path} is not a valid SQLite database ({message}); it was left untouched. "
                    "Move it aside to start a fresh one."
                ).format(path=path, message=message)
            )
        if is_damage(message):
            return StoreDamagedError(damage_line(str(path), short_reason(message)))
        if "readonly" in lowered or "read-only" in lowered:
            return StoreUnavailableError(
                _("cannot write {path}: {reason}").format(path=path, reason=read_only_reason(path))
            )
        if sqlite_locked(exc):
            return StoreUnavailableError(
                _(
                    "{path}: another process held the write lock for more than "
                    "{seconds} s ({message}); raise [tool.flower.sessions.options] "
                    "busy_timeout if this is expected"
                ).format(path=path, seconds=f"{busy_timeout:g}", message=message)
            )
        return StoreUnavailableError(
            _("SQLite database {path}: {message}").format(path=path, message=message)
        )
    where = _("PostgreSQL at {host}:{port}").format(
        host=url.host or "localhost", port=url.port or 5432
    )
    if "password authentication failed" in lowered or (
        "role" in lowered and "does not exist" in lowered
    ):
        return StoreUnavailableError(
            _("{where} rejected the credentials of user {user}: {message}").format(
                where=where, user=repr(url.username), message=message
            )
        )
    if "database" in lowered and "does not exist" in lowered:
        return StoreUnavailableError(
            _("{where} has no database {database}; create it (createdb {name})").format(
                where=where, database=repr(url.database), name=url.database
            )
        )
    if "invalid" in lowered and any(word in lowered for word in ("parameter", "value", "option")):
        # the server was never asked: an option in the URL's query is wrong
        return StoreUnavailableError(
            _("{url}: a connection option is wrong ({message})").format(
                url=shown(url), message=message
            )
        )
    if any(word in lowered for word in ("connection", "timeout", "could not", "resolve host")):
        return StoreUnavailableError(
            _("cannot reach {where} ({message})").format(where=where, message=message)
        )
    return StoreUnavailableError(_("{url}: {message}").format(url=shown(url), message=message))


def _read_only_connect(path: Path, timeout: float) -> Callable[[], Any]:
    """How a read-only engine connects: ``mode=ro`` (never creating, never writing);
    in a folder this user cannot write, where SQLite cannot make the WAL index it
    reads through, ``immutable=1`` as long as no WAL holds uncheckpointed commits."""
    import sqlite3
    from urllib.parse import quote

    uri = f"file:{quote(str(path.resolve()))}?mode=ro"

    def connect() -> Any:
        conn = sqlite3.connect(uri, uri=True, timeout=timeout, check_same_thread=False)
        try:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
            return conn
        except sqlite3.OperationalError:
            conn.close()
            wal = path.with_name(path.name + "-wal")
            if wal.exists() and wal.stat().st_size > 0:
                raise  # commits only the WAL holds: immutable would not see them
        return sqlite3.connect(
            f"{uri}&immutable=1", uri=True, timeout=timeout, check_same_thread=False
        )

    return connect


def _sqlite_engine(url: URL, options: SqlOptions, synchronous: str, read_only: bool) -> Engine:
    database = url.database or ""
    in_memory = database in ("", ":memory:")
    kwargs: dict[str, Any] = {}
    if read_only and not in_memory:
        if not Path(database).is_file():
            raise StoreNotFoundError(_("no SQLite database at {path}").format(path=database))
        check_private(Path(database).parent)  # a reader warns of loose modes too
        check_private(database)
        kwargs["creator"] = _read_only_connect(Path(database), options.busy_timeout)
    elif not in_memory:
        try:
            private_dir(Path(database).parent)
            create_private(database)  # SQLite gives -wal and -shm the mode of the db
        except OSError as exc:
            if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
                why = read_only_reason(database)
                raise StoreUnavailableError(
                    _("cannot create {path}: {reason}").format(path=database, reason=why)
                ) from exc
            raise StoreUnavailableError(
                _("cannot create the folder of {path}: {error}").format(path=database, error=exc)
            ) from exc
    if in_memory:
        kwargs["poolclass"] = sa.pool.StaticPool
    engine = sa.create_engine(
        url,
        connect_args={"timeout": options.busy_timeout, "check_same_thread": False},
        echo=options.echo,
        hide_parameters=True,
        paramstyle="named",  # dict parameters on both dialects for the raw hot path
        **kwargs,
    )
    sync = "FULL" if synchronous == "full" else "NORMAL"

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: DBAPIConnection, _record: ConnectionPoolEntry) -> None:
        # The driver must not open transactions itself: we emit BEGIN (IMMEDIATE).
        dbapi_conn.isolation_level = None
        cursor = dbapi_conn.cursor()
        try:
            if not in_memory and not read_only:
                cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute(f"PRAGMA synchronous={sync}")
            cursor.execute("PRAGMA foreign_keys=ON")
        finally:
            cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        immediate = conn.get_execution_options().get(_WRITE, False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")

    return engine


POSTGRES_EXTRA_HINT = "pip install 'flower[postgres]'"


def _postgres_engine(url: URL, options: SqlOptions) -> Engine:
    _quiet_psycopg_lost_connections()
    try:
        return sa.create_engine(
            url,
            pool_pre_ping=True,
            pool_size=options.pool_size,
            connect_args={"connect_timeout": options.connect_timeout},
            echo=options.echo,
            hide_parameters=True,
        )
    except ImportError as exc:  # SQLAlchemy imports the driver when it builds the engine
        if not (exc.name or "").startswith("psycopg"):
            raise
        raise StoreUnavailableError(
            _("{url}: the postgres backend needs psycopg, which is not installed: {hint}").format(
                url=shown(url), hint=POSTGRES_EXTRA_HINT
            )
        ) from None


def open_database(
    url: str,
    options: SqlOptions | None = None,
    synchronous: str = "normal",
    *,
    read_only: bool = False,
) -> Database:
    """Build the engine for ``url`` and check that the database answers; ``read_only``
    opens an existing SQLite file read-only and creates nothing."""
    options = options or SqlOptions()
    parsed = parse_url(url)
    dialect = dialect_of(parsed)
    if dialect == "sqlite":
        engine = _sqlite_engine(parsed, options, synchronous, read_only)
    else:
        engine = _postgres_engine(parsed, options)
    db = Database(engine, parsed, dialect, options.busy_timeout)
    # Reading the catalogue makes SQLite look at the file header: garbage is reported
    # here, before anything could write to it.
    probe = "SELECT count(*) FROM sqlite_master" if dialect == "sqlite" else "SELECT 1"
    for attempt in (1, 2):
        try:
            with engine.connect() as conn:
                conn.exec_driver_sql(probe).scalar()
            if dialect == "sqlite" and not read_only:
                _refuse_damaged_file(db)
            return db
        except DBAPIError as exc:
            if attempt == 1 and exc.connection_invalidated:
                _warn_lost_connection()  # terminated as it opened: once more, on a new one
                continue
            engine.dispose()
            raise db.translate(exc) from None
        except Exception as exc:  # the connect hook raises the driver's error unwrapped
            engine.dispose()
            if type(exc).__module__.startswith(("sqlite3", "psycopg")):
                raise db.translate(exc) from None
            raise
    raise AssertionError("unreachable")


def _refuse_damaged_file(db: Database) -> None:
    """Before a process writes to a SQLite file: refuse one an earlier run found damaged
    (its marker), and one ``integrity_check`` finds damaged now (up to
    :data:`QUICK_CHECK_MAX_BYTES`)."""
    path = db.sqlite_path
    if not path or path == ":memory:":
        return
    why = marked_damaged(path)
    if why is None:
        size = sum(os.stat(f).st_size for f in (path, path + "-wal") if os.path.exists(f))
        if size <= QUICK_CHECK_MAX_BYTES:
            why = db.check_damage(thorough=True)
        else:  # the small sessions table and its key indexes, at least
            why = db.check_damage(thorough=True, table="flower_sessions")
    if why is not None:
        error = db.found_damaged(why)
        db.close()
        raise error


def now_ms(clock: Callable[[], float] = time.time) -> int:
    return int(clock() * 1000)
