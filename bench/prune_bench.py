"""Cost of the pruning view: raw load vs pruned load, on sessions of 4,000 and 100,000 entries.

Run: ``python -m bench.prune_bench`` (``--help`` for options). The session is a seeded
Claude-Code-shaped transcript (streamed replies, parallel tool calls, denials, API-error
storms, interruptions, cut tool calls, ephemeral commands, large results, compaction)
stored in the SQLite session store. Reported per size, the best of ``--runs`` in CPU time
(the measurements take turns, round by round, each view load right after a raw load
of its own):

- ``raw``: ``store.load(key)``;
- ``policies``: the default chain on the loaded list (no I/O, the collector paused as
  in a load);
- ``view``: ``PruningSessionStore.load(key)`` = raw + policies + the safety net;
- overhead = view / raw - 1, for the Runtime default (no trim) and the CLI (trim on):
  the median over rounds of each round's ratio, which a machine whose speed drifts
  between rounds moves far less than a ratio of two minima;
- ``fresh+trim``: the CLI's resume as a new process makes it, a new view each load, so
  trim checks every file it points to instead of remembering them.

Each size is measured twice: as generated, compacted now and then (``context`` is the
part from the last compaction boundary on, what the view prunes), and never compacted,
so that all of it is the model's context: the worst case.
"""

from __future__ import annotations

import argparse
import gc
import random
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "pruning"))

from pruning_builders import TranscriptBuilder

from flower.core.config import Settings
from flower.core.protocols import PruneContext
from flower.core.records import SessionKey
from flower.stores.prune import PruningSessionStore, PruningWarning, prune

COMMANDS = ["git status", "ls src", "pytest -q", "cat setup.cfg", "date", "grep -rn TODO src"]


def make_session(target: int, seed: int = 11, *, compaction: bool = True) -> list[dict[str, Any]]:
    """About ``target`` entries of a long, messy coding session; without ``compaction``
    the whole of it is the model's context (the worst case for pruning)."""
    rng = random.Random(seed)
    b = TranscriptBuilder(session_id="bench-prune", streamed=True, seed=seed)
    b.user("make the test suite pass")
    filler = "def f(x):\n    return x * 2\n" * 400
    while len(b.entries) < target:
        roll = rng.random()
        if roll < 0.55:
            calls = [
                (
                    "Bash" if rng.random() < 0.6 else "Read",
                    {"command": rng.choice(COMMANDS), "file_path": "src/x.py"},
                    filler[: rng.choice([200, 800, 1500, 1500, 3000, 9000])],
                    False,
                )
                for _ in range(rng.choice([1, 1, 1, 2, 3]))
            ]
            b.tool_round(calls, text="Checking." if rng.random() < 0.5 else None)
        elif roll < 0.70:
            b.user("next step please")
            b.assistant([{"type": "text", "text": "Done with that step."}])
        elif roll < 0.76:
            b.denied(f"rm -rf build{len(b.entries)}", claude_code=rng.random() < 0.5)
        elif roll < 0.80:
            for _ in range(rng.randint(1, 4)):
                b.api_error()
            b.user("continue")
        elif roll < 0.83:
            b.interrupted(rng.choice(COMMANDS))
        elif roll < 0.85:
            b.cut(rng.choice(COMMANDS))
            b.user("continue")
        elif roll < 0.995 or not compaction:
            rng.choice([b.progress, b.system, b.snapshot])()
        else:
            b.compact("Summary of the work so far.")
    return b.entries


def best_times(
    fns: dict[str, Callable[[], Any]], runs: int, *, gc_paused: frozenset[str] = frozenset()
) -> tuple[dict[str, float], dict[str, list[float]]]:
    """The fastest of ``runs`` of each function, in CPU seconds of this process, and
    every round's time of each (for ratios paired within a round).

    CPU time, not wall time: on a shared machine the wall clock mostly measures the
    neighbours. The functions take turns, round by round, so a busy spell of the
    machine slows all of them rather than skewing one ratio. Everything timed here runs
    in-process (SQLite included, warm cache). Names in ``gc_paused`` run with the
    collector paused, as ``PruningSessionStore.load`` runs the chain, so the chain-only
    columns measure what a load pays for it.
    """
    rounds: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(runs):
        for name, fn in fns.items():
            paused = name in gc_paused and gc.isenabled()
            if paused:
                gc.disable()
            try:
                start = time.process_time()
                fn()
                rounds[name].append(time.process_time() - start)
            finally:
                if paused:
                    gc.enable()
    return {name: min(times) for name, times in rounds.items()}, rounds


def paired_overhead(view: list[float], raw: list[float]) -> float:
    """The median over rounds of ``view / raw - 1``, each round's two loads measured
    back to back: steadier than the ratio of two minima on a machine whose speed
    drifts between rounds."""
    return statistics.median(v / r - 1 for v, r in zip(view, raw, strict=True) if r > 0)


def measure(size: int, runs: int, folder: Path, *, compaction: bool = True) -> dict[str, float]:
    from flower.core.transcript import active_chain
    from flower.stores.open import open_session_store

    entries = make_session(size, compaction=compaction)
    name = f"prune-{size}-{'compacted' if compaction else 'whole'}"
    key = SessionKey("-home-bench-proj", name)
    store = open_session_store(f"sqlite:///{folder / f'{name}.db'}", settings=Settings())
    store.append(key, entries)
    run_dir = folder / "runs"
    settings = Settings()
    no_trim = PruningSessionStore.from_settings(store, settings, trim=False, run_dir=run_dir)
    with_trim = PruningSessionStore.from_settings(store, settings, trim=True, run_dir=run_dir)
    loaded = store.load(key) or []
    ctx = PruneContext(key=key, run_dir=run_dir)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PruningWarning)  # the chain must need no repair
        with_trim.load(key)  # first load writes the trim files; later loads reuse them
        figures = {
            "entries": float(len(loaded)),
            "context": float(len(active_chain(loaded))),
        }
        views = {
            "view": lambda: no_trim.load(key),
            "view_trim": lambda: with_trim.load(key),
            "fresh_trim": lambda: PruningSessionStore.from_settings(
                store, settings, trim=True, run_dir=run_dir
            ).load(key),
        }
        timed: dict[str, Callable[[], Any]] = {}
        for name, view in views.items():  # each view load right after its own raw load
            timed[f"raw/{name}"] = lambda: store.load(key)
            timed[name] = view
        timed["policies"] = lambda: prune(loaded, no_trim.policies, ctx)
        timed["policies_trim"] = lambda: prune(loaded, with_trim.policies, ctx)
        best, rounds = best_times(timed, runs, gc_paused=frozenset({"policies", "policies_trim"}))
    figures.update(best)
    figures["raw"] = min(best[f"raw/{name}"] for name in views)
    for column, view in (
        ("overhead", "view"),
        ("overhead_trim", "view_trim"),
        ("overhead_fresh", "fresh_trim"),
    ):
        figures[column] = paired_overhead(rounds[view], rounds[f"raw/{view}"])
    store.close()
    return figures


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[4_000, 100_000])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory(prefix="flower-prune-bench-") as tmp:
        for size in args.sizes:
            for compaction in (True, False):
                rows.append(measure(size, args.runs, Path(tmp), compaction=compaction))
    print(
        f"{'entries':>8} {'context':>8} {'raw ms':>8} {'chain ms':>9} {'view ms':>8}"
        f" {'overhead':>9}"
        f" {'chain+trim':>11} {'view+trim':>10} {'overhead':>9} {'fresh+trim':>11}"
        f" {'us/entry':>9}"
    )
    for r in rows:
        print(
            f"{int(r['entries']):>8} {int(r['context']):>8} {r['raw'] * 1e3:>8.1f}"
            f" {r['policies'] * 1e3:>9.1f} {r['view'] * 1e3:>8.1f} {r['overhead']:>9.0%}"
            f" {r['policies_trim'] * 1e3:>11.1f} {r['view_trim'] * 1e3:>10.1f}"
            f" {r['overhead_trim']:>9.0%} {r['overhead_fresh']:>11.0%}"
            f" {r['policies_trim'] / r['entries'] * 1e6:>9.2f}"
        )


if __name__ == "__main__":
    main()
