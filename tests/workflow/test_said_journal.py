"""Words said to a run are kept in ``<run_dir>/said.json`` until lineage holds them."""

from __future__ import annotations

import asyncio
import json
import stat
from pathlib import Path

import pytest
from test_builtin import BRIEF, _said_count, standard_model, wake
from workflow_helpers import user_prompts

from flower.core.lineage import Lineage
from flower.stores.lineage import load_lineage
from flower.testing.fake_api import FakeMessagesAPI
from flower.workflow.said import (
    KEEP_TOKENS,
    Said,
    SaidJournal,
    SaidJournalWarning,
    SaidRecord,
    said_record,
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
    record = SaidRecord()
    record.mark_recorded(journal.entries()[:1])
    assert [said.text for said in journal.unrecorded(record, "/ws")] == ["second"]
    journal.add("elsewhere", "/other")  # a run dir may serve several workspaces
    assert journal.unrecorded(SaidRecord(), "/other") == [journal.entries()[-1]]
    journal.clear("/ws")
    assert [said.text for said in journal.entries()] == ["elsewhere"]
    journal.clear("/other")
    assert not journal.path.exists()
    journal.clear("/other")  # nothing to clear is fine


def test_words_given_a_token_are_kept_once_under_it(in_tmp: Path) -> None:
    """A fleet task passes its words on at each execution under one token: the
    journal keeps them once, and lineage recording the token leaves nothing unrecorded."""
    journal = SaidJournal("runs")
    assert journal.add("do it", "/ws", "fleet-1") == "fleet-1"
    assert journal.add("do it", "/ws", "fleet-1") == "fleet-1"
    assert [(s.token, s.text) for s in journal.entries()] == [("fleet-1", "do it")]
    record = SaidRecord()
    record.mark_recorded(journal.entries())
    assert journal.unrecorded(record, "/ws") == []


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
    record = SaidRecord(tokens=["old"] * 10)
    record.mark_recorded([Said(token, "x") for token in journal_words])
    assert record.tokens == journal_words


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
    assert said_record(load_lineage(".", run_dir="runs").record.extra).unheard == [
        "also support tables"
    ]

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

    def full_disk(self: Lineage, **kw: object) -> bool:
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
    from flower.workflow.said import ClarifyMemo, SaidWords

    lineage = load_lineage(".", run_dir="runs")
    memo = ClarifyMemo(SaidWords(lineage))
    memo.said("the killed run's words", "this run's")
    kept = said_record(load_lineage(".", run_dir="runs").record.extra)
    assert kept.clarifier_unheard == ["the killed run's words", "this run's"]
    assert not kept.goals_stale  # the goals come after the brief anyway


def test_a_directory_an_older_flower_left_is_read_and_carried_on(
    in_tmp: Path, fake: FakeMessagesAPI
) -> None:
    """Lineage with the words under the older keys (one per field, beside the steps) and
    a said.json whose entries name no workspace: read, passed on once, then rewritten
    under the one key."""
    from flower.workflow.base import wake_state

    fake.set_script(standard_model())
    asyncio.run(wake("写个 md 转 html 的脚本"))
    path = Path("runs/lineage.json")
    record = json.loads(path.read_text(encoding="utf-8"))
    record.pop("said", None)
    record["unheard"] = ["also support tables"]  # a wake cut short before the worker heard
    record["goals_stale"] = True
    record["unheard_sent_after"] = {"session": None, "entries": 0}
    record["said_tokens"] = ["recorded-before-the-kill"]
    path.write_text(json.dumps(record, ensure_ascii=False), encoding="utf-8")
    old_journal = [
        {"token": "recorded-before-the-kill", "text": "also support tables"},
        {"token": "never-recorded", "text": "and footnotes"},  # a run killed before lineage
    ]
    Path("runs/said.json").write_text(json.dumps(old_journal), encoding="utf-8")

    checks = wake_state(".", "runs")["checks"]
    assert checks["unheard"] == ["also support tables"]
    assert checks["unrecorded"] == ["and footnotes"]
    assert checks["goals_stale"] is True

    model = standard_model()
    fake.set_script(model)
    ctx = asyncio.run(wake(None, journal=SaidJournal("runs")))
    assert ctx["_ok"]
    worker = model.seen["worker"][0]
    assert _said_count(worker, "also support tables") == 1
    assert _said_count(worker, "and footnotes") == 1
    assert model.seen["goal-setter"]  # the goals were derived again, as the old key said
    assert not Path("runs/said.json").exists()
    after = json.loads(path.read_text(encoding="utf-8"))
    old_keys = {"unheard", "goals_stale", "unheard_sent_after", "said_tokens", "request"}
    assert not old_keys & set(after)
    assert "unheard" not in after["said"] and "never-recorded" in after["said"]["tokens"]


def test_a_task_run_again_after_many_words_since_says_its_words_once(
    in_tmp: Path, fake: FakeMessagesAPI
) -> None:
    """A fleet task's words, recorded by its first execution; then more words than
    lineage keeps tokens of are recorded in the workspace; then the task runs again (a
    takeover) and passes its words on under the same token: lineage still knows them."""
    from test_wake_begin import Recorder
    from test_wake_begin import wake as begin_wake

    from flower.core.config import load_settings

    fake.set_script(standard_model())
    asyncio.run(wake("写个 md 转 html 的脚本"))
    journal = SaidJournal("runs")
    journal.add("also support tables", here(), "fleet-task-1")  # the task's words
    fake.set_script(standard_model())
    assert asyncio.run(wake("also support tables", journal=journal))["_ok"]
    for n in range(KEEP_TOKENS + 1):  # runs killed before lineage held their words
        journal.add(f"and feature {n}", here())
    fake.set_script(standard_model())
    assert asyncio.run(wake(None, journal=journal))["_ok"]
    with begin_wake(
        load_settings().settings, "also support tables", Recorder(), token="fleet-task-1"
    ) as start:
        assert start is not None and start.said is None  # recorded: heard, not said again
    assert not journal.path.exists()
