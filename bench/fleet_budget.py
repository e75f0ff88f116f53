"""``python -m bench.fleet_budget``: the fleet under a shared budget (issue 31), not a test.

N tasks of 3 steps each (bench.fleet's Workflow, one model turn a step) on W workers x
concurrency C, with ``[tool.flower.fleet.limits] requests_per_minute = R`` below the
demand, against a scripted API that itself answers 429 (with ``retry-after``) beyond R
requests in any 60 s, as the real API does. Reports: the most requests that reached the
API in any rolling 60 s (never above R), the achieved requests per minute against R
(``requests / (first-to-last + 60 s)``: each request holds the budget a minute), the
share of calls answered 429, and the wall time against the budget-bound ideal
(``ceil(requests / R) - 1`` minutes: the first R go at once, then R a minute).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.fleet import _env, _fleet, _start_worker, _wait_done, _workspaces


class LimitedModel:
    """Answers after ``latency`` s; 429 + retry-after beyond ``rpm`` in any 60 s."""

    def __init__(self, rpm: int, latency: float) -> None:
        self.rpm = rpm
        self.latency = latency
        self.ok: list[float] = []
        self.limited = 0
        self.lock = threading.Lock()

    def __call__(self, req: Any) -> Any:
        from flower.demo.scripted_api import rate_limited, reply

        now = time.time()
        with self.lock:
            recent = [t for t in self.ok if t > now - 60]
            if len(recent) >= self.rpm:
                self.limited += 1
                return rate_limited(retry_after=max(60 - (now - recent[0]), 1))
            self.ok.append(now)
        time.sleep(self.latency)
        return reply("ok")


def max_window(times: list[float], seconds: float = 60.0) -> int:
    times = sorted(times)
    best, lo = 0, 0
    for hi, t in enumerate(times):
        while times[lo] <= t - seconds:
            lo += 1
        best = max(best, hi - lo + 1)
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.fleet_budget")
    parser.add_argument("--tasks", type=int, default=40)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--rpm", type=int, default=60)
    parser.add_argument("--latency", type=float, default=0.2)
    args = parser.parse_args(argv)

    from flower.testing.fake_api import FakeMessagesAPI

    model = LimitedModel(args.rpm, args.latency)
    with tempfile.TemporaryDirectory() as tmp, FakeMessagesAPI(model) as api:
        root = Path(tmp).resolve()
        (root / "pyproject.toml").write_text(
            f"[tool.flower.fleet]\nconcurrency = {args.concurrency}\n"
            f"[tool.flower.fleet.limits]\nrequests_per_minute = {args.rpm}\n",
            encoding="utf-8",
        )
        home = root / "home"
        home.mkdir()
        env = _env(api.env(), home)
        fleet = _fleet(root)
        for i, ws in enumerate(_workspaces(root, args.tasks, "t")):
            fleet.submit(ws, workflow="bench_flow:make", task_id=f"t{i:04d}")
        workers = [_start_worker(root, env, f"w{i}") for i in range(args.workers)]
        try:
            _wait_done(fleet, args.tasks, 3600)
        finally:
            for proc in workers:
                os.killpg(proc.pid, signal.SIGTERM)
            for proc in workers:
                proc.wait(60)
            fleet.close()
    times = sorted(model.ok)
    total = len(times) + model.limited
    span = times[-1] - times[0]
    ideal = (math.ceil(len(times) / args.rpm) - 1) * 60
    out = {
        "budget_rpm": args.rpm,
        "requests": len(times),
        "max_in_any_60s": max_window(times),
        # each request holds the budget for 60 s: a saturated budget gives R
        "achieved_rpm": round(len(times) / (span + 60) * 60, 1),
        # the budget-bound ideal over the time it took: 1.0 = as fast as the budget allows
        "ideal_over_wall": round(ideal / span, 3) if span else None,
        "share_429": round(model.limited / total, 4) if total else 0.0,
        "first_to_last_request_s": round(span, 1),
        "budget_bound_ideal_s": ideal,
    }
    json.dump(out, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
