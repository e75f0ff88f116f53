"""``python -m bench.fleet``: the fleet's figures (issue 30), not a timed test.

N tasks of 3 steps each (a user's Workflow by ``module:function``, one model turn a
step) against the scripted API answering after a fixed latency, on W worker processes
x concurrency C, all on this machine with the SQLite fleet database (or ``--database``
for Postgres). Reports:

- submit throughput (tasks/s, one process through the Python API);
- wall time against the ideal ``N x 3 x latency / (W x C)``;
- scheduler overhead per step: ``(wall - ideal) x W x C / (N x 3)``: everything that is
  not waiting for the model (DBOS, the workers' start-up, flower's stores), and the
  same counted from the first request (the workers' start-up left out);
- the same N tasks run as plain processes, ``xargs -P (W x C)``, no fleet;
- takeover: kill -9 of a worker with a task in flight, to the first request of the
  taken-over step (``--takeover-after``, default 15 s as shipped).

``python -m bench.fleet --tasks 200 --workers 4 --concurrency 8 --latency 1`` is the
issue's configuration; the defaults are smaller so it runs in a few minutes.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

FLOW = """
from flower import AgentSpec, Step, Workflow

agent = AgentSpec(name="bench", instructions="bench agent", max_turns=1)


def make():
    return Workflow(
        [Step(f"s{i}", agent, f"step {i}", resume_prompt=f"step {i} again") for i in (1, 2, 3)],
        retries=0,
    )
"""


PLAIN = (
    "import asyncio, sys; sys.path.insert(0, '.'); from bench_flow import make; "
    "from flower.runtime.engine import Runtime; rt = Runtime('.', 'runs'); "
    "ctx = asyncio.run(make().run(rt)); rt.close(); sys.exit(0 if ctx.ok else 1)"
)
"""One task as a plain process: the same Workflow on a plain Runtime, no fleet."""


class Model:
    """Answers every request after ``latency`` seconds; records when each came in."""

    def __init__(self, latency: float) -> None:
        self.latency = latency
        self.arrivals: list[tuple[float, str]] = []
        self.lock = threading.Lock()

    def __call__(self, req: Any) -> Any:
        from flower.demo.scripted_api import reply

        cwd = str(req.body.get("metadata", {}) or "")
        with self.lock:
            self.arrivals.append((time.monotonic(), cwd + json.dumps(req.messages)[-200:]))
        time.sleep(self.latency)
        return reply("ok")


def _env(api_env: dict[str, str], home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FLOWER_", "ANTHROPIC_"))}
    env.update(api_env)
    env.update(
        FLOWER_PROBE_STRATEGY="none",
        FLOWER_RESILIENCE_MAX_ATTEMPTS="1",
        FLOWER_LANG="en",
        HOME=str(home),
        PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
    )
    return env


def _fleet(root: Path) -> Any:
    from flower.core.config import load_settings
    from flower.fleet.places import FleetPlace
    from flower.fleet.tasks import Fleet

    return Fleet(FleetPlace.from_settings(load_settings(cwd=root, environ={}).settings, root))


def _workspaces(root: Path, n: int, prefix: str) -> list[Path]:
    spaces = []
    for i in range(n):
        ws = root / f"{prefix}{i:04d}"
        ws.mkdir()
        (ws / "bench_flow.py").write_text(FLOW, encoding="utf-8")
        spaces.append(ws)
    return spaces


def _start_worker(root: Path, env: dict[str, str], name: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "flower.cli.main", "fleet", "worker", "--id", name],
        cwd=root,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=(root / f"worker-{name}.out").open("w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def _wait_done(fleet: Any, n: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        states = [row["state"] for row in fleet.status()]
        if len(states) >= n and all(s in ("done", "failed") for s in states):
            failed = states.count("failed")
            if failed:
                print(f"[bench] {failed} tasks failed", file=sys.stderr)
            return
        time.sleep(0.5)
    raise SystemExit("the tasks never finished")


def throughput(
    args: argparse.Namespace, root: Path, env: dict[str, str], model: Model
) -> dict[str, Any]:
    fleet = _fleet(root)
    spaces = _workspaces(root, args.tasks, "t")
    started = time.monotonic()
    for i, ws in enumerate(spaces):
        fleet.submit(ws, workflow="bench_flow:make", task_id=f"t{i:04d}")
    submitted = time.monotonic() - started
    workers = [_start_worker(root, env, f"w{i}") for i in range(args.workers)]
    begin = time.monotonic()
    try:
        _wait_done(fleet, args.tasks, 3600)
        wall = time.monotonic() - begin
        ended = time.monotonic()
    finally:
        for proc in workers:
            os.killpg(proc.pid, signal.SIGTERM)
        for proc in workers:
            proc.wait(60)
    steps = args.tasks * 3
    slots = args.workers * args.concurrency
    ideal = steps * args.latency / slots
    fleet.close()
    # from the first request the fleet's model saw: the workers' start-up left out
    first = min(t for t, _ in model.arrivals if t >= begin)
    working = ended - first
    return {
        "submit_per_s": round(args.tasks / submitted, 1),
        "wall_s": round(wall, 2),
        "ideal_s": round(ideal, 2),
        "wall_over_ideal": round(wall / ideal, 2),
        "overhead_ms_per_step": round((wall - ideal) * slots / steps * 1000, 1),
        "wall_from_first_request_s": round(working, 2),
        "from_first_request_over_ideal": round(working / ideal, 2),
        "overhead_ms_per_step_from_first_request": round(
            (working - ideal) * slots / steps * 1000, 1
        ),
        **_between_steps(spaces),
        "note": "wall counts from the first worker's start (its start-up included)",
    }


def _between_steps(spaces: list[Path]) -> dict[str, float]:
    """From the tasks' manifests: the time between one step's end and the next one's
    start (DBOS keeps the step, the lease is renewed, the step event set, the next step
    begins), and each step's time beyond the model's latency (flower's own work in it)."""
    import statistics
    from datetime import datetime

    gaps: list[float] = []
    spans: list[float] = []
    for ws in spaces:
        manifest = ws / "runs" / "manifest.json"
        if not manifest.exists():
            continue
        rows = [json.loads(line) for line in manifest.read_text().splitlines() if line.strip()]
        for before, after in itertools.pairwise(rows):
            end = datetime.fromisoformat(before["ended_at"]).timestamp()
            gaps.append(datetime.fromisoformat(after["started_at"]).timestamp() - end)
        spans += [float(row["duration_s"]) for row in rows]
    if not gaps:
        return {}
    return {
        "between_steps_ms_median": round(statistics.median(gaps) * 1000, 1),
        "between_steps_ms_mean": round(statistics.mean(gaps) * 1000, 1),
        "step_s_median": round(statistics.median(spans), 3),
    }


def plain(args: argparse.Namespace, root: Path, env: dict[str, str]) -> dict[str, Any]:
    spaces = _workspaces(root, args.tasks, "p")
    slots = args.workers * args.concurrency
    script = f'cd "$0" && {sys.executable} -c "{PLAIN}" >/dev/null'
    started = time.monotonic()
    subprocess.run(
        ["xargs", "-P", str(slots), "-n", "1", "sh", "-c", script],
        input="\n".join(str(ws) for ws in spaces).encode(),
        env=env,
        check=True,
    )
    wall = time.monotonic() - started
    ideal = args.tasks * 3 * args.latency / slots
    return {"wall_s": round(wall, 2), "wall_over_ideal": round(wall / ideal, 2)}


def takeover(args: argparse.Namespace, root: Path, env: dict[str, str], model: Model) -> float:
    (root / "pyproject.toml").write_text(
        "[tool.flower.fleet]\n"
        f"takeover_after = {args.takeover_after}\n"
        f"concurrency = {args.concurrency}\n",
        encoding="utf-8",
    )
    fleet = _fleet(root)
    [ws] = _workspaces(root, 1, "k")
    a = _start_worker(root, env, "ka")
    b = _start_worker(root, env, "kb")
    time.sleep(3)
    slow = model.latency
    model.latency = 600.0  # the task's first step is in flight when its worker dies
    fleet.submit(ws, workflow="bench_flow:make", task_id="k")
    while not model.arrivals or "step 1" not in model.arrivals[-1][1]:
        time.sleep(0.05)
    while True:
        row = fleet.status()[0]
        if row["state"] == "running":
            break
        time.sleep(0.05)
    victim = a if "ka" in (row["worker"] or "") else b
    seen = len(model.arrivals)
    model.latency = slow
    killed = time.monotonic()
    os.killpg(victim.pid, signal.SIGKILL)
    while len(model.arrivals) == seen:
        time.sleep(0.05)
    elapsed = model.arrivals[seen][0] - killed
    for proc in (a, b):
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(60)
    fleet.close()
    return round(elapsed, 2)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.fleet")
    parser.add_argument("--tasks", type=int, default=40)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--latency", type=float, default=1.0)
    parser.add_argument("--takeover-after", type=float, default=15.0)
    parser.add_argument("--database", default=None, help="a Postgres URL (default: SQLite)")
    parser.add_argument("--skip", nargs="*", default=[], choices=["fleet", "plain", "takeover"])
    args = parser.parse_args(argv)

    from flower.testing.fake_api import FakeMessagesAPI

    model = Model(args.latency)
    results: dict[str, Any] = {"config": vars(args)}
    with FakeMessagesAPI(model) as api, tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        home.mkdir()
        env = _env(api.env(), home)
        for part in ("fleet", "plain", "takeover"):
            if part in args.skip:
                continue
            root = Path(tmp) / part
            root.mkdir()
            lines = ["[tool.flower.fleet]", f"concurrency = {args.concurrency}"]
            if args.database:
                lines.append(f'database = "{args.database}"')
            (root / "pyproject.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
            if part == "fleet":
                results["fleet"] = throughput(args, root, env, model)
            elif part == "plain":
                results["plain_xargs"] = plain(args, root, env)
            else:
                results["takeover_s"] = takeover(args, root, env, model)
            print(json.dumps(results, indent=2), file=sys.stderr, flush=True)
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
