"""Issue 23 item 7: a model that never writes a complete brief does not stop a first
run: with no one to ask the request becomes the brief, on a terminal the user is asked
once (the real terminal: tests/cli_run/test_wake_prompt.py)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from two_languages import FILES, REQUEST

from flower.cli.run import _request_as_brief
from flower.core.config import Settings
from flower.core.i18n import language
from flower.core.manifest import read_manifest
from flower.testing.fake_api import FakeMessagesAPI, RecordedRequest, text
from flower.workflow.clarify import is_complete_brief
from flower.workflow.live import Live

QUESTION = {"en": "Single file or a folder?", "zh_CN": "输出要单文件还是目录?"}
SAID = {
    "en": "   -> the request itself is the brief (brief.md); on to the goals and the work",
    "zh_CN": "   -> 这句话本身就是需求(需求.md),接着设定目标、干活",
}
MET = {"en": "1. met", "zh_CN": "1. 达成"}


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


@pytest.mark.parametrize("how", [["--yes"], []], ids=["yes", "no-terminal"])
@pytest.mark.parametrize("lang", ["en", "zh_CN"])
def test_a_model_that_never_writes_a_brief_still_gets_the_run_to_work(
    in_tmp: Path, fake: FakeMessagesAPI, monkeypatch: pytest.MonkeyPatch, lang: str, how: list[str]
) -> None:
    from typer.testing import CliRunner

    from flower.cli.main import build_app

    seen: list[RecordedRequest] = []

    def model(req: RecordedRequest) -> Any:
        seen.append(req)
        if len(seen) <= 6:  # the clarifier's exchanges: a question every time
            return text(QUESTION[lang])
        return text({7: "1. it runs", 8: "done"}.get(len(seen), MET[lang]))

    monkeypatch.setenv("FLOWER_LANG", lang)
    fake.set_script(model)
    result = CliRunner().invoke(build_app(), ["run", *how, REQUEST[lang]])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines.count(SAID[lang]) == 1
    # said after the clarifier's last question, before the goals are set
    said_at = lines.index(SAID[lang])
    assert lines[said_at - 1] == QUESTION[lang] and lines[said_at + 1].startswith("== ")
    assert len(seen) == 9  # six exchanges, the goal setter, the worker, the judge
    brief_file, goals_file = FILES[lang]
    brief = (in_tmp / brief_file).read_text(encoding="utf-8")
    assert REQUEST[lang] in brief and is_complete_brief(brief)
    assert REQUEST[lang] in json.dumps(seen[6].messages, ensure_ascii=False)  # the goal setter
    assert (in_tmp / goals_file).exists()
    steps = [r["step"] for r in read_manifest("runs")]
    if lang == "en":  # an English run's step keys are English
        assert steps == ["confirm the brief"] * 6 + ["set goals", "work", "work·judge#1"]
    else:
        assert steps == ["确认需求"] * 6 + ["设定目标", "干活", "干活·判定#1"]
    assert all(r["ok"] for r in read_manifest("runs"))
