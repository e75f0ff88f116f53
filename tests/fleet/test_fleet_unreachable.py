"""Which database errors a worker waits out inside a task's step (a server restarting)
and which end the task at once (a refusal, a damaged file, a lost lease)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import psycopg
import sqlalchemy as sa
from psycopg import errors

from flower.core.errors import StoreDamagedError, StoreUnavailableError
from flower.core.lease import LeaseLostError
from flower.fleet.outage import unreachable


def _chained(outer: BaseException, inner: BaseException) -> BaseException:
    try:
        try:
            raise inner
        except BaseException as exc:
            raise outer from exc
    except BaseException as got:
        return got


def _locked(tmp_path: Path) -> sqlite3.OperationalError:
    """The error SQLite gives a writer while another holds the file's write lock."""
    path = tmp_path / "locked.sqlite"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    writer = sqlite3.connect(path, timeout=0, isolation_level=None)
    try:
        writer.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as exc:
        return exc
    finally:
        writer.close()
        holder.close()
    raise AssertionError("the second writer was not refused")


def _unopenable(tmp_path: Path) -> sqlite3.OperationalError:
    try:
        sqlite3.connect(tmp_path / "no-such-folder" / "x.sqlite")
    except sqlite3.OperationalError as exc:
        return exc
    raise AssertionError("a file in a missing folder was opened")


def test_a_cut_or_refused_connection_is_waited_out(tmp_path: Path) -> None:
    refused = psycopg.OperationalError("connection failed: Connection refused")
    assert unreachable(refused)
    assert unreachable(errors.AdminShutdown("terminating connection"))  # 57P01
    wrapped = sa.exc.OperationalError("SELECT 1", {}, refused)
    assert unreachable(_chained(StoreUnavailableError("PostgreSQL at h:1: down"), wrapped))
    assert unreachable(_locked(tmp_path))


def test_a_refusal_or_damage_ends_the_task(tmp_path: Path) -> None:
    assert not unreachable(errors.InvalidPassword("password authentication failed"))
    assert not unreachable(errors.InvalidCatalogName("database x does not exist"))
    assert not unreachable(_unopenable(tmp_path))
    locked = _locked(tmp_path)
    assert not unreachable(_chained(StoreDamagedError("damaged"), locked))
    assert not unreachable(LeaseLostError("-p", 3))
    assert not unreachable(ValueError("not a database error"))
