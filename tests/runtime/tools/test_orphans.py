"""The ledger of running commands: a group is killed only once its flower is gone."""

from __future__ import annotations

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
    RunningCommand,
    forget,
    group_alive,
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
