"""kill -9 a process in the middle of a session, at random moments, then resume it.

The child is forked from the test process (the SDK is already imported, so a trial
costs milliseconds, not an interpreter start-up). After every append returns, it
reports the entry's uuid through a pipe: whatever it reported must survive the kill.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anthropic  # imported before fork so the child starts warm
import pytest
from runtime_helpers import fast_resilience, sqlite_settings

from flower.core.records import Entry, SessionKey
from flower.core.transcript import check_conversation
from flower.runtime.engine import Runtime
from flower.runtime.spec import AgentSpec
from flower.testing.fake_api import FakeMessagesAPI, RecordedRequest, Reply, reply, text, tool_use

TRIALS = 20
MOST = 10 * TRIALS
"""Kills at most: an ending still not seen after that many is taken to be impossible."""
FINISH = "FINISH now."
ENDINGS = {"user", "assistant"}
"""The type of the last stored entry, over all the kills."""
AGENT = AgentSpec(
    "worker",
    "Keep reading.",
    allowed_tools=["Read", "Glob"],
    max_turns=500,
    model="claude-sonnet-4-6",
)


def answer(request: RecordedRequest) -> Reply:
    """Reads and globs forever, until the last user text says FINISH."""
    if any(FINISH in t for t in request.texts()[-2:]):
        return text("finished")
    n = len(request.messages)
    call = (
        tool_use("Read", {"file_path": "seed.txt"})
        if n % 3
        else tool_use("Glob", {"pattern": "*.txt"})
    )
    return reply(f"turn {n}: working on it", call, delay=random.uniform(0, 0.003), chunk=4)


class ReportingStore:
    """Wraps the child's store: after each durable append, the uuids go down the pipe."""

    def __init__(self, inner: Any, fd: int) -> None:
        self.inner = inner
        self.fd = fd

    def append(self, key: SessionKey, entries: Sequence[Entry]) -> None:
        self.inner.append(key, entries)
        os.write(self.fd, "".join(f"{e['uuid']}\n" for e in entries).encode())

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def child(workspace: Path, root: Path, fd: int) -> None:
    try:
        client = anthropic.AsyncAnthropic(max_retries=0)  # made before "ready": it is slow
        rt = Runtime(
            workspace,
            root / "runs",
            settings=sqlite_settings(root),
            client=client,
            resilience=fast_resilience(os.environ["ANTHROPIC_BASE_URL"]),
        )
        rt._store = ReportingStore(rt.store, fd)  # type: ignore[assignment]
        os.write(fd, b"ready\n")
        asyncio.run(rt.run(AGENT, "Read seed.txt, over and over."))
    finally:
        os._exit(0)


def read_reports(fd: int) -> list[str]:
    data = b""
    while chunk := os.read(fd, 65536):
        data += chunk
    return data.decode().split()


def kill_moment(trial: int, endings: set[str], rng: random.Random) -> tuple[int, float]:
    """After how many acknowledged entries trial ``trial`` kills, and how long after.

    Random moments measured in progress, not wall time, so a slow machine still kills
    inside the session: after 1-12 acknowledged entries, then up to 4 ms on (mid-stream,
    mid-tool or between appends). On a loaded machine no kill of those may land in the
    short window between an assistant reply and its tool result: while an ending was
    never seen, more trials kill right after an entry of that type was acknowledged
    (the prompt is entry 1, so an assistant reply is an even one).
    """
    count, wait = rng.randint(1, 12), rng.uniform(0.0, 0.004)
    if trial < TRIALS:
        return count, wait
    odd = count | 1
    return (odd + 1 if "assistant" not in endings else odd), 0.0


def wait_for_reports(fd: int, count: int) -> list[str]:
    """Read whole lines from the child until ``count`` uuids were acknowledged."""
    data = b""
    while data.count(b"\n") < count:
        chunk = os.read(fd, 1)
        if not chunk:
            break
        data += chunk
    return data.decode().split()


@pytest.mark.slow
def test_kill_9_at_random_moments_loses_nothing_and_resumes_validly(
    fake_api: FakeMessagesAPI, workspace: Path, in_tmp: Path
) -> None:
    fake_api.set_script(answer)
    parent_rt = Runtime(
        workspace,
        in_tmp / "runs",
        settings=sqlite_settings(in_tmp),
        resilience=fast_resilience(fake_api.base_url),
    )
    project = parent_rt.project_key
    assert parent_rt.store.list_sessions(project) == []  # creates the database up front
    rng = random.Random(1234)
    trials = resumed = 0
    endings: set[str] = set()
    while trials < TRIALS or (ENDINGS - endings and trials < MOST):
        count, wait = kill_moment(trials, endings, rng)
        trials += 1
        known = {s.session_id for s in parent_rt.store.list_sessions(project)}
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read_end)
            child(workspace, in_tmp, write_end)
        os.close(write_end)
        assert os.read(read_end, 6) == b"ready\n"
        acknowledged = wait_for_reports(read_end, count)
        time.sleep(wait)
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        reported = acknowledged + read_reports(read_end)
        os.close(read_end)

        new = [
            s.session_id
            for s in parent_rt.store.list_sessions(project)
            if s.session_id not in known
        ]
        if not new:
            assert reported == []  # killed before the first entry: nothing to lose
            continue
        (sid,) = new
        before = parent_rt.store.load(parent_rt.key(sid))
        endings.add(before[-1]["type"])
        stored = [e["uuid"] for e in before]
        assert stored[: len(reported)] == reported  # every acknowledged append survived
        requests_before = len(fake_api.requests)
        result = asyncio.run(parent_rt.run(AGENT, FINISH, resume=sid))
        assert result.ok, result.error
        assert result.text == "finished"
        resumed += 1

        after = parent_rt.store.load(parent_rt.key(sid))
        assert after[: len(before)] == before
        uuids = {e["uuid"] for e in after}
        assert len(uuids) == len(after)
        assert after[0]["parentUuid"] is None
        for i, entry in enumerate(after[1:], start=1):
            assert entry["parentUuid"] == after[i - 1]["uuid"]
        sent = fake_api.requests[requests_before].messages
        check_conversation(sent)
        assert sent[-1]["content"][-1].get("text") == FINISH, (before[-3:], sent[-2:])
    parent_rt.close()
    assert fake_api.rejections == []
    assert resumed == trials  # every kill landed inside a session
    # kills landed both after an assistant reply (tool pending) and after a tool result
    assert endings == ENDINGS, (
        f"no kill of {trials} left a transcript ending in {sorted(ENDINGS - endings)}"
    )
