"""A first run on a terminal asks once whether the request itself may be the brief."""

from __future__ import annotations

import io

import pytest

from flower.cli.live import Live
from flower.cli.run import _request_as_brief
from flower.core.config import Settings
from flower.core.i18n import language


@pytest.mark.parametrize(("typed", "goes_on"), [("", True), ("y", True), ("n", False)])
def test_a_terminal_is_asked_once(typed: str, goes_on: bool) -> None:
    shown, asked = io.StringIO(), io.StringIO()
    reads: list[str] = []

    def read() -> str:
        reads.append(typed)
        return typed

    decide = _request_as_brief(Live(shown, rich=False), Settings(), read, asked)
    with language("en"):
        assert decide("write a script") is goes_on
    assert len(reads) == 1
    assert "Go on with your request itself as the brief?" in asked.getvalue()
    said = "the request itself is the brief (brief.md); on to the goals and the work"
    assert (said in shown.getvalue()) is goes_on


def test_end_of_input_on_the_question_stops() -> None:
    def read() -> str:
        raise EOFError

    shown = io.StringIO()
    decide = _request_as_brief(Live(shown, rich=False), Settings(), read, io.StringIO())
    assert decide("写个脚本") is False and shown.getvalue() == ""


def test_no_terminal_goes_on_and_says_so_in_chinese() -> None:
    shown = io.StringIO()
    decide = _request_as_brief(Live(shown, rich=False), Settings(), None, io.StringIO())
    with language("zh_CN"):
        assert decide("写个脚本") is True
    assert shown.getvalue() == "   -> 这句话本身就是需求(需求.md),接着设定目标、干活\n"
