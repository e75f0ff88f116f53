"""Never stuck (issue 29 items 1-3), through the real console script: a model that never
writes numbered goals, a first run cut off while confirming the brief, and a second
sentence whose goals the model does not derive again all leave a directory where the
next ``flower`` goes on to the work and the judge."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path

import pexpect
import pytest
from cli_run_helpers import FLOWER, REQUEST, Flower, ScriptedModel, lineage

from flower.core.i18n import language
from flower.demo.script import demo_script
from flower.testing.fake_api import (
    FakeMessagesAPI,
    RecordedRequest,
    Reply,
    reply,
    tool_use,
    unauthorized,
)
from flower.workflow.builtin import worker_agent
from flower.workflow.clarify import clarifier, goal_setter
from flower.workflow.documents import parse_goals, read_goals
from flower.workflow.goal import judge_agent

TERSE = "OK"
GOALS_FILE = {"en": "goals.md", "zh_CN": "目标.md"}
FROM_BRIEF = {
    "en": "   -> no numbered goals from the model: goals.md takes 1 goal from the brief's"
    ' "What to do"; on to the work',
    "zh_CN": "   -> 模型没有给出编号的目标:目标.md 从需求的「要做什么」取了 1 条,接着干活",
}
SENTENCE = "顺便统计一下行数"
KEPT = "   -> 模型没有重新给出目标:目标.md 保留原有 3 条,你说的话加为第 4 条,接着干活"
EDITED = "   -> 目标.md 在你说完之后改过:照原样用(2 条),不再重新设定"


def spawn(flower: Flower, *args: str) -> pexpect.spawn:
    return pexpect.spawn(
        FLOWER[0],
        [*FLOWER[1:], *args],
        cwd=str(flower.cwd),
        env=flower.env,
        encoding="utf-8",
        timeout=90,
        dimensions=(40, 200),
    )


def finish(child: pexpect.spawn) -> str:
    child.expect(pexpect.EOF)
    child.close()
    return str(child.before)


def system(req: RecordedRequest) -> str:
    return req.texts()[0]


def judge_meets_every_goal(ws: Path, goals_file: str) -> Callable[[RecordedRequest], Reply]:
    """A judge that rules every goal in the goals file met (so a run ends well)."""

    def judge(req: RecordedRequest) -> Reply:
        goals = read_goals(ws / goals_file) or []
        return reply("\n".join(f"{n}. met — checked" for n in range(1, len(goals) + 1)))

    return judge


def terse_model(ws: Path, lang: str) -> Callable[[RecordedRequest], Reply]:
    """Answers "OK" to every agent but the judge, which rules on the goals file."""
    with language(lang):
        judge_instructions = judge_agent().instructions
    judge = judge_meets_every_goal(ws, GOALS_FILE[lang])
    return lambda req: judge(req) if system(req) == judge_instructions else reply(TERSE)


def asked(model_seen: list[RecordedRequest], instructions: str) -> list[RecordedRequest]:
    return [req for req in model_seen if system(req) == instructions]


def said_in_conversation(req: RecordedRequest, words: str) -> int:
    """How often ``words`` are in the user's own text in ``req``'s conversation (what the
    step was told; tool results, such as the brief read back, are not counted)."""
    count = 0
    for message in req.messages:
        if message["role"] != "user":
            continue
        content = message["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        count += sum(b["text"].count(words) for b in blocks if b.get("type") == "text")
    return count


# -- 1. a terse model gets to work ------------------------------------------------------


@pytest.mark.parametrize(
    ("lang", "how"),
    [("zh_CN", ["--yes"]), ("zh_CN", []), ("en", ["--yes"])],
    ids=["zh-yes", "zh-no-terminal", "en-yes"],
)
def test_a_model_that_never_writes_goals_still_gets_to_work(
    flower: Flower, api: FakeMessagesAPI, ws: Path, lang: str, how: list[str]
) -> None:
    seen: list[RecordedRequest] = []
    answer = terse_model(ws, lang)

    def model(req: RecordedRequest) -> Reply:
        seen.append(req)
        return answer(req)

    api.set_script(model)
    env = {**flower.env, "FLOWER_LANG": lang}
    request = "读 notes.txt,告诉我第一个词" if lang == "zh_CN" else "tell me the first word"
    done = flower(*how, request, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines().count(FROM_BRIEF[lang]) == 1
    assert read_goals(ws / GOALS_FILE[lang]) == [request]
    with language(lang):
        workers, judges = worker_agent().instructions, judge_agent().instructions
    assert asked(seen, workers) and asked(seen, judges)

    seen.clear()
    again = flower("--yes", env=env)  # the directory is not wedged: goals are frozen
    assert again.returncode == 0, again.stdout + again.stderr
    with language(lang):
        assert not asked(seen, goal_setter().instructions)
    assert asked(seen, workers)


def _tools_only() -> Reply:
    return reply(tool_use("Glob", {"pattern": "*"}))


def _cut_at_max_tokens() -> Reply:
    return reply("我先看看目录里有", stop_reason="max_tokens")


@pytest.mark.parametrize("cut_short", [_tools_only, _cut_at_max_tokens], ids=["tools", "length"])
def test_a_model_that_only_calls_tools_still_gets_to_work(
    flower: Flower, api: FakeMessagesAPI, ws: Path, cut_short: Callable[[], Reply]
) -> None:
    """A clarifier and a goal setter that spend every turn on tool calls (they stop at
    max_turns with no text, FINDINGS F4) or whose every reply is cut at max_tokens
    (FINDINGS F5) fall back as terse ones do."""
    judge = judge_meets_every_goal(ws, "目标.md")
    seen: list[RecordedRequest] = []

    def model(req: RecordedRequest) -> Reply:
        seen.append(req)
        if system(req) == judge_agent().instructions:
            return judge(req)
        if system(req) == worker_agent().instructions:
            return reply("做完了")
        return cut_short()

    api.set_script(model)
    done = flower("--yes", REQUEST)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert "   -> 这句话本身就是需求(需求.md),接着设定目标、干活" in lines
    assert lines.count(FROM_BRIEF["zh_CN"]) == 1
    assert read_goals(ws / "目标.md") == [REQUEST]
    assert asked(seen, worker_agent().instructions) and asked(seen, judge_agent().instructions)


def test_on_a_terminal_the_goals_are_asked_once(
    flower: Flower, api: FakeMessagesAPI, ws: Path
) -> None:
    api.set_script(terse_model(ws, "zh_CN"))
    child = spawn(flower, REQUEST)
    child.expect_exact("> ")  # the clarifier's question: Enter lets it write on its own
    child.sendline("")
    child.expect_exact("就按你这句话本身当需求接着做吗")
    child.sendline("")
    child.expect_exact("模型没有给出编号的目标")
    child.expect_exact(f"1. {REQUEST}")  # the goals flower would go on with
    child.expect_exact("> ")
    child.sendline("1. 有一个 md 转 html 的脚本")
    child.sendline("能转代码块")
    child.sendline("")
    rest = finish(child)
    assert child.exitstatus == 0, rest
    goals = read_goals(ws / "目标.md")
    assert goals == ["有一个 md 转 html 的脚本", "能转代码块"]
    assert "   -> 目标.md 用你写的 2 条,接着干活" in rest


# -- 2. a first step cut off keeps its fallback ----------------------------------------


@pytest.mark.parametrize("cut", ["kill", "401", "left-by-an-older-flower"])
def test_a_first_run_cut_off_while_confirming_the_brief_recovers(
    flower: Flower, model: ScriptedModel, ws: Path, cut: str
) -> None:
    held, release = threading.Event(), threading.Event()
    clarifiers: list[RecordedRequest] = []

    def terse_clarifier(req: RecordedRequest) -> Reply:
        clarifiers.append(req)
        if len(clarifiers) == 2 and cut != "401":
            held.set()
            release.wait(30)
        if len(clarifiers) == 2 and cut == "401":
            return unauthorized()  # type: ignore[return-value]
        return reply(TERSE)

    model.override(clarifier().instructions, terse_clarifier)
    if cut != "401":
        with flower.spawn("--yes", REQUEST) as proc:
            try:
                assert held.wait(60), proc.communicate()
                assert lineage(ws)["steps"].get("确认需求")  # the clarifier's session exists
                proc.kill()
                proc.communicate(timeout=30)
            finally:
                release.set()
    else:
        first = flower("--yes", REQUEST)
        assert first.returncode == 1 and lineage(ws)["steps"].get("确认需求")
    assert lineage(ws)["said"]["request"] == REQUEST  # where the fallback finds it
    if cut == "left-by-an-older-flower":  # it dropped the request once the clarifier held it
        record = lineage(ws)
        del record["said"]["request"]
        (ws / "runs" / "lineage.json").write_text(json.dumps(record), encoding="utf-8")

    done = flower("--yes")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "需求在 6 轮之后仍未确认" not in done.stdout
    assert "   -> 这句话本身就是需求(需求.md),接着设定目标、干活" in done.stdout
    assert REQUEST in (ws / "需求.md").read_text(encoding="utf-8")
    assert "request" not in lineage(ws).get("said", {})  # the brief holds it now
    assert asked(model.seen, worker_agent().instructions)


# -- 3. a second sentence never wedges a directory -----------------------------------


@pytest.fixture
def used(flower: Flower, model: ScriptedModel, ws: Path) -> Flower:
    """A directory where a first run went all the way (the demo's three goals)."""
    assert flower("--yes", REQUEST).returncode == 0
    assert len(read_goals(ws / "目标.md") or []) == 3
    model.override(judge_agent().instructions, judge_meets_every_goal(ws, "目标.md"))
    return flower


def test_a_sentence_the_goals_are_not_derived_again_for_becomes_one_more_goal(
    used: Flower, model: ScriptedModel, ws: Path
) -> None:
    old = read_goals(ws / "目标.md") or []
    model.override(goal_setter().instructions, lambda req: reply(TERSE))
    model.seen.clear()
    done = used("--yes", SENTENCE)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines().count(KEPT) == 1
    assert read_goals(ws / "目标.md") == [*old, SENTENCE]
    workers = asked(model.seen, worker_agent().instructions)
    assert said_in_conversation(workers[-1], SENTENCE) == 1
    assert "goals_stale" not in lineage(ws).get("said", {})

    model.seen.clear()
    again = used("--yes")  # heard once: not said again, goals not derived again
    assert again.returncode == 0, again.stdout + again.stderr
    assert not asked(model.seen, goal_setter().instructions)
    assert said_in_conversation(asked(model.seen, worker_agent().instructions)[-1], SENTENCE) == 1


def test_a_goals_file_edited_after_the_sentence_is_the_users_answer(
    used: Flower, model: ScriptedModel, ws: Path
) -> None:
    held, release = threading.Event(), threading.Event()

    def stuck_goal_setter(req: RecordedRequest) -> Reply:
        held.set()
        release.wait(30)
        return reply(TERSE)

    model.override(goal_setter().instructions, stuck_goal_setter)
    with used.spawn("--yes", SENTENCE) as proc:
        try:
            assert held.wait(60), proc.communicate()
            proc.kill()
            proc.communicate(timeout=30)
        finally:
            release.set()
    assert lineage(ws)["said"]["goals_stale"] is True
    mine = "# 我的目标\n\n1. md2html.py 能跑\n2. 统计行数\n"
    (ws / "目标.md").write_text(mine, encoding="utf-8")
    status = used("status").stdout.splitlines()
    (next_line,) = [line for line in status if line.startswith("下一步")]
    assert "干活" in next_line and "设定目标" not in next_line  # the goals are not derived

    demo_goals = demo_script("zh_CN").goals
    model.override(goal_setter().instructions, lambda req: reply(demo_goals))
    model.seen.clear()
    done = used("--yes")
    assert done.returncode == 0, done.stdout + done.stderr
    assert EDITED in done.stdout.splitlines()
    assert (ws / "目标.md").read_text(encoding="utf-8") == mine  # used as it is
    assert not asked(model.seen, goal_setter().instructions)
    workers = asked(model.seen, worker_agent().instructions)
    assert said_in_conversation(workers[-1], SENTENCE) == 1
    assert parse_goals(mine) == ["md2html.py 能跑", "统计行数"]
    assert "goals_stale" not in lineage(ws).get("said", {})


def test_a_sentence_said_twice_in_one_run_after_a_cut_is_said_once(
    used: Flower, model: ScriptedModel, ws: Path
) -> None:
    """A wake whose goals failed (a 401 on the goal setter) leaves the sentence for the
    next one, which says it to the work step once."""
    model.override(goal_setter().instructions, lambda req: unauthorized())  # type: ignore[return-value,arg-type]
    failed = used("--yes", SENTENCE)
    assert failed.returncode == 1
    model.override(goal_setter().instructions, lambda req: reply(TERSE))
    model.seen.clear()
    done = used("--yes")
    assert done.returncode == 0, done.stdout + done.stderr
    assert read_goals(ws / "目标.md") == [*(parse_goals(demo_script("zh_CN").goals)), SENTENCE]
    workers = asked(model.seen, worker_agent().instructions)
    assert said_in_conversation(workers[-1], SENTENCE) == 1
