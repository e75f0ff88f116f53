"""Durable appends, one turn per call, then a full load: flower's stores vs raw drivers.

Run: ``python -m bench.transcript_bench`` (``--help`` for options). Every system
gets the same seeded workload; a system whose loaded transcript is not deep-equal to
what was appended is reported FAILED and not timed. Figures are medians of ``--runs``
(a ratio: the median of each round's own ratio);
within a run the load is timed ``LOADS_PER_RUN`` times and its median kept, since a
single 4,000-entry load of ~40 ms swings with when the garbage collector happens to run.
Raw systems use msgspec, as flower does, so ratios measure the storage layer only.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import msgspec

if __package__ in (None, ""):  # run as a script: make `bench` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.workload import SESSION_ID, Entry, make_turns

LOADS_PER_RUN = 5

PROJECT = "-home-bench-proj"
_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder().decode


class System(Protocol):
    """One store under test, open on one session.

    A system that stores another format may also have ``prepare(batch)`` (entries to
    what ``append`` takes) and ``to_entries(loaded)`` (what ``load`` returns, back to
    entries); :mod:`bench.compare` calls both outside the timed region.
    """

    def append(self, batch: Any) -> None: ...
    def load(self) -> Any: ...
    def close(self) -> None: ...


class FlowerSystem:
    def __init__(self, url: str, synchronous: str = "normal") -> None:
        from flower.core.config import SessionsConfig, Settings
        from flower.core.records import SessionKey
        from flower.stores.open import open_session_store

        settings = Settings(sessions=SessionsConfig(synchronous=synchronous))  # type: ignore[arg-type]
        self.store = open_session_store(url, settings=settings)
        self.key = SessionKey(PROJECT, SESSION_ID)

    def append(self, batch: list[Entry]) -> None:
        self.store.append(self.key, batch)

    def load(self) -> list[Entry]:
        return self.store.load(self.key) or []

    def close(self) -> None:
        self.store.close()


class RawSqlite:
    """What a careful hand-written sqlite3 store does: WAL, one transaction per call."""

    def __init__(self, path: Path, synchronous: str) -> None:
        self.db = sqlite3.connect(path, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute(f"PRAGMA synchronous={synchronous}")
        self.db.execute(
            "CREATE TABLE entries (id INTEGER PRIMARY KEY, session_id TEXT NOT NULL, "
            "uuid TEXT, payload TEXT NOT NULL)"
        )
        self.db.execute("CREATE INDEX entries_session ON entries (session_id, id)")

    def append(self, batch: list[Entry]) -> None:
        rows = [(SESSION_ID, e.get("uuid"), _encode(e).decode()) for e in batch]
        self.db.execute("BEGIN")
        self.db.executemany(
            "INSERT INTO entries (session_id, uuid, payload) VALUES (?, ?, ?)", rows
        )
        self.db.execute("COMMIT")

    def load(self) -> list[Entry]:
        cur = self.db.execute(
            "SELECT payload FROM entries WHERE session_id = ? ORDER BY id", (SESSION_ID,)
        )
        return [_decode(payload) for (payload,) in cur]

    def close(self) -> None:
        self.db.close()


class RawJsonl:
    """Append lines to one file and fsync it on every call."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def append(self, batch: list[Entry]) -> None:
        os.write(self.fd, b"".join(_encode(e) + b"\n" for e in batch))
        os.fsync(self.fd)

    def load(self) -> list[Entry]:
        data = self.path.read_bytes()
        return [_decode(line) for line in data.split(b"\n") if line]

    def close(self) -> None:
        os.close(self.fd)


@dataclass(frozen=True)
class Spec:
    name: str
    durability: str
    """``normal``: survives a killed process; ``full``: survives power loss (fsync)."""
    make: Callable[[Path], System]
    baseline: str | None
    """The raw sqlite3 system at the same durability, for the ratio columns."""


SPECS = [
    Spec(
        "flower sqlite (normal)",
        "normal",
        lambda d: FlowerSystem(f"sqlite:///{d}/sessions.db", "normal"),
        "raw sqlite3 (normal)",
    ),
    Spec(
        "flower sqlite (full)",
        "full",
        lambda d: FlowerSystem(f"sqlite:///{d}/sessions.db", "full"),
        "raw sqlite3 (full)",
    ),
    Spec(
        "flower jsonfs",
        "full",
        lambda d: FlowerSystem(f"jsonfs://{d}/transcripts"),
        "raw sqlite3 (full)",
    ),
    Spec("raw sqlite3 (normal)", "normal", lambda d: RawSqlite(d / "raw.db", "NORMAL"), None),
    Spec("raw sqlite3 (full)", "full", lambda d: RawSqlite(d / "raw.db", "FULL"), None),
    Spec("raw jsonl + fsync", "full", lambda d: RawJsonl(d / "raw.jsonl"), "raw sqlite3 (full)"),
]


@dataclass
class Result:
    spec: Spec
    append_s: list[float] = field(default_factory=list)
    load_s: list[float] = field(default_factory=list)
    error: str | None = None

    def turns_per_s(self, turns: int) -> float:
        return turns / statistics.median(self.append_s)

    def load_ms(self) -> float:
        return statistics.median(self.load_s) * 1000


def run_once(
    spec: Spec, batches: list[list[Entry]], expected: list[Entry], base: Path
) -> tuple[float, float]:
    folder = Path(tempfile.mkdtemp(prefix="bench-", dir=base))
    try:
        system = spec.make(folder)
        try:
            started = time.perf_counter()
            for batch in batches:
                system.append(batch)
            appended = time.perf_counter() - started
            load_times = []
            for _ in range(LOADS_PER_RUN):
                started = time.perf_counter()
                loaded = system.load()
                load_times.append(time.perf_counter() - started)
            loading = statistics.median(load_times)
        finally:
            system.close()
        if loaded != expected:
            same = sum(1 for a, b in zip(loaded, expected, strict=False) if a == b)
            raise AssertionError(
                f"loaded {len(loaded)} entries, expected {len(expected)}; {same} equal in position"
            )
        return appended, loading
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def run(turns: int, runs: int, seed: int, names: list[str] | None, base: Path) -> list[Result]:
    batches = make_turns(turns, seed)
    expected = [entry for batch in batches for entry in batch]
    specs = [s for s in SPECS if names is None or s.name in names]
    results = {spec.name: Result(spec) for spec in specs}
    for _ in range(runs):  # round-robin, so machine load drifts evenly over systems
        for spec in specs:
            result = results[spec.name]
            if result.error:
                continue
            try:
                appended, loading = run_once(spec, batches, expected, base)
            except Exception as exc:
                result.error = f"{type(exc).__name__}: {exc}"
                continue
            result.append_s.append(appended)
            result.load_s.append(loading)
    return list(results.values())


def rows(results: list[Result], turns: int) -> list[dict[str, Any]]:
    by_name = {r.spec.name: r for r in results}
    out: list[dict[str, Any]] = []
    for r in results:
        row: dict[str, Any] = {"system": r.spec.name, "durability": r.spec.durability}
        if r.error:
            out.append({**row, "status": "FAILED", "error": r.error})
            continue
        row.update(status="ok", turns_per_s=r.turns_per_s(turns), load_ms=r.load_ms())
        base = by_name.get(r.spec.baseline or "")
        if base is not None and not base.error:
            row["baseline"] = base.spec.name
            # paired round by round (the systems take turns), then the median
            row["append_ratio"] = statistics.median(
                b / a for a, b in zip(r.append_s, base.append_s, strict=True)
            )
            row["load_ratio"] = statistics.median(
                a / b for a, b in zip(r.load_s, base.load_s, strict=True)
            )
        out.append(row)
    return out


def print_table(table: list[dict[str, Any]], turns: int, runs: int) -> None:
    title = f"{turns} turns ({2 * turns} entries), one durable append per turn, median of {runs}"
    headers = ["system", "durability", "turns/s", "load ms", "append ×raw", "load ×raw", "vs"]
    body = []
    for row in table:
        if row["status"] == "FAILED":
            body.append([row["system"], row["durability"], "FAILED", row["error"], "", "", ""])
            continue
        body.append(
            [
                row["system"],
                row["durability"],
                f"{row['turns_per_s']:,.0f}",
                f"{row['load_ms']:.1f}",
                f"{row['append_ratio']:.2f}" if "append_ratio" in row else "",
                f"{row['load_ratio']:.2f}" if "load_ratio" in row else "",
                row.get("baseline", ""),
            ]
        )
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        print(title)
        widths = [max(len(str(x)) for x in col) for col in zip(headers, *body, strict=True)]
        for line in [headers, *body]:
            print("  ".join(str(x).ljust(w) for x, w in zip(line, widths, strict=True)))
        return
    table_ = Table(title=title)
    for header in headers:
        table_.add_column(header, justify="left" if header in ("system", "vs") else "right")
    for line in body:
        table_.add_row(*line)
    Console(width=max(140, shutil.get_terminal_size().columns)).print(table_)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--system", action="append", help="run only this system (repeatable)")
    parser.add_argument(
        "--dir", type=Path, default=None, help="where the stores live (default: the temp dir)"
    )
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args(argv)
    base = args.dir or Path(tempfile.gettempdir())
    base.mkdir(parents=True, exist_ok=True)
    results = run(args.turns, args.runs, args.seed, args.system, base)
    table = rows(results, args.turns)
    if args.json:
        print(msgspec.json.format(msgspec.json.encode(table)).decode())
    else:
        print_table(table, args.turns, args.runs)
    return 1 if any(row["status"] == "FAILED" for row in table) else 0


if __name__ == "__main__":
    raise SystemExit(main())
