"""How cost grows, for flower's sqlite, jsonfs and postgres stores.

- session size: ``load`` and ``last_usage`` on sessions of 1k, 10k, 100k entries;
- session count: ``list_sessions`` over 10 and 10,000 sessions;
- concurrency: 1, 4 and 8 writer processes, each appending to its own session;
- flatness: per-turn append latency over one long session (turn 100 vs turn N).

Populating is not timed and may use bigger batches (and, for jsonfs, no fsync):
only the operation named is measured.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.compare import check_equal, window_ms
from bench.skipped import Skipped
from bench.systems import PROJECT, _PrivateSchema, open_flower, postgres_available
from bench.workload import Entry, make_turns

BACKENDS = ("sqlite", "jsonfs", "postgres")


@dataclass(frozen=True)
class Plan:
    entry_sizes: tuple[int, ...]
    session_counts: tuple[int, ...]
    writers: tuple[int, ...]
    turns_per_writer: int
    flat_turns: int
    flat_backends: tuple[str, ...]
    repeats: int


QUICK = Plan((1_000, 10_000), (10, 10_000), (1, 4, 8), 50, 10_000, ("sqlite",), 3)
FULL = Plan((1_000, 10_000, 100_000), (10, 10_000), (1, 4, 8), 300, 10_000, BACKENDS, 5)


@contextlib.contextmanager
def backend_url(backend: str) -> Iterator[str]:
    """A fresh, empty store location for ``backend``; removed afterwards."""
    if backend == "postgres":
        schema = _PrivateSchema()
        try:
            yield schema.url
        finally:
            schema.drop()
        return
    folder = Path(tempfile.mkdtemp(prefix="bench-growth-"))
    try:
        yield f"sqlite:///{folder}/sessions.db" if backend == "sqlite" else f"jsonfs://{folder}/t"
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _key(session: str) -> Any:
    from flower.core.records import SessionKey

    return SessionKey(PROJECT, session)


def _sid(n: int) -> str:
    return f"00000000-0000-4000-8000-{n:012d}"


def _timed(call: Callable[[], Any], repeats: int) -> float:
    """Median wall time of ``call`` in ms."""
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        call()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples) * 1000


def _no_fsync(store: Any) -> None:
    if hasattr(store, "fsync"):  # jsonfs: populating need not survive power loss
        store.fsync = False


def session_size(backend: str, sizes: tuple[int, ...], repeats: int) -> list[dict[str, Any]]:
    out = []
    batches = make_turns(max(sizes) // 2, seed=11)
    for size in sizes:
        with backend_url(backend) as url:
            store = open_flower(url)
            try:
                _no_fsync(store)
                key = _key(_sid(size))
                chunk = 100
                for i in range(0, size // 2, chunk):
                    store.append(
                        key, [e for b in batches[i : min(i + chunk, size // 2)] for e in b]
                    )
                expected = [e for b in batches[: size // 2] for e in b]
                check_equal(store.load(key) or [], expected)
                out.append(
                    {
                        "backend": backend,
                        "entries": size,
                        "load_ms": _timed(lambda s=store, k=key: s.load(k), repeats),
                        "last_usage_ms": _timed(
                            lambda s=store, k=key: s.last_usage(k), repeats * 3
                        ),
                    }
                )
            finally:
                store.close()
    return out


_SMALL_TURN: list[Entry] = make_turns(1, seed=3)[0]


def session_count(backend: str, counts: tuple[int, ...], repeats: int) -> list[dict[str, Any]]:
    out = []
    for count in counts:
        with backend_url(backend) as url:
            store = open_flower(url)
            try:
                _no_fsync(store)

                def add(n: int, store: Any = store) -> None:
                    sid = _sid(n)
                    turn = [{**e, "sessionId": sid} for e in _SMALL_TURN]
                    turn[1] = {**turn[1], "message": {"role": "user", "content": "ok"}}
                    store.append(_key(sid), turn)

                # threads overlap the server's commit waits when populating (untimed)
                with ThreadPoolExecutor(4 if backend == "postgres" else 1) as pool:
                    list(pool.map(add, range(count)))
                found = store.list_sessions(PROJECT)
                if len(found) != count:
                    raise AssertionError(f"list_sessions found {len(found)} of {count} sessions")
                out.append(
                    {
                        "backend": backend,
                        "sessions": count,
                        "list_ms": _timed(lambda s=store: s.list_sessions(PROJECT), repeats),
                    }
                )
            finally:
                store.close()
    return out


def _writer(url: str, index: int, turns: int, ready: Any, go: Any, done: Any) -> None:
    store = open_flower(url)
    try:
        key = _key(_sid(index))
        batches = make_turns(turns, seed=100 + index)
        ready.put(index)
        go.wait()
        started = time.perf_counter()
        for batch in batches:
            store.append(key, batch)
        done.put((index, started, time.perf_counter()))
    finally:
        store.close()


def concurrency(backend: str, writers: tuple[int, ...], turns: int) -> list[dict[str, Any]]:
    """Aggregate durable turns/s of N processes, each appending to its own session."""
    ctx = multiprocessing.get_context("fork")  # children open their own stores
    out = []
    for n in writers:
        with backend_url(backend) as url:
            open_flower(url).close()  # create (or migrate) the schema once, up front
            ready, done, go = ctx.Queue(), ctx.Queue(), ctx.Event()
            procs = [
                ctx.Process(target=_writer, args=(url, i, turns, ready, go, done)) for i in range(n)
            ]
            for p in procs:
                p.start()
            for _ in procs:
                ready.get(timeout=120)
            go.set()
            spans = [done.get(timeout=600) for _ in procs]
            for p in procs:
                p.join(timeout=60)
            failed = [p.exitcode for p in procs if p.exitcode != 0]
            if failed:
                raise RuntimeError(f"{len(failed)} writer process(es) failed: {failed}")
            wall = max(s[2] for s in spans) - min(s[1] for s in spans)
            store = open_flower(url)
            try:
                for i in range(n):
                    expected = [e for b in make_turns(turns, seed=100 + i) for e in b]
                    check_equal(store.load(_key(_sid(i))) or [], expected)
            finally:
                store.close()
            out.append(
                {
                    "backend": backend,
                    "writers": n,
                    "turns": n * turns,
                    "turns_per_s": n * turns / wall,
                }
            )
    return out


def flatness(backend: str, turns: int) -> dict[str, Any]:
    """Per-turn latencies over one long session, one durable append per turn."""
    batches = make_turns(turns, seed=13)
    with backend_url(backend) as url:
        store = open_flower(url)
        try:
            key = _key(_sid(1))
            latencies = []
            for batch in batches:
                started = time.perf_counter()
                store.append(key, batch)
                latencies.append(time.perf_counter() - started)
        finally:
            store.close()
    marks = sorted({t for t in (100, 1_000, turns) if t <= turns})
    return {
        "backend": backend,
        "turns": turns,
        "at": {str(t): window_ms(latencies, t) for t in marks},
        "flat_ratio": window_ms(latencies, turns) / window_ms(latencies, 100),
        "latencies_ms": [round(x * 1000, 4) for x in latencies],
    }


def run(plan: Plan, progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    say = progress or (lambda _m: None)
    result: dict[str, Any] = {"size": [], "count": [], "writers": [], "flat": [], "skipped": {}}
    pg_missing = postgres_available()
    for backend in BACKENDS:
        if backend == "postgres" and pg_missing:
            result["skipped"][backend] = pg_missing
            say(f"growth: postgres skipped ({pg_missing})")
            continue
        try:
            result["size"] += session_size(backend, plan.entry_sizes, plan.repeats)
            say(f"growth: {backend} session sizes done")
            result["count"] += session_count(backend, plan.session_counts, plan.repeats)
            say(f"growth: {backend} session counts done")
            result["writers"] += concurrency(backend, plan.writers, plan.turns_per_writer)
            say(f"growth: {backend} concurrent writers done")
            if backend in plan.flat_backends:
                result["flat"].append(flatness(backend, plan.flat_turns))
                say(f"growth: {backend} flatness done")
        except Skipped as skip:
            result["skipped"][backend] = skip.reason
    return result
