"""flower.workflow.wake.begin: the steps of a wake in their order, with the user's side
played by a recording WakeIO (what the CLI reads and prints, without a terminal)."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flower.core.config import load_settings
from flower.core.errors import NothingToDoError
from flower.core.lineage import FreshStart, workspace_identity
from flower.core.rewind import RewindPlan
from flower.workflow.documents import documents
from flower.workflow.said import SaidRecord
from flower.workflow.state import WakeState
from flower.workflow.wake import WakeChoice, WakeStart, begin

BRIEF = "## 背景\nx\n## 要做什么\ny\n## 不做什么\nz\n## 怎样算完成\nw\n"


class Recorder:
    """A WakeIO that answers from a script and writes down what it was told, in order."""

    def __init__(self, *, task: str | None = None, choice: WakeChoice | None = None) -> None:
        self.task = task
        self.choice = choice or WakeChoice("continue")
        self.events: list[tuple[str, Any]] = []

    def preflight(self) -> None:
        self.events.append(("preflight", None))

    def ask_new_task(self) -> str | None:
        self.events.append(("ask_new_task", None))
        return self.task

    def ask_wake(self) -> WakeChoice:
        self.events.append(("ask_wake", None))
        return self.choice

    def rewind_finished(self, plan: RewindPlan) -> None:
        self.events.append(("rewind_finished", plan))

    def banner(self, state: WakeState | None) -> None:
        self.events.append(("banner", None if state is None else state.woke))

    def fresh_start(self, fresh: FreshStart) -> None:
        self.events.append(("fresh_start", fresh.reason))

    def passed_on(self, words: list[str]) -> None:
        self.events.append(("passed_on", words))

    def archived(self, into: Path) -> None:
        self.events.append(("archived", into))

    @property
    def names(self) -> list[str]:
        return [name for name, _ in self.events]


@pytest.fixture
def settings(in_tmp: Path) -> Any:
    return load_settings().settings


@contextlib.contextmanager
def wake(settings: Any, said: str | None, io: Recorder, **kw: Any) -> Iterator[WakeStart | None]:
    options = {"new": False, "interactive": False, **kw}
    with contextlib.ExitStack() as held:
        yield begin(settings, Path.cwd().resolve(), said, io=io, held=held, **options)


def brief_of(workspace: Path, settings: Any) -> Path:
    return documents(workspace, settings).brief


def used(workspace: Path, settings: Any) -> None:
    brief_of(workspace, settings).write_text(BRIEF, encoding="utf-8")


def test_a_first_run_checks_then_locks_then_shows_its_banner(in_tmp: Path, settings: Any) -> None:
    io = Recorder()
    with wake(settings, "写个脚本", io) as start:
        assert start is not None and start.said == "写个脚本"
        # the words are in the journal before anything can cut the run short
        unrecorded = start.journal.unrecorded(
            SaidRecord(), workspace_identity(in_tmp.resolve(), settings)
        )
        assert [said.text for said in unrecorded] == ["写个脚本"]
        assert (in_tmp / "runs" / "flower.lock").exists()  # held while the run goes on
    assert io.events == [("preflight", None), ("banner", 0)]


def test_nothing_to_carry_on_and_nothing_said_stops_before_anything(
    in_tmp: Path, settings: Any
) -> None:
    io = Recorder()
    lineage = re.escape("runs/lineage.json")
    with pytest.raises(NothingToDoError, match=lineage) as stopped, wake(settings, None, io):
        pass
    assert stopped.value.exit_code == 2 and io.events == []
    assert not (in_tmp / "runs").exists()  # nothing written
    with pytest.raises(NothingToDoError, match="--new"), wake(settings, None, io, new=True):
        pass
    assert io.events == []


def test_leaving_at_a_prompt_runs_nothing(in_tmp: Path, settings: Any) -> None:
    io = Recorder(task=None)
    with wake(settings, None, io, interactive=True) as start:
        assert start is None
    assert io.names == ["preflight", "ask_new_task"]
    assert not (in_tmp / "runs" / "flower.lock").exists()  # left before the lock

    used(in_tmp, settings)
    io = Recorder(choice=WakeChoice("leave"))
    with wake(settings, None, io, interactive=True) as start:
        assert start is None
    assert io.names == ["preflight", "banner", "ask_wake"]


def test_the_wake_prompt_says_more_and_a_cut_short_wakes_words_are_passed_on(
    in_tmp: Path, settings: Any
) -> None:
    used(in_tmp, settings)
    io = Recorder(choice=WakeChoice("interrupted"))
    with pytest.raises(KeyboardInterrupt), wake(settings, None, io, interactive=True):
        pass
    io = Recorder(choice=WakeChoice("say", "顺便支持代码块高亮"))
    with wake(settings, None, io, interactive=True) as start:
        assert start is not None and start.said == "顺便支持代码块高亮"
    # that run never recorded its words (no workflow ran): the next wake passes them on
    # first, and asks nothing (words were given)
    io = Recorder()
    with wake(settings, "再加一条", io, interactive=True) as start:
        assert start is not None and start.said == "再加一条"
    assert io.events == [
        ("preflight", None),
        ("banner", 0),
        ("passed_on", ["顺便支持代码块高亮"]),
    ]


def test_new_archives_the_last_conversation_then_shows_a_fresh_banner(
    in_tmp: Path, settings: Any
) -> None:
    used(in_tmp, settings)
    io = Recorder()
    with wake(settings, "另一件事", io, new=True) as start:
        assert start is not None and start.said == "另一件事"
        # the wake goes on with its one plan, which now says what the fresh start has
        assert not start.plan.state.checks.brief and not start.plan.lineage.found
    assert io.names == ["preflight", "archived", "banner"]
    into = io.events[1][1]
    name = brief_of(in_tmp, settings).name
    assert (into / name).read_text(encoding="utf-8") == BRIEF
    assert not (in_tmp / name).exists()
    assert io.events[2] == ("banner", None)


def test_new_at_the_wake_prompt_archives_after_the_banner_of_the_wake_it_replaces(
    in_tmp: Path, settings: Any
) -> None:
    used(in_tmp, settings)
    io = Recorder(choice=WakeChoice("new", "第三件事"))
    with wake(settings, None, io, interactive=True) as start:
        assert start is not None and start.said == "第三件事"
        assert not start.plan.state.checks.brief  # the plan of the fresh start, not read again
    assert io.names == ["preflight", "banner", "ask_wake", "archived", "banner"]
    assert not brief_of(in_tmp, settings).exists()
