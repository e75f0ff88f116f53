"""Helpers for the everyday-run tests: the real console script against the fake API."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from flower.core.labels import WORK_STEP, step_keys
from flower.demo.script import DemoModel
from flower.testing.fake_api import FakeMessagesAPI, RecordedRequest, Reply

_SCRIPT = Path(sys.executable).with_name("flower")
FLOWER = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "flower.cli.main"]
"""The installed console script (``python -m flower.cli.main`` when it is not there)."""

REQUEST = "写个 md 转 html 的脚本"


def flower_env(api: FakeMessagesAPI, home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FLOWER_", "ANTHROPIC_"))}
    env["FLOWER_LANG"] = os.environ.get("FLOWER_LANG", "zh_CN")  # see tests/conftest.py
    env.update(api.env())
    env.update(
        FLOWER_PROBE_STRATEGY="none",
        FLOWER_RESILIENCE_MAX_ATTEMPTS="1",
        PYTHONUNBUFFERED="1",
        HOME=str(home),
    )
    return env


class Flower:
    """Runs the console script in one workspace with one environment."""

    def __init__(self, cwd: Path, env: dict[str, str]) -> None:
        self.cwd = cwd
        self.env = env

    def __call__(
        self,
        *args: str,
        env: dict[str, str] | None = None,
        timeout: float = 90,
        prefix: Sequence[str] = (),
    ) -> subprocess.CompletedProcess[str]:
        """``flower ARGS``; ``prefix`` runs it through another command (``setpriv ...``)."""
        return subprocess.run(
            [*prefix, *FLOWER, *args],
            cwd=self.cwd,
            env=self.env if env is None else env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def spawn(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [*FLOWER, *args],
            cwd=self.cwd,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )


class ScriptedModel(DemoModel):
    """The demo's model, holding the worker only when a test sets ``hold_worker``;
    :meth:`override` replaces one agent's answers."""

    def __init__(self) -> None:
        super().__init__(python=sys.executable, hold_timeout=30)
        self.hold_worker = False
        self.seen: list[RecordedRequest] = []

    def override(self, instructions: str, handler: Callable[[RecordedRequest], Reply]) -> None:
        self._agents[instructions] = handler

    def __call__(self, req: RecordedRequest) -> Reply:
        self.seen.append(req)
        return super().__call__(req)


def lineage(ws: Path, run_dir: str = "runs") -> dict[str, Any]:
    return json.loads((ws / run_dir / "lineage.json").read_text(encoding="utf-8"))


def wait_for_cut(proc: subprocess.Popen[str], model: DemoModel, ws: Path) -> str:
    """The work step's session id, once it is in lineage and a tool has run."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if model.worker_held.is_set():
            steps = lineage(ws)["steps"]  # the work step's key, in the run's language
            sid = next((steps[k] for k in step_keys(WORK_STEP) if k in steps), None)
            if sid:
                return str(sid)
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.02)
    raise AssertionError("the work step never reached its first tool")


def kill_at_cut(
    flower: Flower, model: DemoModel, sig: signal.Signals, *args: str
) -> tuple[str, subprocess.CompletedProcess[str]]:
    """Start ``flower *args``, send ``sig`` once the work step has run a tool; the work
    step's session id and how the process ended."""
    with flower.spawn(*args) as proc:
        try:
            sid = wait_for_cut(proc, model, flower.cwd)
            proc.send_signal(sig)
            out, err = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
            model.release()
    return sid, subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
