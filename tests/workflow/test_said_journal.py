"""Words said to a run are kept in ``<run_dir>/said.json`` until lineage holds them."""

from __future__ import annotations

import asyncio
import stat
from pathlib import Path
from typing import Any

import pytest
from test_builtin import BRIEF, _said_count, standard_model, wake
from workflow_helpers import user_prompts

from flower.core.lineage import Lineage
from flower.stores.lineage import load_lineage
from flower.testing.fake_api import FakeMessagesAPI
from flower.workflow.said_journal import (
    RECORDED_TOKENS,
    SaidJournal,
    SaidJournalWarning,
    mark_recorded,
)


def here() -> str:
    """The workspace the tests run in, as lineage names it."""
    import os

    return os.path.realpath(".")


def test_words_are_kept_in_order_privately_and_cleared(in_tmp: Path) -> None:
    journal = SaidJournal("runs")
    assert journal.entries() == []
    journal.add("first", "/ws")
    journal.add("second", "/ws")
    assert [said.text for said in journal.entries()] == ["first", "second"]
    assert stat.S_IMODE(journal.path.stat().st_mode) == 0o600
    extra: dict[str, Any] = {}
    mark_recorded(extra, journal.entries()[:1])
    assert [said.text for said in journal.unrecorded(extra, "/ws")] == ["second"]
    journal.add("elsewhere", "/other")  # a run dir may serve several workspaces
    assert journal.unrecorded({}, "/other") == [journal.entries()[-1]]
    journal.clear("/ws")
    assert [said.text for said in journal.entries()] == ["elsewhere"]
    journal.clear("/other")
    assert not journal.path.exists()
    journal.clear("/other")  # nothing to clear is fine


def test_an_unreadable_journal_is_set_aside_not_deleted(in_tmp: Path) -> None:
    journal = SaidJournal("runs")
    journal.path.parent.mkdir()
    journal.path.write_text("{half a rec", encoding="utf-8")
    with pytest.warns(SaidJournalWarning, match="said.json"):
        assert journal.entries() == []
    aside = list(journal.path.parent.glob("said.json.unreadable-*"))
    assert [p.read_text(encoding="utf-8") for p in aside] == ["{half a rec"]


def test_recorded_tokens_stay_bounded_but_cover_one_whole_journal() -> None:
    journal_words = [f"t{i}" for i in range(40)]
    extra: dict[str, Any] = {RECORDED_TOKENS: ["old"] * 10}
    from flower.workflow.said_journal import Said

    mark_recorded(extra, [Said(token, "x") for token in journal_words])
    assert extra[RECORDED_TOKENS] == journal_words


def test_a_first_request_a_killed_run_kept_only_in_the_journal_reaches_the_clarifier(
    in_tmp: Path, fake: FakeMessagesAPI
) -> None:
    journal = SaidJournal("runs")
    journal.add("写个 md 转 html 的脚本", here())  # the CLI's write; the run died before lineage
    model = standard_model()
    fake.set_script(model)
    ctx = asyncio.run(wake(None, journal=journal))
    assert ctx["_ok"]
    assert "写个 md 转 html 的脚本" in user_prompts(model.seen["clarifier"][0])[0]
    assert not journal.path.exists()
    assert Path("需求.md").read_text(encoding="utf-8").strip() == BRIEF.split("\n", 1)[1].strip()


def test_words_a_killed_wake_kept_only_in_the_journal_reach_the_worker_once(
    in_tmp: Path, fake: FakeMessagesAPI
) -> None:
    fake.set_script(standard_model())
    asyncio.run(wake("写个 md 转 html 的脚本"))
    journal = SaidJournal("runs")
    journal.add("also support tables", here())  # a killed wake's words
    journal.add("and footnotes", here())  # this run's
    model = standard_model()
    fake.set_script(model)
    ctx = asyncio.run(wake("and footnotes", journal=journal))
    assert ctx["_ok"]
    worker = model.seen["worker"][0]
    assert _said_count(worker, "also support tables") == 1
    assert _said_count(worker, "and footnotes") == 1
    prompt = user_prompts(worker)[-1]
    assert prompt.index("also support tables") < prompt.index("and footnotes")
    assert not journal.path.exists()
    assert "also support tables" in Path("需求.md").read_text(encoding="utf-8")


def left_by_a_killed_wake(fake: FakeMessagesAPI, words: str) -> SaidJournal:
    """After a first run that went all the way: the journal a wake killed before its
    lineage write left, holding ``words``."""
    fake.set_script(standard_model())
    asyncio.run(wake("写个 md 转 html 的脚本"))
    journal = SaidJournal("runs")
    journal.add(words, here())
    return journal


def test_a_kill_between_lineage_and_clearing_the_journal_says_nothing_twice(
    in_tmp: Path, fake: FakeMessagesAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    journal = left_by_a_killed_wake(fake, "also support tables")

    def killed(self: SaidJournal, workspace: str) -> None:
        raise KeyboardInterrupt  # lineage holds the words; the journal still does too

    fake.set_script(standard_model())
    with monkeypatch.context() as patched, pytest.raises(KeyboardInterrupt):
        patched.setattr(SaidJournal, "clear", killed)
        asyncio.run(wake("also support tables", journal=journal))
    assert journal.path.exists()
    assert load_lineage(".", run_dir="runs").record.extra["unheard"] == ["also support tables"]

    model = standard_model()
    fake.set_script(model)
    ctx = asyncio.run(wake(None, journal=journal))
    assert ctx["_ok"]
    assert _said_count(model.seen["worker"][0], "also support tables") == 1
    assert not journal.path.exists()


def test_an_archive_takes_only_its_own_workspaces_words(in_tmp: Path) -> None:
    journal = SaidJournal("runs")
    journal.add("mine", "/ws")
    journal.add("theirs", "/other")
    journal.move_to(Path("archive"), "/ws")
    assert [said.text for said in SaidJournal("archive").entries()] == ["mine"]
    assert [said.text for said in journal.entries()] == ["theirs"]
    journal.move_to(Path("archive2"), "/ws")  # nothing of /ws left: no file written
    assert not Path("archive2").exists()
    # --new keeps its own task, written before the archive, out of it
    journal.add("old words", "/ws")
    task = journal.add("the new task", "/ws")
    journal.move_to(Path("archive3"), "/ws", keep=task)
    assert [said.text for said in SaidJournal("archive3").entries()] == ["old words"]
    assert [said.text for said in journal.entries()] == ["theirs", "the new task"]


def test_words_stay_in_the_journal_when_lineage_could_not_be_written(
    in_tmp: Path, fake: FakeMessagesAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    journal = left_by_a_killed_wake(fake, "also support tables")

    def full_disk(self: Lineage) -> bool:
        return False  # as Lineage.save reports an OSError: swallowed, never raised

    fake.set_script(standard_model())
    with monkeypatch.context() as patched:
        patched.setattr(Lineage, "save", full_disk)
        asyncio.run(wake(None, journal=journal))
    assert [said.text for said in journal.entries()] == ["also support tables"]
    model = standard_model()
    fake.set_script(model)
    assert asyncio.run(wake(None, journal=journal))["_ok"]  # the disk has room again
    # lineage never learnt they were heard: said again rather than lost
    assert "also support tables" in user_prompts(model.seen["worker"][0])[-1]
    assert not journal.path.exists()


def test_a_lone_surrogate_is_kept_as_it_was_said(in_tmp: Path) -> None:
    journal = SaidJournal("runs")
    journal.add("cut mid-emoji \ud83d", "/ws")
    assert [said.text for said in journal.entries()] == ["cut mid-emoji \ud83d"]


def test_a_clarifier_yet_to_confirm_keeps_every_word_a_killed_run_left(
    in_tmp: Path, fake: FakeMessagesAPI
) -> None:
    from flower.workflow.builtin import ClarifyMemo

    lineage = load_lineage(".", run_dir="runs")
    memo = ClarifyMemo(lineage)
    memo.said("the killed run's words", "this run's")
    kept = load_lineage(".", run_dir="runs").record.extra
    assert kept["unheard_by_clarifier"] == ["the killed run's words", "this run's"]
    assert "clarify_goals_stale" not in kept  # the goals come after the brief anyway
