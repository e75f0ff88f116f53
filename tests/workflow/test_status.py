"""flower status's words from Python: flower.workflow.status."""

from __future__ import annotations

from pathlib import Path

import msgspec

from flower.core.config import Settings
from flower.core.i18n import language
from flower.core.lineage import workspace_identity
from flower.workflow.plan import wake_state
from flower.workflow.said import SaidJournal
from flower.workflow.status import (
    STATUS_NOTHING,
    STATUS_STOPS,
    STATUS_WAKES,
    StatusFact,
    describe_state,
    next_run,
    status_code,
    status_facts,
)


def test_a_new_workspace_has_nothing_to_resume(in_tmp: Path) -> None:
    settings = Settings()
    state = wake_state(in_tmp, "runs", settings=settings)
    with language("en"):
        facts = status_facts(state, in_tmp, settings)
        said = next_run(state, settings)
        lines = describe_state(state, in_tmp, settings)
    assert said == 'nothing to resume: flower "what to do" starts something'
    assert facts[-1] == StatusFact("next", "next", said)
    assert [fact.key for fact in facts] == ["workspace", "lineage", "brief", "goals", "next"]
    assert lines[-1] == "next        " + said


def test_the_labels_follow_the_language_and_the_keys_do_not(in_tmp: Path) -> None:
    settings = Settings()
    state = wake_state(in_tmp, "runs", settings=settings)
    with language("zh_CN"):
        facts = status_facts(state, in_tmp, settings)
    assert facts[-1].key == "next" and facts[-1].label == "下一步"


def test_next_run_names_the_words_a_killed_run_left(in_tmp: Path) -> None:
    settings = Settings()
    journal = SaidJournal(settings.run_path, settings)
    journal.add("write  a\nparser", workspace_identity(in_tmp, settings))
    state = wake_state(in_tmp, "runs", settings=settings)
    with language("en"):
        said = next_run(state, settings)
    assert said == "`flower` starts on the request a killed run left: write a parser"


def test_status_code_says_whether_a_bare_flower_would_wake(in_tmp: Path) -> None:
    settings = Settings()
    state = wake_state(in_tmp, "runs", settings=settings)
    assert status_code(state, settings) == STATUS_NOTHING == 1
    journal = SaidJournal(settings.run_path, settings)
    journal.add("write a parser", workspace_identity(in_tmp, settings))
    left = wake_state(in_tmp, "runs", settings=settings)
    assert status_code(left, settings) == STATUS_WAKES == 0
    unreadable = msgspec.structs.replace(
        left, checks=msgspec.structs.replace(left.checks, store="not a database")
    )
    assert status_code(unreadable, settings) == STATUS_STOPS == 3
