from __future__ import annotations

from flower.core.display import first_line, human_tokens, relative_path, short_path, utc_time
from flower.workflow.banner import step_header, wake_banner


def test_seed_example_line() -> None:
    line = wake_banner(
        "/home/you/explore/test-ide",
        woke=3,
        brief_confirmed=True,
        goals=15,
        work_step="干活",
        context_tokens=80_213,
        home="/home/you",
    )
    expected = "<- 在 ~/explore/test-ide 接上上次  需求已确认 · 目标 15 条 · 干活上下文 80.2K"
    assert line == expected + " · 第 3 次唤醒"


def test_goals_only_when_non_empty_and_context_only_when_known() -> None:
    line = wake_banner(
        "/srv/p", woke=2, brief_confirmed=True, goals=0, work_step="干活", context_tokens=None
    )
    assert line == "<- 在 /srv/p 接上上次  需求已确认 · 第 2 次唤醒"


def test_human_tokens() -> None:
    assert human_tokens(999) == "999"
    assert human_tokens(80_213) == "80.2K"
    assert human_tokens(185_900) == "185.9K"
    assert human_tokens(1_250_000) == "1.25M"


def test_first_line_keeps_the_first_line_cut_with_an_ellipsis() -> None:
    assert first_line("  fix the parser\nthen the tests\n") == "fix the parser"
    assert first_line("abcdef", 4) == "abc…" and first_line("abcd", 4) == "abcd"
    assert first_line(" \n ") == ""


def test_utc_time_is_a_stores_milliseconds_in_utc() -> None:
    assert utc_time(0) == "1970-01-01 00:00:00Z"
    assert utc_time(1_700_000_000_123) == "2023-11-14 22:13:20Z"


def test_relative_path_only_shortens_inside_the_workspace() -> None:
    assert relative_path("/w/p/notes/archive/1", "/w/p") == "notes/archive/1"
    assert relative_path("/elsewhere/x", "/w/p") == "/elsewhere/x"


def test_short_path_only_abbreviates_inside_home() -> None:
    assert short_path("/home/you", home="/home/you") == "~"
    assert short_path("/home/younger/x", home="/home/you") == "/home/younger/x"


def test_step_header_resumed_and_fresh() -> None:
    resumed = step_header("干活", 3, 3, resumed=True, woke=3)
    assert resumed.startswith("== 干活 ===")
    assert resumed.endswith("  3/3  <- 接上次 · 第 3 次唤醒")
    assert step_header("work", 1, 3, resumed=False, woke=1).endswith("  1/3")


def test_a_rewind_since_the_last_wake_is_said_before_the_wake_count() -> None:
    line = wake_banner(
        "/srv/p",
        woke=4,
        brief_confirmed=True,
        goals=3,
        work_step="干活",
        context_tokens=1800,
        rewound=2,
    )
    said = "需求已确认 · 目标 3 条 · 干活上下文 1.8K · 退回 2 轮 · 第 4 次唤醒"
    assert line == f"<- 在 /srv/p 接上上次  {said}"
