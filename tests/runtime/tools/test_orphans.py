"""The ledger of running commands: a group is killed only once its flower is gone."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest
from tool_helpers import run_tool

from flower.runtime.tools import ToolBox
from flower.runtime.tools.orphans import (
    SPAWN_VARIABLE,
    RunningCommand,
    SpawningCommand,
    announce,
    forget,
    group_alive,
    groups_carrying,
    reap,
    record,
    start_time,
)


def wait_until_dead(group: int) -> bool:
    deadline = time.monotonic() + 3.0
    while time.monotonic() < deadline:
        if not group_alive(group):
            return True
        time.sleep(0.02)
    return False


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    """``sleep`` with a child of its own, leading a process group like a Bash call."""
    proc = subprocess.Popen(["/bin/bash", "-c", "sleep 300 & wait"], start_new_session=True)
    yield proc
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def dead_process() -> tuple[int, int]:
    """The pid and start time of a process that has ended."""
    proc = subprocess.Popen(["/bin/true"])
    started = start_time(proc.pid)
    proc.wait()
    assert started is not None
    return proc.pid, started


def write(ledger: Path, entry: RunningCommand) -> Path:
    ledger.mkdir(exist_ok=True)
    path = ledger / f"{entry.group}.json"
    path.write_bytes(msgspec.json.encode(entry))
    return path


def test_start_time_reads_proc_and_is_none_for_no_process() -> None:
    assert start_time(os.getpid()) is not None
    assert start_time(dead_process()[0]) is None


def test_a_record_names_this_process_and_the_group(
    tmp_path: Path, sleeper: subprocess.Popen[bytes]
) -> None:
    path = record(tmp_path / "running", sleeper.pid, "sleep 300")
    assert path is not None and path.parent == tmp_path / "running"
    entry = msgspec.json.decode(path.read_bytes(), type=RunningCommand)
    assert (entry.group, entry.owner, entry.command) == (sleeper.pid, os.getpid(), "sleep 300")
    assert entry.group_started == start_time(sleeper.pid)
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    forget(path)
    assert not path.exists()


def test_no_ledger_or_no_room_records_nothing(tmp_path: Path) -> None:
    assert record(None, os.getpid(), "true") is None
    (tmp_path / "file").write_text("")
    assert record(tmp_path / "file" / "running", os.getpid(), "true") is None


def test_the_group_of_a_gone_flower_is_killed(
    tmp_path: Path, sleeper: subprocess.Popen[bytes]
) -> None:
    owner, owner_started = dead_process()
    started = start_time(sleeper.pid)
    assert started is not None
    path = write(
        tmp_path, RunningCommand(sleeper.pid, started, owner, owner_started, "sleep 300 & wait")
    )
    assert reap(tmp_path) == ["sleep 300 & wait"]
    assert wait_until_dead(sleeper.pid)  # the background sleep too: the whole group
    assert not path.exists()


def test_a_live_flower_keeps_its_group_and_record(
    tmp_path: Path, sleeper: subprocess.Popen[bytes]
) -> None:
    path = record(tmp_path, sleeper.pid, "sleep 300 & wait")
    assert path is not None
    assert reap(tmp_path) == []
    assert group_alive(sleeper.pid) and path.exists()


def test_a_pid_given_to_another_process_is_not_killed(
    tmp_path: Path, sleeper: subprocess.Popen[bytes]
) -> None:
    owner, owner_started = dead_process()
    started = start_time(sleeper.pid)
    assert started is not None
    path = write(tmp_path, RunningCommand(sleeper.pid, started - 1, owner, owner_started, "x"))
    assert reap(tmp_path) == []
    assert group_alive(sleeper.pid)
    assert not path.exists()  # nothing left to watch: the recorded group is gone


def test_a_torn_record_is_dropped(tmp_path: Path) -> None:
    (tmp_path / "123.json").write_bytes(b'{"group": 123, "group_sta')
    assert reap(tmp_path) == []
    assert list(tmp_path.iterdir()) == []


def test_a_missing_ledger_reaps_nothing(tmp_path: Path) -> None:
    assert reap(tmp_path / "running") == []


def test_bash_records_while_it_runs_and_forgets_after(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    ledger = tmp_path / "running"
    box = ToolBox(workspace, ["Bash"], ledger=ledger)
    outcome = run_tool(box, "Bash", {"command": "sleep 0.5; ls ../running"})
    assert outcome.result["exitCode"] == 0, outcome.content
    listed = outcome.content.split("\n")[0]
    assert listed.removesuffix(".json").isdigit()  # its own record, seen from inside it
    assert list(ledger.iterdir()) == []


# -- the moment between a command's start and its record ------------------------------


def carrying(token: str) -> subprocess.Popen[bytes]:
    """A group like a Bash call's, its environment carrying an announcement's token
    (returned once bash runs: before its exec the child still has this environment)."""
    env = {**os.environ, SPAWN_VARIABLE: token}
    proc = subprocess.Popen(
        ["/bin/bash", "-c", "sleep 300 & wait"], start_new_session=True, env=env
    )
    deadline = time.monotonic() + 3.0
    while not groups_carrying(token) and time.monotonic() < deadline:
        time.sleep(0.01)
    return proc


def test_an_announcement_names_its_token_and_a_live_flower_keeps_it(tmp_path: Path) -> None:
    announced = announce(tmp_path, "sleep 300")
    assert announced is not None
    token, path = announced
    entry = msgspec.json.decode(path.read_bytes(), type=SpawningCommand)
    assert (entry.token, entry.owner, entry.command) == (token, os.getpid(), "sleep 300")
    proc = carrying(token)
    try:
        assert reap(tmp_path) == [] and path.exists() and group_alive(proc.pid)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def test_the_groups_of_a_gone_flowers_announcement_are_killed_others_are_not(
    tmp_path: Path, sleeper: subprocess.Popen[bytes]
) -> None:
    owner, owner_started = dead_process()
    left = carrying("left-behind")
    path = tmp_path / "spawning-left-behind.json"
    path.write_bytes(
        msgspec.json.encode(SpawningCommand("left-behind", owner, owner_started, "sleep 300"))
    )
    try:
        assert groups_carrying("left-behind") == {left.pid}
        assert reap(tmp_path) == ["sleep 300"]
        assert wait_until_dead(left.pid) and not path.exists()
        assert group_alive(sleeper.pid)  # no token: not one of the announced commands
    finally:
        if left.poll() is None:
            os.killpg(left.pid, signal.SIGKILL)
        left.wait()


def test_a_group_both_announced_and_recorded_is_one_command(tmp_path: Path) -> None:
    """A flower killed after it recorded the group and before it dropped the
    announcement leaves both: the command was left running once, not twice."""
    owner, owner_started = dead_process()
    left = carrying("both")
    try:
        started = start_time(left.pid)
        assert started is not None
        (tmp_path / "spawning-both.json").write_bytes(
            msgspec.json.encode(SpawningCommand("both", owner, owner_started, "sleep 300"))
        )
        write(tmp_path, RunningCommand(left.pid, started, owner, owner_started, "sleep 300"))
        assert reap(tmp_path) == ["sleep 300"]
        assert wait_until_dead(left.pid) and list(tmp_path.iterdir()) == []
    finally:
        if left.poll() is None:
            os.killpg(left.pid, signal.SIGKILL)
        left.wait()


# flower running one Bash call, killed (SIGKILL) after the command started and before
# its record was written
KILLED_BEFORE_THE_RECORD = """\
import asyncio, os, signal, sys
from pathlib import Path
import flower.runtime.tools.bash as bash
from flower.runtime.tools import ToolBox

def killed(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)

bash.record = killed
workspace, ledger = Path(sys.argv[1]), Path(sys.argv[2])
box = ToolBox(workspace, ["Bash"], ledger=ledger)
asyncio.run(box.run("Bash", {"command": "sleep 300 & sleep 301"}))
"""


def test_a_command_started_just_before_a_kill_9_is_killed_by_the_next_run(
    tmp_path: Path,
) -> None:
    import sys

    workspace = tmp_path / "ws"
    workspace.mkdir()
    ledger = tmp_path / "running"
    done = subprocess.run(
        [sys.executable, "-c", KILLED_BEFORE_THE_RECORD, str(workspace), str(ledger)],
        timeout=30,
    )
    assert done.returncode == -signal.SIGKILL
    (path,) = ledger.glob("spawning-*.json")
    token = msgspec.json.decode(path.read_bytes(), type=SpawningCommand).token
    (group,) = groups_carrying(token)
    try:
        assert group_alive(group)  # the command outlived its flower
        assert reap(ledger) == ["sleep 300 & sleep 301"]
        assert wait_until_dead(group)
        assert list(ledger.iterdir()) == []
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(group, signal.SIGKILL)


def test_bash_leaves_no_announcement_behind(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    ledger = tmp_path / "running"
    box = ToolBox(workspace, ["Bash"], ledger=ledger)
    outcome = run_tool(box, "Bash", {"command": f'printf %s "${SPAWN_VARIABLE}"'})
    token = outcome.content.split("\n")[0]
    assert len(token) == 32  # the command carried its token
    assert list(ledger.iterdir()) == []
