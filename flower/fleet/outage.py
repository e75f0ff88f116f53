"""What the fleet waits out: a database that cannot be reached now (a server restarting,
a connection cut, a SQLite file locked too long), told apart from what no wait cures (a
refusal, a damaged file, a lost lease).

The worker waits such an outage out around its own calls (``Worker._patiently``), and a
wake's step waits out its session store's (:mod:`flower.fleet.wake`): an error raised
out of a DBOS step or workflow would be kept by DBOS as its outcome for good.
"""

from __future__ import annotations

import contextlib

from flower.core.lease import LeaseLostError


def unreachable(exc: BaseException) -> bool:
    """Whether ``exc`` is a database that cannot be reached now, which a wait may cure:
    a Postgres connection that failed or was cut (no answer, or SQLSTATE class 08 or
    57: a restart, a shutdown), a SQLite file locked too long (SQLITE_BUSY or
    SQLITE_LOCKED, by code: not by SQLite's words). Not a refusal (bad
    credentials, no such database), a damaged file, or a lost lease."""
    import sqlite3

    from flower.core.errors import StoreDamagedError, sqlite_locked

    postgres: tuple[type[BaseException], ...] = ()
    with contextlib.suppress(ImportError):  # the postgres extra
        import psycopg

        postgres = (psycopg.OperationalError, psycopg.InterfaceError)
    seen: BaseException | None = exc
    met: set[int] = set()  # a chain may loop back on itself
    while seen is not None and id(seen) not in met:
        met.add(id(seen))
        if isinstance(seen, StoreDamagedError | LeaseLostError):
            return False
        orig = getattr(seen, "orig", None) or seen
        if isinstance(orig, postgres):
            sqlstate = getattr(orig, "sqlstate", None) or ""
            return not sqlstate or sqlstate.startswith(("08", "57"))
        if isinstance(orig, sqlite3.OperationalError):
            return sqlite_locked(orig)
        seen = seen.__cause__ or seen.__context__
    return False


__all__ = ["unreachable"]
