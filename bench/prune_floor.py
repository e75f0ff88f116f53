"""A lower bound for pruning in Python: part of the default chain's work, in one pass.

Run: ``python -m bench.prune_floor`` (``--help`` for options). This is not flower's
pruning. It is the least a pure-Python chain could do on a session that is all in the
model's context, written as one tight loop, to show where the floor is. It:

- walks the entries once, in stored order (a linear chain: no walk by parent links);
- drops synthetic API errors and re-links their children;
- marks the results of ephemeral Bash commands (a copy of the entry, message and block);
- collects error results (the denials' candidates) without dropping any;
- folds a rough role and tool-id check into the same loop.

It leaves out what the real chain must also do: drop old denials, neutralise
interruptions and answer cut calls, keep streamed replies whole, follow forks, and
check the result exactly. So the real chain cannot cost less than this pass. The
session is ``prune_bench``'s, never compacted; the figure is the pass's time over the
raw load's, paired round by round as in ``prune_bench``.
"""

from __future__ import annotations

import argparse
import gc
import sys
import tempfile
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.prune_bench import best_times, make_session, paired_overhead
from flower.core.config import Settings
from flower.core.records import SessionKey
from flower.stores.open import open_session_store
from flower_plugins.pruning import STALE_NOTE


def one_pass(
    entries: list[dict[str, Any]], ephemeral: tuple[str, ...]
) -> tuple[list[dict[str, Any]], bool]:
    """The partial chain described above, as one loop; the entries and the rough check."""
    out: list[dict[str, Any]] = []
    add = out.append
    gone: dict[Any, Any] = {}  # dropped uuid -> its parent
    stale: set[Any] = set()
    errors: list[Any] = []
    verdicts: dict[str, bool] = {}
    role = None
    pending: list[Any] = []
    expected: set[Any] = set()
    answered: set[Any] = set()
    valid = True
    for entry in entries:
        kind = entry.get("type")
        parent = entry.get("parentUuid")
        if parent in gone:
            while parent in gone:
                parent = gone[parent]
            entry = entry.copy()  # copy and assign: faster than {**entry, ...}
            entry["parentUuid"] = parent
        message = entry.get("message")
        if kind == "assistant" and message.__class__ is dict:
            if entry.get("isApiErrorMessage") or message.get("model") == "<synthetic>":
                gone[entry.get("uuid")] = parent
                continue
            if role != "assistant":
                valid = valid and (role is None or answered == expected)
                role, pending, answered = "assistant", [], set()
            for block in message.get("content") or ():
                if block.get("type") == "tool_use":
                    tid = block.get("id")
                    pending.append(tid)
                    command = (block.get("input") or {}).get("command")
                    if block.get("name") == "Bash" and command.__class__ is str:
                        verdict = verdicts.get(command)
                        if verdict is None:
                            verdict = verdicts[command] = command.startswith(ephemeral)
                        if verdict:
                            stale.add(tid)
        elif kind == "user" and message.__class__ is dict:
            if role != "user":
                role, expected = "user", set(pending)
            content = message.get("content")
            for block in content if content.__class__ is list else ():
                if block.get("type") != "tool_result":
                    continue
                tid = block.get("tool_use_id")
                answered.add(tid)
                body = block.get("content")
                if block.get("is_error"):
                    errors.append(tid)
                elif tid in stale and body.__class__ is str:
                    marked = block.copy()
                    marked["content"] = f"{STALE_NOTE}\n{body}"
                    message = message.copy()
                    message["content"] = [marked]
                    entry = entry.copy()
                    entry["message"] = message
        add(entry)
    return out, valid and (answered == expected if role == "user" else not pending)


def measure(size: int, runs: int, folder: Path) -> dict[str, float]:
    entries = make_session(size, compaction=False)
    key = SessionKey("-home-bench-proj", f"floor-{size}")
    store = open_session_store(f"sqlite:///{folder / f'floor-{size}.db'}", settings=Settings())
    store.append(key, entries)
    loaded = store.load(key) or []
    ephemeral = tuple(Settings().pruning.ephemeral_commands)
    best, rounds = best_times(
        {"raw": lambda: store.load(key), "pass": lambda: one_pass(loaded, ephemeral)},
        runs,
        gc_paused=frozenset({"pass"}),
    )
    store.close()
    # pass / raw, paired round by round: the overhead of a view costing raw + pass
    paired = [p + r for p, r in zip(rounds["pass"], rounds["raw"], strict=True)]
    ratio = paired_overhead(paired, rounds["raw"])
    return {"entries": float(len(loaded)), **best, "ratio": ratio}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=4_000)
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="flower-prune-floor-") as tmp:
        gc.collect()
        r = measure(args.size, args.runs, Path(tmp))
    print(f"{'entries':>8} {'raw ms':>8} {'pass ms':>8} {'pass / raw':>11}")
    print(
        f"{int(r['entries']):>8} {r['raw'] * 1e3:>8.1f} {r['pass'] * 1e3:>8.1f} {r['ratio']:>11.0%}"
    )


if __name__ == "__main__":
    main()
