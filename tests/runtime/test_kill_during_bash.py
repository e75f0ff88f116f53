"""kill -9 flower while Bash runs a command: the next run kills what it left running."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path

import anthropic  # imported before fork so the child starts warm
import pytest
from runtime_helpers import fast_resilience, sqlite_settings

from flower.runtime.engine import OrphanWarning, Runtime
from flower.runtime.spec import AgentSpec
from flower.runtime.tools.orphans import group_alive
from flower.testing.fake_api import FakeMessagesAPI, RecordedRequest, Reply, reply, text, tool_use

AGENT = AgentSpec("worker", "Work.", allowed_tools=["Bash"], model="claude-sonnet-4-6")
LONG_COMMAND = "echo $$ > group.txt; sleep 300 & sleep 300; wait"


def answer(request: RecordedRequest) -> Reply:
    if request.texts()[-1] == "start the server":
        return reply(tool_use("Bash", {"command": LONG_COMMAND}))
    return text("ok")


def wait_for(condition: object, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.02)
    return False


def child(workspace: Path, root: Path) -> None:
    try:
        rt = Runtime(
            workspace,
            root / "runs",
            settings=sqlite_settings(root),
            client=anthropic.AsyncAnthropic(max_retries=0),
            resilience=fast_resilience(os.environ["ANTHROPIC_BASE_URL"]),
        )
        asyncio.run(rt.run(AGENT, "start the server"))
    finally:
        os._exit(0)


@pytest.mark.slow
def test_the_next_run_kills_the_command_a_killed_flower_left_running(
    fake_api: FakeMessagesAPI, workspace: Path, in_tmp: Path
) -> None:
    fake_api.set_script(answer)
    pid = os.fork()
    if pid == 0:
        child(workspace, in_tmp)
    marker = workspace / "group.txt"
    group = 0
    try:
        assert wait_for(lambda: marker.exists() and marker.read_text().strip())
        group = int(marker.read_text())
        assert wait_for(lambda: any((in_tmp / "runs" / "running").glob("*.json")))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        assert group_alive(group)  # kill -9 gave flower no chance to stop it

        rt = Runtime(
            workspace,
            in_tmp / "runs",
            settings=sqlite_settings(in_tmp),
            resilience=fast_resilience(fake_api.base_url),
        )
        with pytest.warns(OrphanWarning, match=r"结束了 1 个.*sleep 300"):
            result = asyncio.run(rt.run(AGENT, "carry on"))
        rt.close()
        assert result.ok, result.error
        assert wait_for(lambda: not group_alive(group), 3.0)
        assert list((in_tmp / "runs" / "running").iterdir()) == []
    finally:
        if group and group_alive(group):
            os.killpg(group, signal.SIGKILL)
