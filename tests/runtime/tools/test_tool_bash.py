"""Bash: exit codes, timeouts, process groups, output caps."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from tool_helpers import Call, run_tool

from flower.runtime.tools import ToolBox
from flower.runtime.tools.bash import CappedOutput


def _gone(pid: int) -> bool:
    """True once ``pid`` no longer runs (a zombie waiting for init counts as gone)."""
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.02)
    return False


@pytest.fixture
def quick(ws: Path) -> ToolBox:
    return ToolBox(ws, ["Bash"], bash_timeout=0.5, max_output=2000)


def test_output_and_exit_code(call: Call) -> None:
    outcome = call("Bash", {"command": "echo out; echo err >&2; exit 3"})
    assert outcome.content == "out\nerr\nExit code: 3"
    assert outcome.is_error
    assert outcome.result["exitCode"] == 3 and outcome.result["timedOut"] is False


def test_success_is_not_an_error(call: Call) -> None:
    outcome = call("Bash", {"command": "true"})
    assert outcome.content == "(no output)\nExit code: 0"
    assert not outcome.is_error and outcome.result["exitCode"] == 0


@pytest.mark.parametrize(
    ("command", "message"),
    [("echo a\x00b", "contains a NUL byte"), ("x" * 200_000, "Write a script file")],
)
def test_a_command_no_exec_can_take_is_an_error(call: Call, command: str, message: str) -> None:
    outcome = call("Bash", {"command": command})
    assert outcome.is_error and outcome.content.startswith("Error: ")
    assert message in outcome.content


def test_stdin_is_empty(call: Call) -> None:
    assert call("Bash", {"command": "cat; echo done"}).content == "done\nExit code: 0"


def test_undecodable_output_is_replaced(call: Call) -> None:
    assert call("Bash", {"command": r"printf 'caf\xe9\n'"}).content.startswith("caf\ufffd\n")


def test_flower_secrets_are_not_in_its_environment(
    call: Call, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret")
    monkeypatch.setenv("SOME_USER_VAR", "kept")
    outcome = call("Bash", {"command": 'echo "${ANTHROPIC_API_KEY:-unset} $SOME_USER_VAR"'})
    assert outcome.content.startswith("unset kept\n")


@pytest.mark.parametrize(
    "name",
    [
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "FLOWER_ENCRYPTION_KEY",
        "FLOWER_NEW_ENCRYPTION_KEY",
        "FLOWER_SESSIONS_URL",
        "FLOWER_LINEAGE_URL",
        "FLOWER_SESSIONS_OPTIONS",
        "FLOWER_LINEAGE_OPTIONS",
    ],
)
def test_every_secret_flower_reads_is_hidden(
    call: Call, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """docs/tools.md: a command the model runs cannot print a key flower was given."""
    monkeypatch.setenv(name, "secret-value")
    outcome = call("Bash", {"command": f'echo "${{{name}:-unset}}"'})
    assert outcome.content.startswith("unset\n")


def test_a_hanging_command_is_killed_at_its_timeout(call: Call, quick: ToolBox) -> None:
    started = time.monotonic()
    outcome = call("Bash", {"command": "echo partial; sleep 30"}, quick)
    assert time.monotonic() - started < 3
    assert outcome.is_error and outcome.result["timedOut"] is True
    assert outcome.content.startswith("partial\n")
    assert "Command timed out after 0.5 s and was killed" in outcome.content


def test_the_model_may_set_a_timeout_in_milliseconds(call: Call) -> None:
    started = time.monotonic()
    outcome = call("Bash", {"command": "sleep 30", "timeout": 200})
    assert time.monotonic() - started < 3
    assert outcome.result["timedOut"] is True and outcome.result["timeoutSeconds"] == 0.2


def test_a_command_ignoring_sigterm_is_killed(call: Call, quick: ToolBox) -> None:
    started = time.monotonic()
    outcome = call("Bash", {"command": "trap '' TERM; sleep 30"}, quick)
    assert time.monotonic() - started < 3
    assert outcome.result["timedOut"] is True
    assert "Exit code: -9 (killed by signal 9)" in outcome.content


def test_the_timeout_kills_the_whole_process_group(call: Call, quick: ToolBox) -> None:
    outcome = call("Bash", {"command": "sleep 30 & echo $!; sleep 30"}, quick)
    assert outcome.result["timedOut"] is True
    assert _gone(int(outcome.content.split("\n")[0]))


def test_a_background_child_holding_stdout_does_not_hang_the_call(call: Call) -> None:
    started = time.monotonic()
    outcome = call("Bash", {"command": "sleep 30 & echo $!"})  # bash_timeout=5 here
    assert time.monotonic() - started < 3
    assert outcome.result == {
        "exitCode": 0,
        "timedOut": False,
        "timeoutSeconds": 5.0,
        "outputChars": outcome.result["outputChars"],
        "cutChars": 0,
        "backgroundKilled": True,
    }
    assert "process group was killed" in outcome.content
    assert _gone(int(outcome.content.split("\n")[0]))


def test_a_background_child_with_its_own_output_keeps_running(call: Call) -> None:
    outcome = call("Bash", {"command": "sleep 30 > /dev/null 2>&1 & echo $!"})
    pid = int(outcome.content.split("\n")[0])
    try:
        assert outcome.result["backgroundKilled"] is False
        assert not _gone_now(pid)
    finally:
        os.kill(pid, 9)


def _gone_now(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_enormous_output_is_capped_with_the_cut_counted(call: Call) -> None:
    outcome = call("Bash", {"command": "head -c 100000 /dev/zero | tr '\\0' a; echo; echo END"})
    assert outcome.result["outputChars"] == 100_005
    assert outcome.result["cutChars"] == 98_005
    assert "[... 98,005 characters of output cut; showing the first 1,000 and the last 1,000" in (
        outcome.content
    )
    assert outcome.content.startswith("a" * 1000 + "\n[...")
    assert outcome.content.endswith("END\nExit code: 0")
    assert len(outcome.content) < 2200


def test_capped_output_keeps_head_and_tail_exactly() -> None:
    out = CappedOutput(10)
    for piece in (b"0123", b"45678", b"9abcdefgh", "ij\u00e9".encode()[:3]):
        out.feed(piece)
    out.feed("\u00e9".encode()[1:], final=True)
    assert out.total == 21
    assert out.cut == 11
    assert out.text().startswith("01234\n[... 11 characters of output cut")
    assert out.text().endswith("\nghij\u00e9")


def test_the_event_loop_is_not_blocked(ws: Path) -> None:
    box = ToolBox(ws, ["Bash"])
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    async def main() -> None:
        task = asyncio.create_task(ticker())
        await box.run("Bash", {"command": "sleep 0.3"})
        task.cancel()

    asyncio.run(main())
    assert ticks >= 10


async def _cancel_a_sleeping_call(box: ToolBox, pid_file: Path) -> tuple[int, bool]:
    """Cancel a Bash call once its bash is running: its pid, and whether
    ``/proc/<pid>`` was still there when the cancelled call gave control back."""
    pid_file.unlink(missing_ok=True)
    task = asyncio.create_task(box.run("Bash", {"command": f"echo $$ > {pid_file}; sleep 30"}))
    while not pid_file.exists() or not pid_file.read_text().strip():
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    pid = int(pid_file.read_text())
    return pid, os.path.exists(f"/proc/{pid}")


def test_cancelling_the_call_kills_the_group(ws: Path, tmp_path: Path) -> None:
    pid, _ = asyncio.run(_cancel_a_sleeping_call(ToolBox(ws, ["Bash"]), tmp_path / "pid"))
    assert _gone(pid)


def test_many_calls_leave_no_pipes_open(ws: Path) -> None:
    box = ToolBox(ws, ["Bash"])
    before = len(os.listdir("/proc/self/fd"))
    for command in ["echo x", "sleep 30 & echo y", "exit 1"] * 5:
        run_tool(box, "Bash", {"command": command})
    assert len(os.listdir("/proc/self/fd")) <= before + 2


def test_a_cancelled_call_returns_once_its_exit_is_collected(ws: Path, tmp_path: Path) -> None:
    """The call waits for the killed bash to be reaped before it gives the cancel back;
    otherwise a loop closed right after it hears of the exit too late and asyncio logs
    "Loop ... that handles pid ... is closed"."""
    box = ToolBox(ws, ["Bash"])
    still_there = [asyncio.run(_cancel_a_sleeping_call(box, tmp_path / "pid"))[1] for _ in range(5)]
    assert still_there == [False] * 5


def test_a_second_cancel_while_reaping_still_cleans_up(
    ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C twice: the second lands while the call waits for bash's exit. The group is
    still killed, its transport closed and the record of its running command removed."""
    unraisable: list[Any] = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    ledger = tmp_path / "running"
    box = ToolBox(ws, ["Bash"], ledger=ledger)
    pid_file = tmp_path / "pid"

    async def main() -> None:
        task = asyncio.create_task(box.run("Bash", {"command": f"echo $$ > {pid_file}; sleep 30"}))
        while not pid_file.exists() or not pid_file.read_text().strip():
            await asyncio.sleep(0.01)
        assert list(ledger.iterdir())
        task.cancel()
        await asyncio.sleep(0)  # the call is in its clean-up now, waiting for the exit
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    gc.collect()  # a transport left open complains as it goes: the loop is closed
    assert _gone(int(pid_file.read_text()))
    assert list(ledger.iterdir()) == []
    assert [str(u.exc_value) for u in unraisable] == []


def test_a_call_cancelled_while_bash_starts_ends_like_any_cancelled_call(
    ws: Path, tmp_path: Path
) -> None:
    """A cancel landing while asyncio still connects bash's pipes. asyncio's own
    clean-up of a start cut short kills bash alone: what bash started in its group
    lives on, holding the output open (and asyncio's reaping of bash behind the child
    watcher logs "Unknown child process pid ...")."""
    box = ToolBox(ws, ["Bash"])
    pid_file = tmp_path / "pid"

    async def main() -> None:
        loop = asyncio.get_running_loop()
        gate = asyncio.Event()  # holds the start after bash runs, before its pipes connect
        connect = loop.connect_read_pipe

        async def held(*args: Any, **kwargs: Any) -> Any:
            await gate.wait()
            return await connect(*args, **kwargs)

        loop.connect_read_pipe = held  # type: ignore[method-assign]
        command = f"sleep 60 & echo $! > {pid_file}; wait"
        task = asyncio.create_task(box.run("Bash", {"command": command}))
        while not pid_file.exists() or not pid_file.read_text().strip():
            await asyncio.sleep(0.01)
        task.cancel()
        await asyncio.sleep(0)
        gate.set()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, 10)

    child = 0
    try:
        asyncio.run(main())
        child = int(pid_file.read_text())
        assert _gone(child), "the command's background child outlived the cancelled call"
    finally:
        with contextlib.suppress(ValueError, OSError):
            os.kill(child or int(pid_file.read_text()), 9)
