"""The frozen front of the built-in workflow: confirm the brief, then set the goals.

The brief (``需求.md`` by default) is complete when its four sections all have text;
the goals file (``目标.md``) when it lists at least one numbered goal. A complete file
is frozen: its step is skipped on the next wake (the brief's content still goes into
ctx). A goals file that exists but lists no goal is malformed: it is re-derived with a
warning. File and step names come from ``[tool.flower.workflow]``.
"""

from __future__ import annotations

import inspect
import logging
import warnings
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from flower.runtime.spec import AgentSpec, StepResult
from flower.workflow.base import Context, Step, StepRun
from flower.workflow.documents import (
    ADDENDUM_SECTION,
    BRIEF_SECTIONS,
    MalformedGoalsWarning,
    WorkflowNames,
    append_to_brief,
    brief_is_complete,
    extract_brief,
    is_complete_brief,
    parse_goals,
    read_goals,
    read_text,
    render_goals,
    workflow_names,
    write_atomic,
)

log = logging.getLogger(__name__)

CLARIFY_RESUME = (
    "接着上次没做完的需求确认继续——不要从头开始。已经问过、已经答过的不要再问;"
    "还缺什么就接着问,齐了就写出完整的需求。"
)
"""Sent to a clarifier whose session died mid-confirmation (the seed's resume prompt)."""

CLARIFY_PROMPT = """\
用户想做的事:

{request}

先读一读工作区,弄清楚这件事。信息不够就提问(一次问清,问题要少而准);
信息够了就写出需求,严格用下面四个二级标题,每节都要有内容:

## 背景
## 要做什么
## 不做什么
## 怎样算完成
"""

NO_ANSWER = "现在没人能回答问题。按你最合理的假设,直接写出完整的需求(四个二级标题,每节都要有内容)。"

GOALS_PROMPT = """\
下面是已经确认的需求。把它变成一份可以逐条验收的目标清单:每条一行,用 "1. " 这样的编号,
每条都要能通过读文件或运行命令来核实。只回清单。

{brief}
"""

GOALS_RETRY = '没有看到编号清单。只回清单,每条一行,以 "1. " 这样的编号开头。'

CLARIFIER = AgentSpec(
    name="clarifier",
    instructions="你负责在动手之前把需求问清楚、写清楚。不写代码。",
    allowed_tools=["Read", "Glob", "Grep"],
    max_turns=12,
)
GOAL_SETTER = AgentSpec(
    name="goal-setter",
    instructions="你把需求变成可以逐条核实的验收目标。只列目标,不做实现。",
    allowed_tools=["Read", "Glob", "Grep"],
    max_turns=8,
)

Ask = Callable[[str], "str | Awaitable[str | None] | None"]
"""Shows the clarifier's questions to the user and returns the answer (None: no one)."""


# -- the steps -----------------------------------------------------------------------


async def _ask(ask: Ask, text: str) -> str | None:
    answer = ask(text)
    if inspect.isawaitable(answer):
        answer = await answer
    return answer if isinstance(answer, str) and answer.strip() else None


def clarify_step(
    request: str | None,
    *,
    ask: Ask | None = None,
    agent: AgentSpec = CLARIFIER,
    settings: Any = None,
    max_exchanges: int = 6,
) -> Step:
    """Confirm the brief with the user and freeze it into the brief file.

    ``ask(questions) -> answer`` talks to the user; without it (or when it returns
    nothing) the clarifier writes the brief on its own assumptions.
    """
    names = workflow_names(settings)

    def brief_path(ctx: Context) -> Path:
        return Path(ctx["_workspace"]) / names.brief_file

    def frozen(ctx: Context) -> bool:
        text = read_text(brief_path(ctx))
        if text is None or not is_complete_brief(text):
            return False
        ctx["_brief"] = ctx[names.clarify_step] = text
        return True

    def first(ctx: Context) -> str:
        asked = (ctx.get("_request") or request or "").strip()  # _request: the builtin's memo
        return CLARIFY_PROMPT.format(request=asked or "(用户没有说,先看看工作区)")

    def resume(ctx: Context) -> str:
        said = ctx.get("_said")
        return f"{CLARIFY_RESUME}\n\n用户补充:{said}" if said else CLARIFY_RESUME

    async def body(run: StepRun) -> StepResult:
        prompt = run.first_prompt()
        result: StepResult | None = None
        gave_up_asking = ask is None
        for _ in range(max_exchanges):
            result = await run.turn(prompt)
            if not result.ok:
                return result
            brief = extract_brief(result.text)
            if brief is None and brief_is_complete(brief_path(run.ctx)):
                brief = read_text(brief_path(run.ctx))  # the clarifier wrote it itself
            if brief is not None:
                write_atomic(brief_path(run.ctx), brief)
                run.ctx["_brief"] = brief
                return result
            answer = None if gave_up_asking or ask is None else await _ask(ask, result.text)
            if answer is None:
                gave_up_asking = True
            prompt = answer or NO_ANSWER
        assert result is not None
        # the step fails though its last run ended well: recorded as such, in the manifest too
        verdict = replace(
            result, ok=False, error=f"the brief was not confirmed after {max_exchanges} exchanges"
        )
        run.record(verdict)
        return verdict

    return Step(names.clarify_step, agent, first, resume_prompt=resume, skip_if=frozen, body=body)


def goals_step(
    *,
    agent: AgentSpec = GOAL_SETTER,
    settings: Any = None,
) -> Step:
    """Derive the goals file from the brief; skipped while the goals file is complete.

    ``ctx["_rederive_goals"]`` (set when the user added something on wake) forces a
    new pass; the full brief is sent again on resume, which is what re-deriving needs.
    """
    names = workflow_names(settings)

    def goals_path(ctx: Context) -> Path:
        return Path(ctx["_workspace"]) / names.goals_file

    def frozen(ctx: Context) -> bool:
        goals = read_goals(goals_path(ctx))
        if goals == []:
            warnings.warn(
                f"{goals_path(ctx)} lists no numbered goal; deriving it again",
                MalformedGoalsWarning,
                stacklevel=2,
            )
            return False
        if goals is None or ctx.get("_rederive_goals"):
            return False
        ctx["_goals"] = goals
        return True

    def prompt(ctx: Context) -> str:
        brief = ctx.get("_brief") or read_text(Path(ctx["_workspace"]) / names.brief_file) or ""
        return GOALS_PROMPT.format(brief=brief.strip())

    async def body(run: StepRun) -> StepResult:
        result = await run.turn(run.first_prompt())
        for attempt in range(3):
            if not result.ok:
                return result
            goals = parse_goals(result.text)
            if goals:
                write_atomic(goals_path(run.ctx), render_goals(goals))
                run.ctx["_goals"] = goals
                return result
            if attempt < 2:
                result = await run.turn(GOALS_RETRY)
        result.ok = False
        result.error = "the goal-setting step gave no numbered goals"
        return result

    return Step(names.goals_step, agent, prompt, skip_if=frozen, body=body)


__all__ = [
    "ADDENDUM_SECTION",
    "BRIEF_SECTIONS",
    "CLARIFIER",
    "CLARIFY_RESUME",
    "GOAL_SETTER",
    "MalformedGoalsWarning",
    "WorkflowNames",
    "append_to_brief",
    "brief_is_complete",
    "clarify_step",
    "extract_brief",
    "goals_step",
    "is_complete_brief",
    "parse_goals",
    "read_goals",
    "render_goals",
    "workflow_names",
]
