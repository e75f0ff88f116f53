"""Helpers for the fleet tests: real worker processes against the scripted API."""

from __future__ import annotations

import functools
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from flower.demo.script import DemoModel
from flower.demo.scripted_api import RecordedRequest, Reply, reply

BOTH = pytest.mark.parametrize("database", ["sqlite", "postgres"], indirect=True)
"""Run a test on the SQLite fleet (one machine) and on Postgres (many hosts)."""

FLOWER = [sys.executable, "-m", "flower.cli.main"]
ROOT = Path(__file__).resolve().parents[2]


class HoldingModel(DemoModel):
    """The demo's scripted model; while ``hold_worker`` is set, the work step's second
    request (a tool has run) of every task is held: ``held`` counts them."""

    def __init__(self) -> None:
        super().__init__(python=sys.executable, hold_timeout=60, lang="en")
        self.hold_worker = False
        self.quick = True
        """The work step says it is done at once and the judge agrees (no tools): the
        fewest requests a whole wake makes. Off: the demo's work, tools and all."""
        self.seen: list[RecordedRequest] = []
        self.held = 0
        self._lock = threading.Lock()

    def __call__(self, req: RecordedRequest) -> Reply:
        with self._lock:
            self.seen.append(req)
        return super().__call__(req)

    def _worker(self, req: RecordedRequest) -> Reply:
        if self.quick:
            return reply(self.script.done)
        if self.hold_worker and _tool_uses(req) >= 1:
            with self._lock:
                self.held += 1
        return super()._worker(req)

    def _judge(self, req: RecordedRequest) -> Reply:
        if self.quick:
            return reply("\n".join(f"{n}. {self.script.met} — ok" for n in (1, 2, 3)))
        return super()._judge(req)

    def requests_of(self, instructions: str) -> int:
        return sum(1 for r in self.seen if _system(r) == instructions)

    def worker_requests(self) -> list[int]:
        """How many tool calls each work-step request had made, sorted."""
        from flower.core.i18n import language
        from flower.workflow.builtin import worker_agent

        with language("en"):
            system = worker_agent().instructions
        return sorted(_tool_uses(r) for r in self.seen if _system(r) == system)


def _system(req: RecordedRequest) -> str:
    system = req.body.get("system")
    if isinstance(system, list):
        return "".join(b.get("text", "") for b in system if isinstance(b, dict))
    return str(system or "")


def _tool_uses(req: RecordedRequest) -> int:
    return sum(
        1
        for m in req.messages
        if m.get("role") == "assistant" and isinstance(m.get("content"), list)
        for b in m["content"]
        if isinstance(b, dict) and b.get("type") == "tool_use"
    )


TAKEOVER_AFTER = 2.0
HEARTBEAT = 0.3


def fleet_root(path: Path, database: str | None = None) -> Path:
    """A new fleet directory at ``path``: its pyproject (short takeover for tests), on
    SQLite under its runs/ or on the Postgres ``database``."""
    path.mkdir()
    lines = [
        "[tool.flower.fleet]",
        f"takeover_after = {TAKEOVER_AFTER}",
        f"heartbeat = {HEARTBEAT}",
    ]
    if database:
        lines.append(f'database = "{database}"')
    (path / "pyproject.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path.resolve()


def fleet_env(api_env: dict[str, str], home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FLOWER_", "ANTHROPIC_"))}
    env["FLOWER_LANG"] = "en"  # the model below answers English flowers
    env.update(api_env)
    env.update(
        FLOWER_PROBE_STRATEGY="none",
        FLOWER_RESILIENCE_MAX_ATTEMPTS="1",
        PYTHONUNBUFFERED="1",
        HOME=str(home),
        PYTHONPATH=str(ROOT) + os.pathsep + env.get("PYTHONPATH", ""),
    )
    return env


class Workers:
    """Worker processes (each its own process group, so a kill takes its wakes too)."""

    def __init__(self, root: Path, env: dict[str, str]) -> None:
        self.root = root
        self.env = env
        self.procs: dict[str, subprocess.Popen[str]] = {}
        self.logs: dict[str, Path] = {}

    def start(self, name: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
        """Worker ``name``, in the fleet's environment or in ``env``, once it is up."""
        proc = self._spawn(name, env)
        self._up(name)
        return proc

    def start_together(self, *names: str) -> None:
        """Workers ``names``, started at once (each imports DBOS on its own), then each
        waited for until it is up: for tests that want them all running, in no order."""
        for name in names:
            self._spawn(name, None)
        for name in names:
            self._up(name)

    def _spawn(self, name: str, env: dict[str, str] | None) -> subprocess.Popen[str]:
        log = self.root / f"worker-{name}.out"
        self.logs[name] = log
        proc = subprocess.Popen(
            [*FLOWER, "fleet", "worker", "--id", name],
            cwd=self.root,
            env=self.env if env is None else env,
            stdin=subprocess.DEVNULL,
            stdout=log.open("w"),
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        self.procs[name] = proc
        return proc

    def _up(self, name: str) -> None:
        # generous: three workers importing DBOS on a loaded 2-core machine
        wait_for(
            lambda: "worker " in self.output(name), 120, f"worker {name} never started", every=0.05
        )

    def output(self, name: str) -> str:
        return self.logs[name].read_text(encoding="utf-8", errors="replace")

    def signal(self, name: str, sig: int) -> None:
        os.killpg(self.procs[name].pid, sig)

    def freeze(self, name: str, databases: list[Path]) -> None:
        """SIGSTOP the worker and its wakes at a moment none of them holds a write lock
        on one of the SQLite ``databases``: a process frozen inside a SQLite write
        transaction stalls every writer of that file (SQLite has one writer; Postgres
        does not have this limit), which is not what the test is about."""
        import sqlite3

        for _ in range(50):
            self.signal(name, signal.SIGSTOP)
            group = self.procs[name].pid
            stopped = functools.partial(_all_stopped, group)
            wait_for(stopped, 10, f"worker {name} did not stop", every=0.02)
            free = True
            for db in databases:
                if not db.exists():
                    continue
                conn = sqlite3.connect(db, timeout=0.5, isolation_level=None)
                try:
                    conn.execute("BEGIN IMMEDIATE")
                    conn.execute("ROLLBACK")
                except sqlite3.OperationalError:
                    free = False
                finally:
                    conn.close()
            if free:
                return
            self.signal(name, signal.SIGCONT)
            time.sleep(0.1)
        raise AssertionError(f"worker {name} always held a write lock")

    def close(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGCONT)
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            proc.wait(timeout=30)
        for name in self.logs:  # pytest shows this when the test failed
            print(f"--- worker {name}\n{self.output(name)}")


def wait_for(check: Callable[[], Any], timeout: float, what: str, every: float = 0.2) -> Any:
    """``check()``'s first true answer, looked for each ``every`` seconds: a check here
    reads a file, a counter or the fleet's database in this process (a few ms, 40 at
    most on Postgres), so it can be asked often and the test goes on once it holds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(every)
    raise AssertionError(what)


def _all_stopped(group: int) -> bool:
    """Whether every process of process group ``group`` is stopped (state T in /proc)."""
    found = False
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:  # it ended meanwhile
            continue
        fields = text[text.rindex(")") + 2 :].split()  # after "pid (comm) "
        if int(fields[2]) != group:
            continue
        found = True
        if fields[0] not in ("T", "t", "Z", "X"):
            return False
    return found


def run(root: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*FLOWER, *args], cwd=root, env=env, capture_output=True, text=True, timeout=60
    )


def fleet_of(root: Path) -> Any:
    """The :class:`~flower.fleet.tasks.Fleet` configured in ``root``, in this process."""
    from flower.core.config import load_settings
    from flower.fleet.places import FleetPlace
    from flower.fleet.tasks import Fleet

    return Fleet(FleetPlace.from_settings(load_settings(cwd=root, environ={}).settings, root))


def fleet_status(root: Path) -> list[dict[str, Any]]:
    """``Fleet.status()`` of the fleet configured in ``root``, from this process."""
    with fleet_of(root) as fleet:
        return list(fleet.status())


def states(root: Path) -> dict[str, str]:
    """Each task's state, by its id."""
    return {row["id"]: row["state"] for row in fleet_status(root)}


def work_step(ws: Path) -> str:
    """The work step's key in the workspace's lineage (the wakes speak English)."""
    from flower.core.i18n import language
    from flower.workflow.documents import workflow_names

    lineage = json.loads((ws / "runs" / "lineage.json").read_text(encoding="utf-8"))
    with language("en"):
        return str(workflow_names(None, lineage["steps"]).work_step)


def work_session(ws: Path) -> str:
    """The work step's session in the workspace's lineage."""
    lineage = json.loads((ws / "runs" / "lineage.json").read_text(encoding="utf-8"))
    return str(lineage["steps"][work_step(ws)])


def transcript(ws: Path, sid: str, env: dict[str, str]) -> list[dict[str, Any]]:
    """The session ``sid`` of workspace ``ws`` as its store holds it."""
    import msgspec

    from flower.core.keys import project_key
    from flower.core.records import SessionKey
    from flower.fleet.places import workspace_settings
    from flower.stores.open import open_session_store

    settings = workspace_settings(ws)
    if "FLOWER_SESSIONS_URL" in env:
        sessions = msgspec.structs.replace(settings.sessions, url=env["FLOWER_SESSIONS_URL"])
        settings = msgspec.structs.replace(settings, sessions=sessions)
    store = open_session_store(settings=settings)
    try:
        return store.load(SessionKey(project_key(ws), sid)) or []
    finally:
        store.close()


def submit(root: Path, env: dict[str, str], ws: Path, task_id: str, said: str) -> None:
    """``flower fleet submit`` of a new workspace ``ws`` as ``task_id``."""
    ws.mkdir()
    done = run(root, env, "fleet", "submit", str(ws), said, "--id", task_id)
    assert done.returncode == 0, done.stderr
