"""The pruned load against what a user would do without flower: ``sqlite3`` + ``json.loads``.

Run: ``python -m bench.prune_bench`` (``--help`` for options). The session is a seeded
Claude-Code-shaped transcript (streamed replies, parallel tool calls, denials, API-error
storms, interruptions, cut tool calls, ephemeral commands, large results) stored in the
SQLite session store, compacted now and then or never compacted, at 4,001 and 100,000
entries. For each, in one process, taking turns round by round (CPU time, best of
``--runs``; ratios are the median over rounds of each round's ratio):

- ``baseline``: the same rows read with the stdlib ``sqlite3`` module and decoded with
  ``json.loads``, into a list: what a user reading the store by hand would do;
- ``load``: ``store.load(key)``, the raw transcript;
- ``view``: ``PruningSessionStore.load(key)``, the pruned active chain the model is
  sent (default chain, no trim: the Runtime's default); ``view+trim``: with trim, as
  the CLI resumes, the trim files already written.

Reported: ``view / baseline`` (target <= 1.0 at 4,001 entries, both shapes), each
load's microseconds per stored entry and ``per-entry 100k / 4k`` (target <= 1.2; the
baseline's and the raw load's own growth beside it: what the machine adds), and
the peak RSS of a fresh process doing one 100,000-entry load against a fresh process
doing the baseline (target <= 1.1).
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import sqlite3
import statistics
import subprocess
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
from flower.core.records import SessionKey
from flower.stores.prune import PruningSessionStore, PruningWarning

ROOT = Path(__file__).resolve().parent.parent
PROJECT = "-home-bench-proj"

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
    fns: dict[str, Callable[[], Any]], runs: int
) -> tuple[dict[str, float], dict[str, list[float]]]:
    """The fastest of ``runs`` of each function, in CPU seconds of this process, and
    every round's time of each (for ratios paired within a round).

    CPU time, not wall time: on a shared machine the wall clock mostly measures the
    neighbours. The functions take turns, round by round, so a busy spell of the
    machine slows all of them rather than skewing one ratio. Each starts from a full
    collection: otherwise the collector's periodic full pass (whose cost grows with
    everything alive) lands in whichever function's turn it falls, the same one round
    after round, and its minimum never leaves it out. Each function still pays the
    collections its own allocations set off.
    """
    rounds: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(runs):
        for name, fn in fns.items():
            gc.collect()
            start = time.process_time()
            fn()
            rounds[name].append(time.process_time() - start)
    return {name: min(times) for name, times in rounds.items()}, rounds


def paired_ratio(num: list[float], den: list[float]) -> float:
    """The median over rounds of ``num / den``, each round's two measured back to back:
    steadier than the ratio of two minima on a machine whose speed drifts."""
    return statistics.median(n / d for n, d in zip(num, den, strict=True) if d > 0)


def baseline_load(db: Path, session_id: str) -> list[Any]:
    """What a user would write without flower: the session's rows, by ``sqlite3``,
    each decoded by ``json.loads``, into a list."""
    conn = sqlite3.connect(db)
    try:
        (pk,) = conn.execute(
            "SELECT id FROM flower_sessions WHERE project_key = ? AND session_id = ? "
            "AND subpath = ''",
            (PROJECT, session_id),
        ).fetchone()
        rows = conn.execute(
            "SELECT payload FROM flower_entries WHERE seq > ? AND seq < ? ORDER BY seq",
            (pk << 32, (pk + 1) << 32),
        )
        return [json.loads(payload) for (payload,) in rows]
    finally:
        conn.close()


def write_session(folder: Path, size: int, *, compaction: bool) -> tuple[Path, str, int]:
    """The bench session stored in a new SQLite store: its file, its id, its entries."""
    from flower.stores.open import open_session_store

    name = f"prune-{size}-{'compacted' if compaction else 'whole'}"
    db = folder / f"{name}.db"
    entries = make_session(size, compaction=compaction)
    store = open_session_store(f"sqlite:///{db}", settings=Settings())
    store.append(SessionKey(PROJECT, name), entries)
    store.close()
    return db, name, len(entries)


def measure(size: int, runs: int, folder: Path, *, compaction: bool = True) -> dict[str, float]:
    """The CPU-time figures for one session (see the module's docstring)."""
    from flower.core.transcript.chain import active_chain
    from flower.stores.open import open_session_store

    db, name, count = write_session(folder, size, compaction=compaction)
    key = SessionKey(PROJECT, name)
    store = open_session_store(f"sqlite:///{db}", settings=Settings())
    run_dir = folder / "runs"
    settings = Settings()
    no_trim = PruningSessionStore.from_settings(store, settings, trim=False, run_dir=run_dir)
    with_trim = PruningSessionStore.from_settings(store, settings, trim=True, run_dir=run_dir)
    loaded = store.load(key) or []
    assert baseline_load(db, name) == loaded  # the same rows, the same entries
    with warnings.catch_warnings():
        warnings.simplefilter("error", PruningWarning)  # the chain must need no repair
        shape = {
            "entries": float(count),
            "chain": float(len(active_chain(loaded))),
            "view_entries": float(len(no_trim.load(key) or [])),
        }
        del loaded  # timed as a resume runs: no other copy of the session alive
        with_trim.load(key)  # the first load writes the trim files; later loads reuse them
        timed: dict[str, Callable[[], Any]] = {
            "baseline": lambda: baseline_load(db, name),
            "load": lambda: store.load(key),
            "view": lambda: no_trim.load(key),
            "view_trim": lambda: with_trim.load(key),
        }
        best, rounds = best_times(timed, runs)
    store.close()
    figures: dict[str, float] = {**shape, **best}
    for column in ("load", "view", "view_trim"):
        figures[f"{column}/baseline"] = paired_ratio(rounds[column], rounds["baseline"])
    return figures


def steps(size: int, runs: int, folder: Path, *, compaction: bool = False) -> dict[str, float]:
    """Where a view's time goes (best of ``runs``, CPU ms): the store's load, the walk
    of the stored transcript, each policy on the chain, the safety net's walk and check
    (the same steps :func:`flower.stores.prune.prune` takes, one by one)."""
    from flower.core.protocols import PruneContext
    from flower.core.transcript import active_chain, model_chain
    from flower.stores.open import open_session_store

    db, name, _ = write_session(folder, size, compaction=compaction)
    key = SessionKey(PROJECT, name)
    store = open_session_store(f"sqlite:///{db}", settings=Settings())
    view = PruningSessionStore.from_settings(store, Settings(), trim=False, run_dir=folder)
    raw = store.load(key) or []
    ctx = PruneContext(key=key, run_dir=folder)
    timed: dict[str, Callable[[], Any]] = {
        "baseline": lambda: baseline_load(db, name),
        "store load": lambda: store.load(key),
        "walk": lambda: active_chain(raw),
    }
    current = active_chain(raw)
    for policy in view.policies:
        given = current
        timed[policy.name] = lambda policy=policy, given=given: policy.prune(given, ctx)
        current = policy.prune(given, ctx)
    pruned = current
    timed["check (walk, messages, rules)"] = lambda: model_chain(pruned)
    timed["view (all of it)"] = lambda: view.load(key)
    best, _ = best_times(timed, runs)
    store.close()
    return {name: seconds * 1e3 for name, seconds in best.items()}


RSS_CHILD = """
import json, resource, sys
what, db, name = sys.argv[1:]
if what == "baseline":  # nothing of flower imported: what a user would run
    import sqlite3

    def load():
        conn = sqlite3.connect(db)
        (pk,) = conn.execute(
            "SELECT id FROM flower_sessions WHERE project_key = ? AND session_id = ? "
            "AND subpath = ''", ({project!r}, name)
        ).fetchone()
        rows = conn.execute(
            "SELECT payload FROM flower_entries WHERE seq > ? AND seq < ? ORDER BY seq",
            (pk << 32, (pk + 1) << 32),
        )
        return [json.loads(payload) for (payload,) in rows]
else:
    sys.path.insert(0, {root!r})
    from flower.core.config import Settings
    from flower.core.records import SessionKey
    from flower.stores.open import open_session_store
    from flower.stores.prune import PruningSessionStore
    store = open_session_store("sqlite:///" + db, settings=Settings())
    key = SessionKey({project!r}, name)
    if what == "view":
        store = PruningSessionStore.from_settings(store, Settings(), trim=False)
    load = lambda: store.load(key)
with open("/proc/self/statm") as f:
    before = int(f.read().split()[1]) * resource.getpagesize() // 1024
entries = load()
# VmHWM, not ru_maxrss: the latter keeps the forking parent's peak across exec
with open("/proc/self/status") as f:
    peak = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
print(json.dumps({{"before_kb": before, "peak_kb": peak, "entries": len(entries)}}))
"""


def peak_rss(what: str, db: Path, name: str) -> dict[str, int]:
    """Peak RSS (KB) of a fresh process doing one load (``baseline``, ``load`` or
    ``view``), and its RSS just before the load (the interpreter and the imports)."""
    code = RSS_CHILD.format(root=str(ROOT), project=PROJECT)
    done = subprocess.run(
        [sys.executable, "-c", code, what, str(db), name],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)


def measure_rss(size: int, folder: Path, *, compaction: bool = False) -> dict[str, float]:
    """Peak RSS of one load of a ``size``-entry session, each in a fresh process."""
    db, name, count = write_session(folder, size, compaction=compaction)
    figures: dict[str, float] = {"entries": float(count)}
    for what in ("baseline", "load", "view"):
        rss = peak_rss(what, db, name)
        figures[f"{what}_peak_kb"] = float(rss["peak_kb"])
        figures[f"{what}_grew_kb"] = float(rss["peak_kb"] - rss["before_kb"])
    for what in ("load", "view"):
        figures[f"{what}/baseline"] = figures[f"{what}_peak_kb"] / figures["baseline_peak_kb"]
        figures[f"{what}/baseline_grew"] = figures[f"{what}_grew_kb"] / figures["baseline_grew_kb"]
    return figures


def growth(small: dict[str, float], large: dict[str, float], column: str) -> float:
    """How much dearer an entry is in ``large`` than in ``small``, for one column."""
    return (large[column] / large["entries"]) / (small[column] / small["entries"])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[4_000, 100_000])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--rss-size", type=int, default=100_000, help="entries for the peak-RSS row (0: none)"
    )
    parser.add_argument(
        "--steps",
        type=int,
        default=0,
        metavar="ENTRIES",
        help="only print where a view of a never-compacted session of ENTRIES goes",
    )
    args = parser.parse_args(argv)
    if args.steps:
        with tempfile.TemporaryDirectory(prefix="flower-prune-bench-") as tmp:
            split = steps(args.steps, args.runs, Path(tmp))
        for name, ms in split.items():
            print(f"{name:>32} {ms:>8.1f} ms")
        return
    rows: list[tuple[str, dict[str, float]]] = []
    print(
        f"{'shape':>9} {'entries':>8} {'chain':>7} {'baseline ms':>12} {'load ms':>8}"
        f" {'view ms':>8} {'view+trim':>10} {'view/base':>10} {'trim/base':>10}"
        f" {'us/entry':>9}",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="flower-prune-bench-") as tmp:
        for size in args.sizes:
            for compaction in (True, False):
                shape = "compacted" if compaction else "whole"
                r = measure(size, args.runs, Path(tmp), compaction=compaction)
                rows.append((shape, r))
                print(
                    f"{shape:>9} {int(r['entries']):>8} {int(r['chain']):>7}"
                    f" {r['baseline'] * 1e3:>12.1f} {r['load'] * 1e3:>8.1f}"
                    f" {r['view'] * 1e3:>8.1f} {r['view_trim'] * 1e3:>10.1f}"
                    f" {r['view/baseline']:>10.2f} {r['view_trim/baseline']:>10.2f}"
                    f" {r['view'] / r['entries'] * 1e6:>9.2f}",
                    flush=True,
                )
        rss = measure_rss(args.rss_size, Path(tmp)) if args.rss_size else None
    by_shape: dict[str, list[dict[str, float]]] = {}
    for shape, r in rows:
        by_shape.setdefault(shape, []).append(r)
    for shape, measured in by_shape.items():
        if len(measured) > 1:
            small, large = measured[0], measured[-1]
            print(
                f"linear ({shape}): view per entry at {int(large['entries'])} / at "
                f"{int(small['entries'])} = {growth(small, large, 'view'):.2f} (baseline's "
                f"own: {growth(small, large, 'baseline'):.2f}, store.load's: "
                f"{growth(small, large, 'load'):.2f})"
            )
    if rss is not None:
        print(
            f"peak RSS, {int(rss['entries'])} entries, fresh process: baseline "
            f"{rss['baseline_peak_kb'] / 1024:.0f} MB, load {rss['load_peak_kb'] / 1024:.0f} MB "
            f"({rss['load/baseline']:.2f}x), view {rss['view_peak_kb'] / 1024:.0f} MB "
            f"({rss['view/baseline']:.2f}x); grown by the load: baseline "
            f"{rss['baseline_grew_kb'] / 1024:.0f} MB, load {rss['load_grew_kb'] / 1024:.0f} MB "
            f"({rss['load/baseline_grew']:.2f}x), view {rss['view_grew_kb'] / 1024:.0f} MB "
            f"({rss['view/baseline_grew']:.2f}x)"
        )


if __name__ == "__main__":
    main()
