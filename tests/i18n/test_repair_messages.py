"""What the safety net fixed and why a jsonfs line was skipped are said in the chosen
language, so a translated warning carries no English detail (issue 23)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from flower.core.i18n import language
from flower.core.records import SessionKey
from flower.core.transcript import repair_conversation
from flower_plugins.jsonfs import JsonfsSessionStore

KEY = SessionKey("-proj", "0d6b6a4e-3c1f-4d7e-9a59-2f1f0c2b8e11")


def entry(uid: str, parent: str | None, kind: str, content: Any) -> dict[str, Any]:
    role = "assistant" if kind == "assistant" else "user"
    return {
        "type": kind,
        "uuid": uid,
        "parentUuid": parent,
        "message": {"role": role, "content": content},
    }


def damaged() -> list[dict[str, Any]]:
    """A prompt; a reply with a call; a copy of the prompt; an orphan result; no answer."""
    prompt = entry("u1", None, "user", "hi")
    call = {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {}}
    orphan = {"type": "tool_result", "tool_use_id": "toolu_bogus", "content": "?"}
    return [
        prompt,
        dict(prompt),
        entry("a1", "u1", "assistant", [{"type": "text", "text": "ok"}, call]),
        entry("u2", "a1", "user", [orphan, {"type": "text", "text": "and?"}]),
    ]


FIXES = {
    "en": [
        "kept only the last copy of 1 repeated entry",
        "removed a tool_result for 'toolu_bogus' that answers nothing",
        "answered tool_use 'toolu_1' with the interrupted note",
    ],
    "zh_CN": [
        "重复的条目只保留了最后一份(去掉了 1 份重复)",
        "去掉了 'toolu_bogus' 的 tool_result,它没有回答任何调用",
        "用中断说明回答了 tool_use 'toolu_1'",
    ],
}


@pytest.mark.parametrize("lang", sorted(FIXES))
def test_the_repair_says_what_it_fixed_in_the_chosen_language(lang: str) -> None:
    with language(lang):
        _, fixes = repair_conversation(damaged())
    assert fixes == FIXES[lang]


DETAILS = {
    "en": ("13 bytes, no newline", "1 byte: ", "a list"),
    "zh_CN": ("13 字节,没有换行符", "1 字节:", "list 类型的值"),
}


@pytest.mark.parametrize("lang", sorted(DETAILS))
def test_a_skipped_line_is_explained_in_the_chosen_language(
    lang: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = JsonfsSessionStore(tmp_path / "transcripts")
    store.append(KEY, [entry("u1", None, "user", "hi")])
    path = store.root / KEY.project_key / f"{KEY.session_id}.jsonl"
    with path.open("ab") as f:
        f.write(b"x\n[1, 2]\n")  # a corrupt line, a line that is no object
        f.write(b'{"type":"user')  # a torn tail: 13 bytes
    with language(lang), caplog.at_level(logging.WARNING, logger="flower.jsonfs"):
        assert [e["uuid"] for e in store.load(KEY) or []] == ["u1"]
    problems = store.problems(KEY)
    assert [p.kind for p in problems] == ["corrupt-line", "not-an-object", "torn-tail"]
    torn, corrupt, not_an_object = DETAILS[lang]
    assert problems[0].detail.startswith(corrupt), problems[0].detail
    assert problems[1].detail == not_an_object
    assert problems[2].detail == torn
    assert torn in caplog.text  # the warning the user reads
