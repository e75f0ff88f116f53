"""Every system the benchmarks compare, behind one small interface.

flower's stores and the raw baselines come from :mod:`bench.transcript_bench`; this
module adds flower on PostgreSQL, raw psycopg, and the peers (:mod:`bench.peers`).
A system that cannot run here (a peer not installed, no PostgreSQL server) is a
:class:`Skipped` with the reason and the command that fixes it, never a crash.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from bench import transcript_bench
from bench.skipped import Skipped
from bench.transcript_bench import PROJECT, FlowerSystem, RawJsonl, RawSqlite, System
from bench.workload import SESSION_ID, Entry

_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder().decode


def folder_bytes(folder: Path) -> int:
    """Bytes of every file under ``folder`` (what the system left on disk)."""
    total = 0
    for root, _dirs, files in os.walk(folder):
        for name in files:
            with contextlib.suppress(FileNotFoundError):
                total += os.path.getsize(os.path.join(root, name))
    return total


# --------------------------------------------------------------------------- postgres


def postgres_available() -> str | None:
    """``None`` when the test server answers, else why not."""
    try:
        import psycopg
    except ImportError:
        return "psycopg is not installed"
    from flower.testing.postgres import _libpq_dsn, server_url

    try:
        with psycopg.connect(_libpq_dsn(server_url()), connect_timeout=3):
            return None
    except psycopg.OperationalError as exc:
        return f"PostgreSQL at {server_url()} does not answer: {str(exc).strip()[:120]}"


def schema_bytes(url: str) -> int:
    """Total size (heap, indexes, TOAST) of the tables in the schema ``url`` uses."""
    import psycopg

    from flower.testing.postgres import _libpq_dsn

    with psycopg.connect(_libpq_dsn(url)) as conn:
        row = conn.execute(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = current_schema() AND c.relkind = 'r'"
        ).fetchone()
    return int(row[0]) if row else 0


class _PrivateSchema:
    """Owns a throwaway schema for the lifetime of one system."""

    def __init__(self) -> None:
        reason = postgres_available()
        if reason:
            raise Skipped(reason, 'pip install "psycopg[binary]>=3.1" and start PostgreSQL')
        from flower.testing.postgres import temporary_schema

        self._stack = contextlib.ExitStack()
        self.url = self._stack.enter_context(temporary_schema("flower_bench"))

    def bytes_on_disk(self) -> int:
        return schema_bytes(self.url)

    def drop(self) -> None:
        self._stack.close()


def open_flower(url: str, synchronous: str = "normal") -> Any:
    """A flower store on ``url``; a fresh Postgres schema is migrated on open."""
    from flower.core.config import SessionsConfig, Settings
    from flower.stores.open import open_session_store

    conf = SessionsConfig(synchronous=synchronous, auto_migrate=True)  # type: ignore[arg-type]
    return open_session_store(url, settings=Settings(sessions=conf))


class FlowerPostgres(FlowerSystem):
    def __init__(self) -> None:
        from flower.core.records import SessionKey

        self.schema = _PrivateSchema()
        try:
            self.store = open_flower(self.schema.url)
        except BaseException:
            self.schema.drop()
            raise
        self.key = SessionKey(PROJECT, SESSION_ID)

    def bytes_on_disk(self) -> int:
        return self.schema.bytes_on_disk()

    def close(self) -> None:
        try:
            super().close()
        finally:
            self.schema.drop()


class RawPsycopg:
    """flower's table shape by hand: one transaction per append, inserts + touch."""

    def __init__(self) -> None:
        import psycopg

        from flower.testing.postgres import _libpq_dsn

        self.schema = _PrivateSchema()
        try:
            self.conn = psycopg.connect(_libpq_dsn(self.schema.url), autocommit=True)
            self.conn.execute(
                "CREATE TABLE sessions (id BIGSERIAL PRIMARY KEY, session_id TEXT UNIQUE "
                "NOT NULL, mtime_ms BIGINT NOT NULL)"
            )
            self.conn.execute(
                "CREATE TABLE entries (seq BIGSERIAL PRIMARY KEY, session_pk BIGINT NOT NULL "
                "REFERENCES sessions (id) ON DELETE CASCADE, uuid TEXT, type TEXT NOT NULL, "
                "payload TEXT NOT NULL, UNIQUE (session_pk, uuid))"
            )
            self.pk = self.conn.execute(
                "INSERT INTO sessions (session_id, mtime_ms) VALUES (%s, 0) RETURNING id",
                (SESSION_ID,),
            ).fetchone()[0]
        except BaseException:
            self.schema.drop()
            raise

    def append(self, batch: list[Entry]) -> None:
        rows = [(self.pk, e.get("uuid"), e["type"], _encode(e).decode()) for e in batch]
        with self.conn.transaction(), self.conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO entries (session_pk, uuid, type, payload) VALUES (%s, %s, %s, %s)",
                rows,
            )
            cur.execute("UPDATE sessions SET mtime_ms = mtime_ms + 1 WHERE id = %s", (self.pk,))

    def load(self) -> list[Entry]:
        cur = self.conn.execute(
            "SELECT payload FROM entries WHERE session_pk = %s ORDER BY seq", (self.pk,)
        )
        return [_decode(payload) for (payload,) in cur]

    def bytes_on_disk(self) -> int:
        return self.schema.bytes_on_disk()

    def close(self) -> None:
        try:
            self.conn.close()
        finally:
            self.schema.drop()


# --------------------------------------------------------------------------- the roster


@dataclass(frozen=True)
class Spec(transcript_bench.Spec):
    """A system of the full comparison: the single-suite spec, plus its kind and limit."""

    kind: str = "flower"
    """``flower``, ``raw`` or ``peer``."""
    max_turns: int | None = None
    """Run at most this many turns (for systems whose cost grows with the square)."""


def _peer(name: str) -> Callable[[Path], System]:
    def make(folder: Path) -> System:
        from bench import peers

        return peers.make(name, folder)

    return make


RAW_NORMAL = "raw sqlite3 (normal)"
RAW_FULL = "raw sqlite3 (full)"
LANGGRAPH_MAX_TURNS = 500
RAW_FULL_SHORT = f"raw sqlite3 (full, {LANGGRAPH_MAX_TURNS} turns)"
"""LangGraph's baseline: a ratio compares runs of the same turns (a load of 500 turns
against one of 2,000 would read as LangGraph loading four times faster)."""

SPECS: list[Spec] = [
    Spec(
        "flower sqlite (normal)",
        "normal",
        lambda d: FlowerSystem(f"sqlite:///{d}/sessions.db", "normal"),
        RAW_NORMAL,
    ),
    Spec(
        "flower sqlite (full)",
        "full",
        lambda d: FlowerSystem(f"sqlite:///{d}/sessions.db", "full"),
        RAW_FULL,
    ),
    Spec("flower jsonfs", "full", lambda d: FlowerSystem(f"jsonfs://{d}/transcripts"), RAW_FULL),
    Spec("flower postgres", "server", lambda d: FlowerPostgres(), "raw psycopg"),
    Spec(RAW_NORMAL, "normal", lambda d: RawSqlite(d / "raw.db", "NORMAL"), None, "raw"),
    Spec(RAW_FULL, "full", lambda d: RawSqlite(d / "raw.db", "FULL"), None, "raw"),
    Spec(
        RAW_FULL_SHORT,
        "full",
        lambda d: RawSqlite(d / "raw.db", "FULL"),
        None,
        "raw",
        max_turns=LANGGRAPH_MAX_TURNS,
    ),
    Spec("raw jsonl + fsync", "full", lambda d: RawJsonl(d / "raw.jsonl"), RAW_FULL, "raw"),
    Spec("raw psycopg", "server", lambda d: RawPsycopg(), None, "raw"),
    Spec("openai-agents SQLiteSession", "full", _peer("agents-sqlite"), RAW_FULL, "peer"),
    Spec("openai-agents SQLAlchemySession", "full", _peer("agents-sqlalchemy"), RAW_FULL, "peer"),
    Spec(
        "langgraph SqliteSaver",
        "full",
        _peer("langgraph"),
        RAW_FULL_SHORT,
        "peer",
        max_turns=LANGGRAPH_MAX_TURNS,
    ),
]

BY_NAME = {spec.name: spec for spec in SPECS}

__all__ = [
    "BY_NAME",
    "PROJECT",
    "SPECS",
    "FlowerPostgres",
    "RawPsycopg",
    "Spec",
    "System",
    "folder_bytes",
    "postgres_available",
]


def describe(spec: Spec) -> dict[str, Any]:
    return {"name": spec.name, "durability": spec.durability, "kind": spec.kind}
