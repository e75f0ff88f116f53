"""What a wake shows, as typed data, from Python: flower.workflow.banner."""

from __future__ import annotations

from pathlib import Path

import msgspec

from flower.core.config import Settings
from flower.core.i18n import language
from flower.workflow.banner import (
    BannerLine,
    archived_said,
    passed_on_said,
    wake_banner_lines,
)
from flower.workflow.state import WakeChecks, WakeState


def test_a_fresh_start_is_wake_1_and_one_banner_line(in_tmp: Path) -> None:
    with language("en"):
        banner = wake_banner_lines(None, in_tmp, Settings())
    assert banner.woke == 1
    assert banner.lines == [BannerLine(f"-> starting something new in {in_tmp}", "banner")]


def test_a_resumed_wake_counts_on_and_names_the_lost_sessions(in_tmp: Path) -> None:
    checks = WakeChecks(
        lineage="ok",
        fresh=None,
        recorded={"clarify": "c1", "work": "w1"},
        alive={"clarify": False, "work": True},
        context={"work": 80_213},
        brief=True,
        goals=2,
        store=None,
        request=None,
        goals_stale=False,
        unrecorded=[],
        rewound=None,
    )
    settings = msgspec.structs.replace(
        Settings(),
        workflow=msgspec.structs.replace(Settings().workflow, work_step="work"),
    )
    state = WakeState(waking=True, checks=checks, woke=2, steps={"work": "w1"})
    with language("en"):
        banner = wake_banner_lines(state, in_tmp, settings)
    assert banner.woke == 3
    first, lost = banner.lines
    assert first.tone == "banner" and first.text.startswith("<- carrying on in ")
    assert first.text.endswith("brief confirmed · 2 goals · work context 80.2K · wake 3")
    assert lost.tone == "warning" and "clarify" in lost.text and "work" not in lost.text


def test_the_lines_under_the_banner(in_tmp: Path) -> None:
    with language("en"):
        passed = passed_on_said(["fix  the\nparser"])
        moved = archived_said(in_tmp / "notes" / "archive" / "1", in_tmp)
    assert passed.tone == "warning" and passed.text.endswith("passing it on now: fix the parser")
    assert moved == BannerLine("   archived the last conversation into notes/archive/1/", "note")


def test_a_step_heading_counts_rounds_for_the_work_step_and_its_judge() -> None:
    from flower.workflow.banner import step_heading

    def head(label: str, resumed: bool = False) -> str:
        return step_heading(label, resumed=resumed, rounds=3, work_step="work", woke=2)

    with language("en"):
        assert head("work#round2").split()[-1] == "2/3"
        assert head("work·judge#2").split()[-1] == "2/3"
        assert "carrying on" not in head("work·judge#2")
        assert head("work#retry1").split()[-1] == "1/1"
        assert head("clarify", resumed=True).endswith("1/1  <- carrying on · wake 2")
        assert head("work").split()[-1] == "1/3"
