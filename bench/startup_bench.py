"""Start-up time of the CLI: ``flower --help``, ``status`` and ``sessions list``.

Each command runs N times as a fresh process (the way a user types it); the best
of the N wall times, and the best of their CPU times (user + system, which another
process's load on a shared machine disturbs less), are reported next to
``python -c pass`` and ``python -c "import typer, rich"`` (what any typer CLI with
rich help pays before it does anything): a figure to watch, not a target.
``status`` runs in an empty temporary directory (no store to open) and in a used one
(lineage and a SQLite session store present); ``sessions list`` runs in the used one.

Bytecode is cached as a user's install would have it: ``PYTHONDONTWRITEBYTECODE`` is
removed from the children's environment and ``PYTHONPYCACHEPREFIX`` points at a
private folder for this run (the source tree stays clean), and every command runs
once untimed first so the cache is written before anything is measured. The
commands take turns, run by run, so the machine's load weighs on all of them alike.

``--where`` adds, for each flower command, the slowest imports that
``python -X importtime`` reports (cumulative, top level first): where the time goes.
``--instructions`` adds the instructions each command executes, counted once under
valgrind (callgrind): a figure another process's load does not move at all.

    python bench/startup_bench.py --runs 15
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

PYTHON = sys.executable
_SCRIPT = Path(PYTHON).with_name("flower")
FLOWER = [str(_SCRIPT)] if _SCRIPT.exists() else [PYTHON, "-m", "flower.cli.main"]


def child_environment(pycache: Path) -> dict[str, str]:
    """The user's environment with a bytecode cache: no FLOWER_* overrides either."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("FLOWER_") and k != "PYTHONDONTWRITEBYTECODE"
    }
    env["PYTHONPYCACHEPREFIX"] = str(pycache)
    return env


def timed(argv: Sequence[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds (user + system) of one run of ``argv``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(
        argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return wall, cpu


Case = tuple[str, Sequence[str], Path, dict[str, str]]
"""Name, argv, working directory, variables added to the environment."""


def best_times(
    cases: Sequence[Case], runs: int, env: dict[str, str]
) -> dict[str, tuple[float, float]]:
    """Best wall and best CPU seconds per case. Cases take turns run by run, so load
    from other processes on the machine weighs on every case alike, ratios included."""
    for _, argv, cwd, extra in cases:
        timed(argv, cwd, {**env, **extra})  # writes the caches; not measured
    times: dict[str, list[tuple[float, float]]] = {name: [] for name, _, _, _ in cases}
    for _ in range(runs):
        for name, argv, cwd, extra in cases:
            times[name].append(timed(argv, cwd, {**env, **extra}))
    return {
        name: (min(wall for wall, _ in values), min(cpu for _, cpu in values))
        for name, values in times.items()
    }


def instructions(argv: Sequence[str], cwd: Path, env: dict[str, str]) -> int | None:
    """The instructions ``argv`` executes (valgrind's callgrind count), None without
    valgrind."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        return None
    done = subprocess.run(
        [valgrind, "--tool=callgrind", "--callgrind-out-file=/dev/null", *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    found = re.search(r"Collected : (\d+)", done.stderr)
    return int(found.group(1)) if found else None


def used_directory(root: Path) -> Path:
    """A workspace with a lineage record and a session in the SQLite store."""
    from flower.core.keys import project_key
    from flower.core.records import SessionKey
    from flower.stores.open import open_session_store

    ws = (root / "used").resolve()
    (ws / "runs").mkdir(parents=True, mode=0o700)
    sid = "47395075-bec7-466e-80cd-f4d60b360235"
    with open_session_store(f"sqlite:///{ws / 'runs' / 'sessions.db'}") as store:
        entry = {
            "type": "assistant",
            "uuid": "a1",
            "parentUuid": None,
            "sessionId": sid,
            "message": {"role": "assistant", "content": "hi", "usage": {"input_tokens": 80_213}},
        }
        store.append(SessionKey(project_key(ws), sid), [entry])
    lineage = {"workspace": str(ws), "woke": 3, "steps": {"干活": sid}}
    record = ws / "runs" / "lineage.json"
    record.write_text(json.dumps(lineage), encoding="utf-8")
    record.chmod(0o600)
    return ws


def slowest_imports(
    argv: Sequence[str], cwd: Path, env: dict[str, str], top: int
) -> list[tuple[float, str]]:
    """The ``top`` imports with the largest cumulative time under ``-X importtime``
    (milliseconds, module), without their own submodules listed again."""
    module_args = ["-m", "flower.cli.main", *argv[len(FLOWER) :]] if argv[:1] == FLOWER[:1] else []
    done = subprocess.run(
        [PYTHON, "-X", "importtime", *module_args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    rows: list[tuple[float, int, str]] = []
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _, cumulative, name = line.removeprefix("import time:").split("|")
        depth = (len(name) - len(name.lstrip())) // 2
        rows.append((int(cumulative) / 1000, depth, name.strip()))
    top_level = [(ms, name) for ms, depth, name in rows if depth == 0]
    return sorted(top_level, reverse=True)[:top]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="runs per command (best of)")
    parser.add_argument("--where", action="store_true", help="list each command's slowest imports")
    parser.add_argument(
        "--instructions", action="store_true", help="count each command's instructions (valgrind)"
    )
    args = parser.parse_args()
    floor_name = 'python -c "import typer, rich"'
    with tempfile.TemporaryDirectory() as tmp:
        fresh = Path(tmp) / "fresh"
        fresh.mkdir()
        used = used_directory(Path(tmp))
        cases: list[Case] = [
            ("python -c pass", [PYTHON, "-c", "pass"], fresh, {}),
            (floor_name, [PYTHON, "-c", "import typer, rich"], fresh, {}),
            ("flower --help", [*FLOWER, "--help"], fresh, {}),
            ("flower --version", [*FLOWER, "--version"], fresh, {}),
            ("flower status (fresh dir)", [*FLOWER, "status"], fresh, {}),
            ("flower status (used dir)", [*FLOWER, "status"], used, {}),
            ("flower sessions list (used dir)", [*FLOWER, "sessions", "list"], used, {}),
        ]
        env = child_environment(Path(tmp) / "pycache")
        results = best_times(cases, args.runs, env)
        counted = {
            name: instructions(argv, cwd, {**env, **extra})
            for name, argv, cwd, extra in cases
            if args.instructions
        }
        where = {
            name: slowest_imports(argv, cwd, {**env, **extra}, top=6)
            for name, argv, cwd, extra in cases
            if args.where and name.startswith("flower")
        }
    (bare, _), (floor, floor_cpu) = results["python -c pass"], results[floor_name]
    print(f"best of {args.runs} runs each (bytecode cached under PYTHONPYCACHEPREFIX)")
    print(f"{'':<34} {'wall':>8}      {'':>7}  {'vs typer+rich':>13}   {'cpu':>8}   vs typer+rich")
    for name, (wall, cpu) in results.items():
        print(
            f"{name:<34} {wall * 1000:8.1f} ms {wall / bare:5.1f}x bare {wall / floor:9.2f}x"
            f"   {cpu * 1000:8.1f} ms {cpu / floor_cpu:9.2f}x"
        )
    wall, cpu = results["flower --help"]
    print(f"flower --help / {floor_name}: {wall / floor:.2f}x wall, {cpu / floor_cpu:.2f}x cpu")
    floor_count = counted.get(floor_name)
    if counted and floor_count:
        print("\ninstructions executed (valgrind callgrind, one run each)")
        for name, count in counted.items():
            if count is not None:
                print(f"{name:<34} {count / 1e6:8.1f} M   {count / floor_count:5.2f}x typer+rich")
    elif counted:
        print("\n--instructions: valgrind not found")
    for name, imports in where.items():
        print(f"\n{name}: slowest imports (cumulative ms)")
        for ms, module in imports:
            print(f"  {ms:8.1f}  {module}")


if __name__ == "__main__":
    main()
