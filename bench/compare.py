"""The transcript suite: every system on one seeded conversation.

Per system: a verification pass (append every turn, load, deep-compare; peak traced
memory and bytes on disk are taken here, untimed), then ``runs`` timed passes,
round-robin over systems so machine noise drifts evenly. A system whose load is not
deep-equal to what was appended is FAILED and never timed. A ratio to a baseline is
the median over rounds of the round's own ratio (:func:`paired_ratio`), with its
min and max.
"""

from __future__ import annotations

import gc
import shutil
import statistics
import tempfile
import time
import tracemalloc
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.skipped import Skipped
from bench.systems import SPECS, Spec, System, folder_bytes
from bench.workload import Entry, make_turns

LATENCY_WINDOW = 20
"""Per-turn latency at turn T is the median of the turns around T (T-10..T+9)."""
LOADS_PER_RUN = 3
"""A run's load figure is the median of this many loads: one load of a few thousand
entries swings with whether the garbage collector happens to run during it."""


class NotEqual(AssertionError):
    """The loaded transcript differs from what was appended."""


def check_equal(loaded: list[Entry], expected: list[Entry]) -> None:
    if loaded == expected:
        return
    same = sum(1 for a, b in zip(loaded, expected, strict=False) if a == b)
    first = next(
        (i for i, (a, b) in enumerate(zip(loaded, expected, strict=False)) if a != b),
        min(len(loaded), len(expected)),
    )
    raise NotEqual(
        f"loaded {len(loaded)} entries, expected {len(expected)}; "
        f"{same} equal in position; first difference at entry {first}"
    )


@dataclass
class Sample:
    turns_per_s: float
    lat_100_ms: float
    lat_n_ms: float
    load_ms: float


@dataclass
class Outcome:
    spec: Spec
    turns: int
    status: str = "ok"
    """``ok``, ``FAILED`` or ``skipped``."""
    detail: str = ""
    samples: list[Sample] = field(default_factory=list)
    bytes_on_disk: int = 0
    peak_mib: float = 0.0

    def values(self, name: str) -> list[float]:
        """One figure of every timed run, in the order of the rounds."""
        return [getattr(s, name) for s in self.samples]

    def stat(self, name: str) -> tuple[float, float, float]:
        """(median, min, max) of one figure over the timed runs."""
        values = self.values(name)
        return statistics.median(values), min(values), max(values)


def window_ms(latencies: list[float], turn: int) -> float:
    """Median latency (ms) of the turns around ``turn`` (1-based), clipped to the run."""
    end = min(len(latencies), max(turn + LATENCY_WINDOW // 2, LATENCY_WINDOW))
    start = max(0, end - LATENCY_WINDOW)
    return statistics.median(latencies[start:end]) * 1000


def native_batches(system: System, batches: list[list[Entry]]) -> list[Any]:
    """The batches in the form ``system.append`` takes, converted before any timing.

    A peer that stores its own format (Responses API items) has a ``prepare`` hook:
    its users hold that format already, so converting flower's entries is the bench's
    work, not the peer's, and is never timed.
    """
    prepare = getattr(system, "prepare", None)
    return [prepare(batch) for batch in batches] if callable(prepare) else batches


def as_entries(system: System, loaded: Any) -> list[Entry]:
    """What ``system.load`` returned, converted back to entries (untimed) for the check."""
    convert = getattr(system, "to_entries", None)
    return convert(loaded) if callable(convert) else loaded


def _server_bytes(system: System) -> int | None:
    """The size a server-side system reports (its schema), taken while it is open."""
    measure = getattr(system, "bytes_on_disk", None)
    return int(measure()) if callable(measure) else None


def verify(spec: Spec, batches: list[list[Entry]], expected: list[Entry], base: Path) -> Outcome:
    outcome = Outcome(spec, len(batches))
    folder = Path(tempfile.mkdtemp(prefix="bench-", dir=base))
    system: System | None = None
    server_bytes: int | None = None
    try:
        try:
            system = spec.make(folder)
        except Skipped as skip:
            outcome.status, outcome.detail = "skipped", f"{skip.reason}; {skip.hint}".strip("; ")
            return outcome
        native = native_batches(system, batches)
        gc.collect()
        tracemalloc.start()
        try:
            for batch in native:
                system.append(batch)
            loaded = system.load()
            outcome.peak_mib = tracemalloc.get_traced_memory()[1] / 2**20
        finally:
            tracemalloc.stop()
        check_equal(as_entries(system, loaded), expected)
        server_bytes = _server_bytes(system)
    except Exception as exc:
        outcome.status, outcome.detail = "FAILED", f"{type(exc).__name__}: {exc}"
    finally:
        if system is not None:
            try:
                system.close()
            except Exception as exc:
                if outcome.status == "ok":
                    outcome.status, outcome.detail = "FAILED", f"close: {exc}"
        if outcome.status == "ok":
            # Files are measured once closed: SQLite folds its WAL (up to 4 MiB that
            # a checkpoint would give back) into the database then, as a store at rest.
            outcome.bytes_on_disk = folder_bytes(folder) if server_bytes is None else server_bytes
        shutil.rmtree(folder, ignore_errors=True)
    return outcome


def timed_run(spec: Spec, batches: list[list[Entry]], expected: list[Entry], base: Path) -> Sample:
    folder = Path(tempfile.mkdtemp(prefix="bench-", dir=base))
    try:
        system = spec.make(folder)
        try:
            native = native_batches(system, batches)
            latencies: list[float] = []
            clock = time.perf_counter
            for batch in native:
                started = clock()
                system.append(batch)
                latencies.append(clock() - started)
            loads = []
            for _ in range(LOADS_PER_RUN):
                started = clock()
                loaded = system.load()
                loads.append(clock() - started)
            loading = statistics.median(loads)
        finally:
            system.close()
        check_equal(as_entries(system, loaded), expected)
        turns = len(batches)
        return Sample(
            turns_per_s=turns / sum(latencies),
            lat_100_ms=window_ms(latencies, 100),
            lat_n_ms=window_ms(latencies, turns),
            load_ms=loading * 1000,
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def run(
    turns: int,
    runs: int,
    *,
    seed: int = 7,
    specs: list[Spec] | None = None,
    base: Path | None = None,
    progress: Any = None,
) -> list[Outcome]:
    base = base or Path(tempfile.gettempdir())
    all_batches = make_turns(turns, seed)
    specs = list(SPECS if specs is None else specs)

    def workload(spec: Spec) -> tuple[list[list[Entry]], list[Entry]]:
        batches = all_batches[: spec.max_turns] if spec.max_turns else all_batches
        return batches, [entry for batch in batches for entry in batch]

    outcomes = []
    for spec in specs:
        batches, expected = workload(spec)
        outcome = verify(spec, batches, expected, base)
        if progress:
            progress(f"verified {spec.name}: {outcome.status} {outcome.detail}".rstrip())
        outcomes.append(outcome)
    for _ in range(runs):  # round-robin, so machine load drifts evenly over systems
        for outcome in outcomes:
            if outcome.status != "ok":
                continue
            batches, expected = workload(outcome.spec)
            try:
                outcome.samples.append(timed_run(outcome.spec, batches, expected, base))
            except Exception as exc:
                outcome.status, outcome.detail = "FAILED", f"{type(exc).__name__}: {exc}"
                outcome.samples.clear()
        if progress:
            progress(f"timed run {_ + 1}/{runs}")
    return outcomes


FIGURES = ("turns_per_s", "lat_100_ms", "lat_n_ms", "load_ms")


def paired_ratio(values: list[float], base: list[float]) -> dict[str, float]:
    """Median, min and max over runs of each run's figure over its baseline's in the
    same round: the round-robin pairs them, so a slow spell of the machine moves both
    sides of a ratio instead of one median."""
    ratios = [v / b for v, b in zip(values, base, strict=True) if b > 0]
    return {"median": statistics.median(ratios), "min": min(ratios), "max": max(ratios)}


def rows(outcomes: list[Outcome]) -> list[dict[str, Any]]:
    """One JSON-ready row per system, with ratios to its raw baseline from this run."""
    by_name = {o.spec.name: o for o in outcomes}
    table: list[dict[str, Any]] = []
    for o in outcomes:
        row: dict[str, Any] = {
            "system": o.spec.name,
            "kind": o.spec.kind,
            "durability": o.spec.durability,
            "turns": o.turns,
            "status": o.status,
            "detail": o.detail,
        }
        if o.status == "ok" and o.samples:
            row["runs"] = len(o.samples)
            for name in FIGURES:
                row[name] = dict(zip(("median", "min", "max"), o.stat(name), strict=True))
                row[name]["runs"] = o.values(name)
            row["bytes_on_disk"] = o.bytes_on_disk
            row["peak_mib"] = o.peak_mib
            base = by_name.get(o.spec.baseline or "")
            if base is not None and base.status == "ok" and base.samples and base.turns == o.turns:
                row["baseline"] = base.spec.name
                spread = {name: paired_ratio(o.values(name), base.values(name)) for name in FIGURES}
                row["ratio_range"] = spread
                row["ratio"] = {name: cell["median"] for name, cell in spread.items()}
                row["ratio"]["bytes_on_disk"] = o.bytes_on_disk / max(1, base.bytes_on_disk)
                row["ratio"]["peak_mib"] = o.peak_mib / max(1e-9, base.peak_mib)
        table.append(row)
    return table
