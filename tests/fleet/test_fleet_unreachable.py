"""Which database errors a worker waits out inside a task's step (a server restarting)
and which end the task at once (a refusal, a damaged file, a lost lease)."""

from __future__ import annotations

import sqlite3

import psycopg
import sqlalchemy as sa
from psycopg import errors

from flower.core.errors import StoreDamagedError, StoreUnavailableError
from flower.core.lease import LeaseLostError
from flower.fleet.worker import _unreachable


def _chained(outer: BaseException, inner: BaseException) -> BaseException:
    try:
        try:
            raise inner
        except BaseException as exc:
            raise outer from exc
    except BaseException as got:
        return got


def test_a_cut_or_refused_connection_is_waited_out() -> None:
    refused = psycopg.OperationalError("connection failed: Connection refused")
    assert _unreachable(refused)
    assert _unreachable(errors.AdminShutdown("terminating connection"))  # 57P01
    wrapped = sa.exc.OperationalError("SELECT 1", {}, refused)
    assert _unreachable(_chained(StoreUnavailableError("PostgreSQL at h:1: down"), wrapped))
    assert _unreachable(sqlite3.OperationalError("database is locked"))


def test_a_refusal_or_damage_ends_the_task() -> None:
    assert not _unreachable(errors.InvalidPassword("password authentication failed"))
    assert not _unreachable(errors.InvalidCatalogName("database x does not exist"))
    assert not _unreachable(sqlite3.OperationalError("unable to open database file"))
    locked = sqlite3.OperationalError("database is locked")
    assert not _unreachable(_chained(StoreDamagedError("damaged"), locked))
    assert not _unreachable(LeaseLostError("-p", 3))
    assert not _unreachable(ValueError("not a database error"))
