"""The wake prompt and the brief questions, at a real pseudo-terminal (pexpect)."""

from __future__ import annotations

import json
from pathlib import Path

import pexpect
import pytest
from cli_run_helpers import FLOWER, REQUEST, Flower, ScriptedModel, lineage
from seed_strings import NEW_TASK_PROMPT, WAKE_PROMPT

from flower.core.i18n import _
from flower.demo.script import demo_script
from flower.testing.fake_api import RecordedRequest, Reply, reply
from flower.workflow import prompts
from flower.workflow.clarify import clarifier as clarifier_agent
from flower.workflow.clarify import goal_setter

BRIEF = demo_script("zh_CN").brief

QUESTION = "输出要单文件还是目录?"


def clarifier(req: RecordedRequest) -> Reply:
    """Asks once; writes the brief after an answer (or after being told no one answers)."""
    last = req.texts()[-1]
    return reply(BRIEF) if last in ("单文件", _(prompts.NO_ANSWER)) else reply(QUESTION)


@pytest.fixture
def used(flower: Flower, model: ScriptedModel, ws: Path) -> Flower:
    """A workspace where one run went all the way (no terminal: no questions asked)."""
    model.override(clarifier_agent().instructions, clarifier)
    assert flower(REQUEST).returncode == 0
    return flower


def spawn(flower: Flower, *args: str) -> pexpect.spawn:
    child = pexpect.spawn(
        FLOWER[0],
        [*FLOWER[1:], *args],
        cwd=str(flower.cwd),
        env=flower.env,
        encoding="utf-8",
        timeout=90,
        dimensions=(40, 200),
    )
    return child


def finish(child: pexpect.spawn) -> str:
    child.expect(pexpect.EOF)
    child.close()
    return str(child.before)


def test_ctrl_c_leaves_enter_continues_text_is_the_next_sentence(
    used: Flower, model: ScriptedModel, ws: Path
) -> None:
    before = (ws / "runs" / "lineage.json").read_bytes()
    child = spawn(used)
    child.expect_exact(WAKE_PROMPT)
    child.sendintr()
    finish(child)
    assert child.exitstatus == 130  # Ctrl-C's conventional exit
    assert (ws / "runs" / "lineage.json").read_bytes() == before  # left, nothing written

    child = spawn(used)
    child.expect_exact("接上上次")
    child.expect_exact(WAKE_PROMPT)
    child.sendline("")
    rest = finish(child)
    assert child.exitstatus == 0, rest
    assert "<- 接上次 · 第 2 次唤醒" in rest
    assert lineage(ws)["woke"] == 2
    assert "## 补充" not in (ws / "需求.md").read_text(encoding="utf-8")

    child = spawn(used)
    child.expect_exact(WAKE_PROMPT)
    child.sendline("顺便支持代码块高亮")
    rest = finish(child)
    assert child.exitstatus == 0, rest
    assert "顺便支持代码块高亮" in (ws / "需求.md").read_text(encoding="utf-8")
    goal_setters = [r for r in model.seen if r.texts()[0] == goal_setter().instructions]
    assert "顺便支持代码块高亮" in goal_setters[-1].texts()[-1]


def test_slash_new_archives_then_asks_what_to_do_and_its_questions(
    used: Flower, model: ScriptedModel, ws: Path
) -> None:
    old = lineage(ws)
    child = spawn(used)
    child.expect_exact(WAKE_PROMPT)
    child.sendline("/new")
    child.expect_exact(NEW_TASK_PROMPT)
    child.sendline("另一件事")
    child.expect_exact("开始新的一件事")
    child.expect_exact(QUESTION)  # the clarifier asks at the terminal
    child.expect_exact("> ")
    child.sendline("单文件")
    rest = finish(child)
    assert child.exitstatus == 0, rest
    (archived,) = (ws / "notes" / "archive").iterdir()
    assert json.loads((archived / "lineage.json").read_text(encoding="utf-8")) == old
    assert lineage(ws)["woke"] == 1
    clarifiers = [r for r in model.seen if r.texts()[0] == clarifier_agent().instructions]
    assert "另一件事" in clarifiers[-2].texts()[-1] and clarifiers[-1].texts()[-1] == "单文件"


def test_fresh_directory_on_a_terminal_asks_what_to_do(flower: Flower, ws: Path) -> None:
    child = spawn(flower)
    child.expect_exact(NEW_TASK_PROMPT)
    child.sendintr()
    finish(child)
    assert child.exitstatus == 130 and list(ws.iterdir()) == []


def test_ctrl_c_at_a_brief_question_then_the_clarifier_resumes(
    flower: Flower, model: ScriptedModel, ws: Path
) -> None:
    model.override(clarifier_agent().instructions, clarifier)
    child = spawn(flower, REQUEST)
    child.expect_exact(QUESTION)
    child.expect_exact("> ")
    child.sendintr()
    rest = finish(child)
    assert child.exitstatus == 130, rest
    sid = lineage(ws)["steps"]["确认需求"]  # on disk the instant it existed

    done = flower("--yes")
    assert done.returncode == 0, done.stderr
    assert lineage(ws)["steps"]["确认需求"] == sid
    resumed = [r for r in model.seen if r.texts()[0] == clarifier_agent().instructions][1]
    assert resumed.texts()[-1] == _(prompts.CLARIFY_RESUME) and QUESTION in resumed.texts()


@pytest.mark.parametrize(("typed", "code"), [("", 0), ("n", 1)], ids=["enter", "n"])
def test_a_brief_never_written_asks_once_on_a_terminal(
    flower: Flower, model: ScriptedModel, ws: Path, typed: str, code: int
) -> None:
    """Issue 23 item 7 at a real terminal: the clarifier's exchanges run out without a
    brief, flower asks once whether the request is the brief; Enter goes on, n stops."""
    from flower.cli.banner import request_as_brief_question
    from flower.workflow.banner import brief_from_request_line

    model.override(clarifier_agent().instructions, lambda req: reply(QUESTION))  # never a brief
    question = request_as_brief_question()
    child = spawn(flower, REQUEST)
    child.expect_exact(QUESTION)
    child.expect_exact("> ")
    child.sendline("")  # no answer: the clarifier goes on on its own assumptions
    child.expect_exact(question)
    child.sendline(typed)
    rest = finish(child)
    assert child.exitstatus == code, rest
    assert question not in rest  # asked once
    clarifiers = [r for r in model.seen if r.texts()[0] == clarifier_agent().instructions]
    assert len(clarifiers) == 6
    said = brief_from_request_line("需求.md")
    if code == 0:
        assert said in rest and "== 干活" in rest
        assert REQUEST in (ws / "需求.md").read_text(encoding="utf-8")
    else:
        assert said not in rest and "== 设定目标" not in rest
        assert not (ws / "需求.md").exists()
