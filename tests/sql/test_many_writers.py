"""Eight processes writing at once is normal use: nothing lost, doubled or reordered."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest

from flower.core.config import SessionsConfig, Settings
from flower.core.records import SessionKey
from flower.stores.open import open_session_store
from tests.sql.conftest import migrated

WRITERS = 8
BATCHES = 25


def _writer(url: str, backend: str, proc: int, shared: bool, errors: multiprocessing.Queue) -> None:
    try:
        settings = Settings(sessions=SessionsConfig(backend=backend))
        key = SessionKey("proj", "shared" if shared else f"own-{proc}")
        with open_session_store(url, settings=settings) as store:
            for i in range(BATCHES):
                batch = [
                    {"type": "user", "uuid": f"{proc}-{i}-u", "proc": proc, "i": i},
                    {"type": "progress", "proc": proc, "i": i},  # no uuid: always appended
                ]
                store.append(key, batch)
                if i % 5 == 0:
                    store.append(key, batch[:1])  # the SDK retrying a batch: adds nothing
    except BaseException as exc:
        errors.put(f"writer {proc}: {type(exc).__name__}: {exc}")
        raise SystemExit(1) from None


def run_writers(url: str, backend: str, shared: bool) -> None:
    ctx = multiprocessing.get_context("fork")
    errors = ctx.Queue()
    procs = [
        ctx.Process(target=_writer, args=(url, backend, p, shared, errors)) for p in range(WRITERS)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    reported = [errors.get() for _ in range(errors.qsize())] if not errors.empty() else []
    assert reported == []
    assert [p.exitcode for p in procs] == [0] * WRITERS


def check_transcripts(url: str, backend: str, shared: bool) -> None:
    settings = Settings(sessions=SessionsConfig(backend=backend))
    with open_session_store(url, settings=settings) as store:
        keys = (
            [SessionKey("proj", "shared")]
            if shared
            else [SessionKey("proj", f"own-{p}") for p in range(WRITERS)]
        )
        loaded = [e for key in keys for e in store.load(key) or []]
        if not shared:
            assert len(store.list_sessions("proj")) == WRITERS
    assert len(loaded) == WRITERS * BATCHES * 2
    uuids = [e["uuid"] for e in loaded if "uuid" in e]
    assert len(uuids) == len(set(uuids)) == WRITERS * BATCHES
    for proc in range(WRITERS):
        mine = [(e["type"], e["i"]) for e in loaded if e["proc"] == proc]
        expected = [(t, i) for i in range(BATCHES) for t in ("user", "progress")]
        assert mine == expected, f"writer {proc}'s entries are out of order or missing"


@pytest.mark.parametrize("shared", [True, False], ids=["one-session", "own-sessions"])
def test_eight_processes_on_one_fresh_sqlite_file(tmp_path: Path, shared: bool) -> None:
    # No file yet: the writers also race to create and migrate it.
    url = f"sqlite:///{tmp_path}/sessions.db"
    run_writers(url, "sqlite", shared)
    check_transcripts(url, "sqlite", shared)


@pytest.mark.parametrize("shared", [True, False], ids=["one-session", "own-sessions"])
def test_eight_processes_on_postgres(pg_url: str, shared: bool) -> None:
    url = migrated(pg_url)
    run_writers(url, "postgres", shared)
    check_transcripts(url, "postgres", shared)
