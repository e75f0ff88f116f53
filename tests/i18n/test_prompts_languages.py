"""What the model reads follows the wake's language: one language per wake, never mixed."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest
from two_languages import BRIEF, FILES, REQUEST

from flower.core.i18n import language
from flower.testing.fake_api import FakeMessagesAPI, RecordedRequest, reply, text, tool_use
from flower.workflow.builtin import builtin_workflow
from flower.workflow.clarify import is_complete_brief

CJK = re.compile(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]")
LATIN_WORD = re.compile(r"\b(?:the|and|brief|goals?|you|workspace)\b", re.IGNORECASE)
GOALS_FILE = {"en": "# Goals\n\n1. it runs\n", "zh_CN": "# 目标\n\n1. it runs\n"}


def _words(req: RecordedRequest) -> str:
    """Everything flower wrote into the request: the system prompt and the user turns."""
    system = req.body.get("system")
    parts = [system if isinstance(system, str) else json.dumps(system, ensure_ascii=False)]
    for message in req.messages:
        if message["role"] == "user":
            parts.append(json.dumps(message["content"], ensure_ascii=False))
    return "\n".join(parts)


def _model(lang: str, seen: list[RecordedRequest]) -> Any:
    def answer(req: RecordedRequest) -> Any:
        seen.append(req)
        system = _words(req).split("\n", 1)[0]
        n = len(seen)
        if n == 1:
            return text(BRIEF[lang])  # the clarifier
        if n == 2:
            return text("1. it runs")  # the goal setter
        if "1. " in system or n == 4:
            return text("1. met")  # the judge
        return text("done")

    return answer


@pytest.mark.parametrize("lang", ["en", "zh_CN"])
def test_a_wake_sends_the_model_one_language(
    in_tmp: Path, fake: FakeMessagesAPI, lang: str
) -> None:
    from flower.runtime.engine import Runtime

    seen: list[RecordedRequest] = []
    fake.set_script(_model(lang, seen))
    with language(lang):
        rt = Runtime(workspace=".", run_dir="runs")
        try:
            ctx = asyncio.run(builtin_workflow(REQUEST[lang], settings=rt.settings).run(rt))
        finally:
            rt.close()
    assert ctx["_ok"], ctx.get("_failed")
    assert len(seen) == 4  # clarifier, goal setter, worker, judge
    brief, goals = FILES[lang]
    assert is_complete_brief((in_tmp / brief).read_text(encoding="utf-8"))
    assert (in_tmp / goals).read_text(encoding="utf-8") == GOALS_FILE[lang]
    assert sorted(p.name for p in in_tmp.glob("*.md")) == sorted(FILES[lang])
    for req in seen:
        words = _words(req)
        if lang == "en":
            assert not CJK.search(words), words
        else:
            assert CJK.search(words) and not LATIN_WORD.search(words), words


NOTE = {
    "en": "[the previous round was interrupted here; this tool result was never produced]",
    "zh_CN": "[上一轮在这里被打断了;这个工具结果没有产生]",
}
RESUME = {
    "en": "Carry on from where the work stopped last time.",
    "zh_CN": "接着上次的进度继续做。",
}


@pytest.mark.parametrize("lang", ["en", "zh_CN"])
def test_a_wake_after_a_tool_was_cut_says_so_in_its_language(
    in_tmp: Path, fake: FakeMessagesAPI, monkeypatch: pytest.MonkeyPatch, lang: str
) -> None:
    """The note answering the call a kill cut off is made when the request is built, in
    that wake's language: the resumed request holds it and not the other language's."""
    from flower.runtime.engine import Runtime
    from flower.runtime.tools.box import ToolBox

    (in_tmp / "notes.txt").write_text("tulip\n", encoding="utf-8")
    seen: list[RecordedRequest] = []

    def answer(req: RecordedRequest) -> Any:
        seen.append(req)
        if len(seen) == 1:
            return text(BRIEF[lang])
        if len(seen) == 2:
            return text("1. it runs")
        if len(seen) == 3:  # the worker's first turn: a tool the kill cuts off
            return reply(tool_use("Read", {"file_path": "notes.txt"}, id="toolu_cut"))
        return text("done") if len(seen) == 4 else text("1. met" if lang == "en" else "1. 达成")

    async def killed(self: ToolBox, name: str, tool_input: Any) -> Any:
        raise KeyboardInterrupt  # the process dies while the tool runs

    def wake(request: str | None) -> dict[str, Any]:
        rt = Runtime(workspace=".", run_dir="runs")
        try:
            return asyncio.run(builtin_workflow(request, settings=rt.settings).run(rt))
        finally:
            rt.close()

    fake.set_script(answer)
    with language(lang):
        with monkeypatch.context() as patched:
            patched.setattr(ToolBox, "run", killed)
            with pytest.raises(KeyboardInterrupt):
                wake(REQUEST[lang])
        assert len(seen) == 3
        ctx = wake(None)
    assert ctx["_ok"], ctx.get("_failed")
    resumed = seen[3]
    answers = [
        block
        for message in resumed.messages
        if message["role"] == "user" and isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]
    assert [(a["tool_use_id"], a["content"]) for a in answers] == [("toolu_cut", NOTE[lang])]
    sent = json.dumps(resumed.messages, ensure_ascii=False)
    assert RESUME[lang] in sent
    other = "zh_CN" if lang == "en" else "en"
    assert NOTE[other] not in sent and RESUME[other] not in sent
