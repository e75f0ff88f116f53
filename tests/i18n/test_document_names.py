"""The brief and the goals are named in the language of the wake that first wrote them,
and a wake in the other language finds and keeps them (no orphaned brief)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from two_languages import BRIEF, FILES, REQUEST

from flower.core.i18n import language
from flower.testing.fake_api import FakeMessagesAPI, RecordedRequest, text
from flower.workflow.base import wake_state
from flower.workflow.builtin import builtin_workflow
from flower.workflow.documents import read_goals

SAID = {"en": "also handle tables", "zh_CN": "顺便支持表格"}


def _user_words(req: RecordedRequest) -> str:
    return "\n".join(
        json.dumps(m["content"], ensure_ascii=False) for m in req.messages if m["role"] == "user"
    )


class Model:
    """The four agents of one language, told apart by their instructions."""

    def __init__(self, lang: str) -> None:
        from flower.workflow.builtin import worker_agent
        from flower.workflow.clarify import clarifier, goal_setter
        from flower.workflow.goal import judge_agent

        with language(lang):
            self.answers = {
                clarifier().instructions: BRIEF[lang],
                goal_setter().instructions: "1. it runs\n2. tables",
                worker_agent().instructions: "done",
                judge_agent().instructions: "1. met\n2. met",
            }
        self.seen: list[RecordedRequest] = []

    def __call__(self, req: RecordedRequest) -> Any:
        self.seen.append(req)
        system = req.body.get("system")
        if not isinstance(system, str):
            system = "".join(b.get("text", "") for b in system or [] if isinstance(b, dict))
        return text(self.answers[system])


def _wake(lang: str, said: str | None, model: Model) -> dict[str, Any]:
    from flower.runtime.engine import Runtime

    with language(lang):
        rt = Runtime(workspace=".", run_dir="runs")
        try:
            ctx: dict[str, Any] = asyncio.run(builtin_workflow(said, settings=rt.settings).run(rt))
        finally:
            rt.close()
    return ctx


@pytest.mark.parametrize(("first", "then"), [("zh_CN", "en"), ("en", "zh_CN")])
def test_a_wake_in_the_other_language_keeps_the_files(
    in_tmp: Path, fake: FakeMessagesAPI, first: str, then: str
) -> None:
    brief, goals = FILES[first]
    model = Model(first)
    fake.set_script(model)
    ctx = _wake(first, REQUEST[first], model)
    assert ctx["_ok"], ctx.get("_failed")
    assert sorted(p.name for p in in_tmp.glob("*.md")) == sorted(FILES[first])
    assert read_goals(in_tmp / goals) == ["it runs", "tables"]

    with language(then):
        checks = wake_state(in_tmp, "runs").checks
    assert checks.brief and checks.goals == 2  # the banner's "brief confirmed · goals 2"

    second = Model(then)
    fake.set_script(second)
    ctx = _wake(then, SAID[then], second)
    assert ctx["_ok"], ctx.get("_failed")
    # nothing new under the other language's names: the first wake's files are the files
    assert sorted(p.name for p in in_tmp.glob("*.md")) == sorted(FILES[first])
    kept = (in_tmp / brief).read_text(encoding="utf-8")
    assert kept.startswith(BRIEF[first]) and SAID[then] in kept  # the addendum went there
    assert read_goals(in_tmp / goals) == ["it runs", "tables"]  # derived again, same file
    # what the model reads on this wake names those files, in this wake's language
    prompts = "\n".join(_user_words(req) for req in second.seen)
    assert brief in prompts and goals in prompts
    other_brief, other_goals = FILES[then]
    assert other_brief not in prompts and other_goals not in prompts
