"""The fleet's shared budget (issue 31): every model call of every process draws from one
rolling minute in the fleet's database, and a 429 parks every caller."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, NamedTuple

import msgspec
import pytest
from fleet_helpers import (
    ROOT,
    HoldingModel,
    Workers,
    fleet_env,
    fleet_root,
    fleet_status,
    run,
    wait_for,
)

from flower.core.config import FleetLimits, ResilienceConfig, SessionsConfig, Settings
from flower.core.resilience import Resilience
from flower.demo.scripted_api import (
    Fault,
    RecordedRequest,
    Reply,
    api_error,
    rate_limited,
    text,
)
from flower.fleet.budget import Budget
from flower.runtime.engine import Runtime
from flower.runtime.spec import AgentSpec
from flower.testing.fake_api import FakeMessagesAPI

RESERVER = """
import sys, time
from pathlib import Path
from flower.fleet.budget import Budget
budget = Budget(sys.argv[1], sys.argv[2])
go = Path(sys.argv[3])
(go.parent / (go.name + "." + sys.argv[2])).touch()
while not go.exists():
    time.sleep(0.01)
start = time.time()
got = 0
while time.time() < start + float(sys.argv[4]):
    if budget.reserve(int(sys.argv[5]), 1).ticket is not None:
        got += 1
budget.close()  # out of the line: a process gone without it leaves it after 5 s
print(got)
"""


def _reserve_in(url: str, processes: int, seconds: float, tokens: int) -> list[int]:
    """``processes`` processes reserve as fast as they can for ``seconds``: each one's grants."""
    go = Path(tempfile.mkdtemp()) / "go"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", RESERVER, url, f"p{i}", str(go), str(seconds), str(tokens)],
            stdout=subprocess.PIPE,
            text=True,
            env={"PYTHONPATH": str(ROOT)},
        )
        for i in range(processes)
    ]
    wait_for(lambda: len(list(go.parent.glob("go.*"))) == processes, 60, "never ready")
    go.touch()
    return [int(proc.communicate(timeout=60)[0]) for proc in procs]


@pytest.mark.parametrize("database", ["sqlite", "postgres"], indirect=True)
def test_processes_share_one_minute_of_requests_and_tokens(
    in_tmp: Path, database: str | None
) -> None:
    url = database or f"sqlite:///{in_tmp / 'fleet.sqlite'}"
    budget = Budget(url, "test")
    budget.set_limits(FleetLimits(requests_per_minute=7))
    assert sum(_reserve_in(url, 4, 2.0, 100)) == 7  # four processes racing: 7, never 8
    assert budget.snapshot()["used_last_minute"]["requests"] == 7
    budget.set_limits(FleetLimits(input_tokens_per_minute=7 * 100 + 1000))
    # 700 tokens reserved above; 1000 left: three more calls of 300, not four
    assert sum(_reserve_in(url, 3, 1.5, 300)) == 3
    answer = budget.reserve(300, 1)
    assert answer.ticket is None and 30 < answer.wait <= 61  # until 300 tokens expire
    budget.close()


def test_a_settled_call_counts_what_the_api_reported_and_follows_its_smaller_limit(
    in_tmp: Path,
) -> None:
    budget = Budget(f"sqlite:///{in_tmp / 'fleet.sqlite'}", "t1")
    budget.set_limits(FleetLimits(requests_per_minute=50, output_tokens_per_minute=900))
    ticket = budget.reserve(5000, 4000).ticket
    assert ticket is not None
    headers = {
        "anthropic-ratelimit-requests-limit": "3",
        "anthropic-ratelimit-output-tokens-limit": "100000",
    }
    budget.settle(ticket, {"input_tokens": 40, "output_tokens": 60}, headers, 0.25)
    snap = budget.snapshot()
    assert snap["used_last_minute"] == {"requests": 1, "input_tokens": 40, "output_tokens": 60}
    assert snap["effective"] == {"requests": 3, "input_tokens": None, "output_tokens": 900}
    assert snap["tasks"]["t1"] == {
        "requests": 1,
        "input_tokens": 40,
        "output_tokens": 60,
        "cost_usd": 0.25,
    }
    assert budget.reserve(1, 1).ticket is not None
    assert budget.reserve(1, 1).ticket is not None
    assert budget.reserve(1, 1).ticket is None  # the API said 3 a minute, the config 50
    budget.close()


def test_limits_are_checked_and_share_limits_joins_a_plain_run(in_tmp: Path) -> None:
    from flower.core.config import load_settings
    from flower.core.errors import ConfigError
    from flower.fleet import shared_gate as call_gate

    py = in_tmp / "pyproject.toml"
    py.write_text("[tool.flower.fleet.limits]\nrequests_per_minute = 0\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"\[tool.flower.fleet.limits\] requests_per_minute"):
        load_settings(in_tmp, environ={})
    py.write_text("[tool.flower.fleet.limits]\nrequest_per_minute = 5\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="requests_per_minute"):
        load_settings(in_tmp, environ={})
    py.write_text("[tool.flower.fleet.limits]\nrequests_per_minute = 2\n", encoding="utf-8")
    assert call_gate(load_settings(in_tmp, environ={}).settings) is None  # not shared: no gate
    py.write_text(
        "[tool.flower.fleet]\nshare_limits = true\n"
        "[tool.flower.fleet.limits]\nrequests_per_minute = 2\n",
        encoding="utf-8",
    )
    gate = call_gate(load_settings(in_tmp, environ={}).settings)
    assert isinstance(gate, Budget)
    try:
        assert gate.snapshot()["effective"]["requests"] == 2  # in runs/fleet.sqlite
        assert (in_tmp / "runs" / "fleet.sqlite").exists()
    finally:
        gate.close()


def test_a_fleet_database_away_makes_calls_wait_not_fail(in_tmp: Path) -> None:
    away = in_tmp / "not yet"
    budget = Budget(f"sqlite:///{away / 'fleet.sqlite'}", "t1")  # opens without it
    answer = budget.reserve(10, 10)
    assert answer.ticket is None and answer.wait == 1.0  # nothing is sent meanwhile
    assert budget.park(5) is False  # the retry is then the engine's own
    away.mkdir()
    assert budget.reserve(10, 10).ticket is not None  # back: tables made, the call goes
    budget.close()


def test_a_caller_that_waits_is_served_before_a_newer_one(in_tmp: Path) -> None:
    url = f"sqlite:///{in_tmp / 'fleet.sqlite'}"
    now = [1_000_000]
    first, waiting, newer = (Budget(url, t, clock=lambda: now[0]) for t in ("a", "b", "c"))
    first.set_limits(FleetLimits(requests_per_minute=2))
    assert first.reserve(10, 10).ticket is not None
    now[0] += 30_000
    assert first.reserve(10, 10).ticket is not None
    now[0] += 1_000
    assert waiting.reserve(10, 10).ticket is None  # b waits from here
    now[0] += 29_000
    assert waiting.reserve(10, 10).ticket is None  # still waiting, still in line
    now[0] += 2_500  # the first call left the window (and its margin): one request is free
    assert newer.reserve(10, 10).ticket is None  # c is newer than b: not its turn
    assert waiting.reserve(10, 10).ticket is not None  # b's turn
    now[0] += 30_000  # the second call left the window
    assert newer.reserve(10, 10).ticket is not None  # then c's
    for budget in (first, waiting, newer):
        budget.close()


class _Timed:
    """A script that records when each request arrived."""

    def __init__(self, items: list[Any]) -> None:
        self.items = items
        self.at: list[float] = []

    def __call__(self, request: RecordedRequest) -> Reply | Fault:
        self.at.append(time.time())
        item = self.items.pop(0)
        item = item() if callable(item) else item
        return text(item) if isinstance(item, str) else item


def _reset_in(seconds: float) -> Fault:
    """A 429 without retry-after that names when its limit resets (the API's headers)."""
    when = datetime.now(UTC) + timedelta(seconds=seconds)
    return api_error(
        429,
        "Number of request tokens has exceeded your rate limit.",
        headers={
            "anthropic-ratelimit-input-tokens-remaining": "0",
            "anthropic-ratelimit-input-tokens-reset": when.isoformat().replace("+00:00", "Z"),
            "anthropic-ratelimit-requests-remaining": "7",
        },
    )


def _reset_said(seconds: float) -> Fault:
    """A usage-limit 429 that names its reset only in its words (no header of when)."""
    return api_error(429, f"Claude AI usage limit reached|{int(time.time() + seconds)}")


@pytest.mark.parametrize("limited", ["retry-after", "reset", "words"])
def test_a_429_parks_every_caller_and_the_step_resumes_its_session_uncounted(
    in_tmp: Path, english: None, monkeypatch: pytest.MonkeyPatch, limited: str
) -> None:
    url = f"sqlite:///{in_tmp / 'fleet.sqlite'}"
    first = {
        "retry-after": rate_limited(retry_after=2),
        "reset": lambda: _reset_in(2.5),
        "words": lambda: _reset_said(3),
    }[limited]
    script = _Timed([first, "done"])
    lines: list[str] = []
    other = Budget(url, "another worker")
    seen_by_other: list[float | None] = []
    with FakeMessagesAPI(script) as fake:
        for name, value in fake.env().items():
            monkeypatch.setenv(name, value)
        gate = Budget(url, "t1")
        # max_attempts=1: a 429 counted as an attempt would end the step at once
        resilience = Resilience(
            ResilienceConfig(max_attempts=1, base_delay=0.0),
            base_url=fake.base_url,
            on_status=lines.append,
        )
        sessions = SessionsConfig(backend="sqlite", url=f"sqlite:///{in_tmp / 'sessions.db'}")
        rt = Runtime(
            in_tmp,
            in_tmp / "runs",
            settings=msgspec.structs.replace(Settings(), sessions=sessions),
            resilience=resilience,
            gate=gate,
        )

        def watch() -> None:
            # once the 429 was answered and its park written (however long a loaded
            # machine takes), another worker's next call is parked too
            deadline = time.monotonic() + 60
            while not other.snapshot()["parked_until"] and time.monotonic() < deadline:
                time.sleep(0.05)
            seen_by_other.append(other.reserve(1, 1).parked_until)

        watcher = threading.Thread(target=watch)
        watcher.start()
        result = asyncio.run(rt.run(AgentSpec("w", "", model="claude-test"), "hi"))
        watcher.join()
        rt.close()
        requests = list(fake.requests)
    assert result.ok, result.error
    assert len(script.at) == 2 and script.at[1] - script.at[0] >= 1.9
    assert seen_by_other[0] is not None and seen_by_other[0] >= script.at[0] + 1.9
    assert [line for line in lines if line.startswith("parked until")] and len(
        [line for line in lines if line.startswith("parked until")]
    ) == 1
    # the same session: the second request carries the first prompt, then the resume prompt
    assert requests[1].texts()[0] == "hi" and result.resumed
    other.close()
    gate.close()


# -- the fleet: worker processes -------------------------------------------------------


class _Limited(HoldingModel):
    """The demo model behind an API that answers 429 (retry-after) beyond ``rpm`` requests
    in any 60 s, and that can be told to answer one 429 with ``retry-after`` now; while
    ``go`` is clear it answers nothing."""

    def __init__(self, rpm: int | None = None) -> None:
        super().__init__()
        self.rpm = rpm
        self.go = threading.Event()
        self.go.set()
        self.at: list[float] = []
        self.limited = 0
        self.force: float | None = None
        self.forced_at: float | None = None

    def __call__(self, req: RecordedRequest) -> Any:
        self.go.wait(300)  # (a held request is answered then, whatever the test does)
        now = time.time()
        with self._lock:
            self.at.append(now)
            if self.force is not None:
                seconds, self.force = self.force, None
                self.forced_at = now
                return rate_limited(retry_after=seconds)
            recent = [t for t in self.at[:-1] if t > now - 60]
            if self.rpm is not None and len(recent) >= self.rpm:
                self.limited += 1
                return rate_limited(retry_after=60 - (now - recent[0]))
        return super().__call__(req)


@pytest.fixture
def model() -> Any:
    m = _Limited()
    yield m
    m.go.set()
    m.release()


def _submit(root: Path, env: dict[str, str], n: int) -> None:
    for i in range(n):
        ws = root / f"ws{i}"
        ws.mkdir()
        done = run(root, env, "fleet", "submit", str(ws), "hi", "--id", f"t{i}")
        assert done.returncode == 0, done.stderr


def _ended(root: Path) -> list[dict[str, Any]]:
    """Every task, once each one is done or failed (polled in this process: a ``flower
    fleet status`` a poll would cost the machine a Python start and DBOS's import)."""
    rows = sorted(fleet_status(root), key=lambda row: row["id"])
    return rows if rows and all(row["state"] in ("done", "failed") for row in rows) else []


def _limits(root: Path, **limits: int) -> None:
    with (root / "pyproject.toml").open("a", encoding="utf-8") as f:
        f.write("\n[tool.flower.fleet.limits]\n")
        for name, value in limits.items():
            f.write(f"{name} = {value}\n")


def test_three_workers_never_send_more_than_the_budget_a_minute(
    root: Path, env: dict[str, str], workers: Workers, model: _Limited
) -> None:
    model.rpm = 3
    _limits(root, requests_per_minute=3)
    _submit(root, env, 4)
    workers.start_together("a", "b", "c")
    wait_for(lambda: len(model.at) >= 3, 120, "the workers never reached the budget")
    time.sleep(5)  # every wake keeps asking: the budget holds them
    assert len(model.at) == 3 and model.limited == 0
    done = run(root, env, "fleet", "status", "--json")
    report = json.loads(done.stdout)
    assert report["budget"]["used_last_minute"]["requests"] == 3
    assert report["budget"]["effective"]["requests"] == 3
    assert report["totals"]["requests"] == 3
    assert sum(row["requests"] for row in report["tasks"]) == 3
    shown = run(root, env, "fleet", "status").stdout
    assert "budget, last minute: 3/3 requests" in shown


def test_a_forced_429_parks_every_worker_and_every_task_finishes(
    root: Path, env: dict[str, str], workers: Workers, model: _Limited
) -> None:
    # The API answers nothing until every worker is up, then 429 to the first request.
    # (Armed after three workers had started, a loaded machine let the first worker
    # finish every task while the others were still starting: no request was left to
    # answer 429.) The park is long enough for a loaded machine to see it well before
    # it ends: the check below needs 7 s of it left once seen; 20 s leave a lag of 12 s.
    model.go.clear()
    model.force = 20.0
    _submit(root, env, 3)
    workers.start_together("a", "b", "c")
    model.go.set()
    wait_for(lambda: model.forced_at is not None, 180, "no request reached the API")
    budget = Budget(f"sqlite:///{root / 'runs' / 'fleet.sqlite'}", "test")
    parked = wait_for(lambda: budget.snapshot()["parked_until"], 60, "the 429 parked nothing")
    seen_parked = time.time()
    budget.close()
    assert parked >= model.forced_at + 19.5
    shown = run(root, env, "fleet", "status").stdout
    assert "parked until" in shown or time.time() > parked  # (a slow machine)
    rows = wait_for(lambda: _ended(root), 180, "the tasks never finished", every=0.5)
    assert [row["state"] for row in rows] == ["done"] * 3, rows
    assert model.forced_at is not None
    # nothing admitted after the park reached the API until it ended (a call admitted
    # just before it may still arrive a moment later, on a loaded machine)
    inside = [t for t in model.at if seen_parked + 4 < t < parked - 0.1]
    assert parked - 0.1 - (seen_parked + 4) > 3 and inside == []
    logs = [run(root, env, "fleet", "logs", f"t{i}") for i in range(3)]
    assert all(done.returncode == 0 for done in logs)
    assert all("== confirm the brief" in done.stdout for done in logs)
    assert any("parked until" in done.stdout for done in logs)  # the wakes said so
    assert logs[0].stdout == (root / "ws0" / "runs" / "fleet" / "t0.log").read_text()
    unknown = run(root, env, "fleet", "logs", "nope")
    assert unknown.returncode == 2 and "no fleet task nope" in unknown.stderr


def test_submit_priority_orders_the_queue(
    root: Path, env: dict[str, str], workers: Workers, model: _Limited
) -> None:
    with (root / "pyproject.toml").open("a", encoding="utf-8") as f:
        f.write("concurrency = 1\n")  # one task at a time: the order shows
    for name, extra in (("low", []), ("first", ["--priority", "1"]), ("mid", ["--priority", "5"])):
        ws = root / name
        ws.mkdir()
        done = run(root, env, "fleet", "submit", str(ws), "hi", "--id", name, *extra)
        assert done.returncode == 0, done.stderr
    bad = run(root, env, "fleet", "submit", str(root / "low"), "hi", "--priority", "0")
    assert bad.returncode == 2 and "--priority takes 1 (first)" in bad.stderr
    workers.start("a")
    wait_for(lambda: workers.output("a").count("started in") >= 3, 180, "not every task started")
    lines = workers.output("a").splitlines()
    started = [line.split(":")[0] for line in lines if "started in" in line]
    assert started == ["task first", "task mid", "task low"]


class _Metered(HoldingModel):
    """The demo model behind an API that reports usage as the real one counts it: the
    request's input (about four bytes of its JSON body a token: system, tools and
    messages) and ``output`` tokens a reply; it records what reached it and when."""

    def __init__(self, output: int) -> None:
        super().__init__()
        self.output = output
        self.calls: list[tuple[float, int, int]] = []

    def __call__(self, req: RecordedRequest) -> Any:
        answer = super().__call__(req)
        sent = len(json.dumps(req.body, ensure_ascii=False).encode("utf-8")) // 4
        with self._lock:
            self.calls.append((time.time(), sent, self.output))
        answer.usage = {"input_tokens": sent, "output_tokens": self.output}
        return answer


def _most_in_a_minute(calls: list[tuple[float, int, int]], column: int) -> int:
    """The most of ``column`` (1: input, 2: output tokens) in any rolling 60 s."""
    ordered = sorted(calls)
    return max(
        (sum(c[column] for c in ordered if t - 60 < c[0] <= t) for t, *_ in ordered), default=0
    )


class _TokenBudgetRun(NamedTuple):
    """The token-budget run under way: its fleet, workers, API and end."""

    root: Path
    workers: Workers
    metered: _Metered
    ended: Future[None]


class _Stopped(Exception):
    """The module ended before the token-budget run did (its test did not run here)."""


@pytest.fixture(scope="module", autouse=True)
def token_budget_run(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[_TokenBudgetRun | None]:
    """test_three_workers_keep_to_a_token_budget's run, started with the module when that
    test is to run: it waits out the budget's rolling minute, its workers mostly idle,
    while the module's other tests run beside it; the test then waits for its end and
    checks what it did."""
    wanted = "test_three_workers_keep_to_a_token_budget"
    if not any(i.module is request.module and i.name == wanted for i in request.session.items):
        yield None
        return
    base = tmp_path_factory.mktemp("token-budget")
    root = fleet_root(base / "fleet")
    home = base / "home"
    home.mkdir()
    # each step is one call here, the first of its conversation: it reserves a quarter of
    # max_tokens (4,000) for its reply and settles at the 1,500 the API reports
    metered = _Metered(output=1500)
    stop = threading.Event()
    with FakeMessagesAPI(metered) as api, ThreadPoolExecutor(1) as pool:
        workers = Workers(root, fleet_env(api.env(), home))
        ended = pool.submit(_keep_to_a_token_budget, root, workers, stop)
        try:
            yield _TokenBudgetRun(root, workers, metered, ended)
        finally:
            stop.set()
            metered.release()
            workers.close()


def _keep_to_a_token_budget(root: Path, workers: Workers, stop: threading.Event) -> None:
    def ended() -> list[dict[str, Any]]:
        if stop.is_set():
            raise _Stopped
        return _ended(root)

    _limits(root, input_tokens_per_minute=12000, output_tokens_per_minute=9000)
    _submit(root, workers.env, 2)
    workers.start_together("a", "b", "c")
    rows = wait_for(ended, 420, "the tasks never finished", every=0.5)
    assert [row["state"] for row in rows] == ["done"] * 2, rows


@pytest.mark.timeout(600)  # the budget spreads the calls over two minutes or so
def test_three_workers_keep_to_a_token_budget(token_budget_run: _TokenBudgetRun | None) -> None:
    assert token_budget_run is not None
    root, workers, metered, ended = token_budget_run
    try:
        ended.result()
    finally:
        metered.release()
        workers.close()  # (their output shows with a failure)
    calls = list(metered.calls)
    assert len(calls) == 8  # brief, goals, work, judge: one call each, per task
    # about 2,000 input and 1,500 output tokens a call: 8 calls do not fit in a minute
    assert calls[-1][0] - calls[0][0] > 60
    assert _most_in_a_minute(calls, 1) <= 12000
    assert _most_in_a_minute(calls, 2) <= 9000
    report = json.loads(run(root, workers.env, "fleet", "status", "--json").stdout)
    assert report["totals"]["output_tokens"] == 1500 * len(calls)
    assert report["totals"]["input_tokens"] == sum(c[1] for c in calls)
    logs = "".join((root / f"ws{i}" / "runs" / "fleet" / f"t{i}.log").read_text() for i in range(2))
    assert "waiting for the shared budget" in logs


def test_the_budgets_sqlite_commits_are_not_fsynced_one_by_one(tmp_path: Path) -> None:
    """WAL with ``synchronous = NORMAL``: a reservation is a minute's bookkeeping, not
    worth an fsync a model call (bench/fleet.py)."""
    budget = Budget(f"sqlite:///{tmp_path / 'fleet.sqlite'}", "t")
    try:
        ticket = budget.reserve(10, 10).ticket
        assert ticket is not None
        budget.settle(ticket, {"input_tokens": 5, "output_tokens": 3}, {}, 0.001)
        with budget.engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == 1  # NORMAL
        assert budget.snapshot()["tasks"]["t"]["requests"] == 1
    finally:
        budget.close()
