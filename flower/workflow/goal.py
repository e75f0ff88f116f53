"""The goal gate: a judge checks the frozen goals after a step and may send it back.

The judge is NOT a Step. It comes straight from ``runtime.run`` inside the gate, with
no ``on_session`` hook and never a ``resume``: a fresh pair of eyes every round and
every wake, that does not know how hard the worker tried and so makes no excuses.
It reads only the frozen goals file and the workspace. Unmet goals send the step back
to work as ``<step>#round<N>`` with the judge's findings, up to ``rounds`` work rounds
per wake (a new wake is a new intention: the count starts again).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flower.runtime.spec import AgentSpec, StepResult
from flower.workflow.base import Step, StepRun, one_turn, replace_step
from flower.workflow.documents import read_goals, workflow_names

JUDGE = AgentSpec(
    name="judge",
    instructions=(
        "你是验收人。你只相信工作区里能看到、能跑出来的东西,不相信任何说法。"
        "逐条核对目标,不替执行者找理由。"
    ),
    allowed_tools=["Read", "Glob", "Grep", "Bash"],
    max_turns=30,
)

JUDGE_PROMPT = """\
逐条核对 {goals_file} 里的目标是否已在工作区里达成。自己去读文件、跑命令核实。

目标:
{goals}

最后按这个格式给出结论,每条目标一行,一条不漏:
1. 达成 — 依据
2. 未达成 — 缺什么、在哪里
"""

SEND_BACK = """\
验收没有通过。下面这些目标还没达成:

{findings}

接着干,把它们做完。做完的不要推倒重来。
"""

_MET = ("未达成", "未完成", "unmet", "not met", "fail", "❌", "[ ]", "no")
_OK = ("达成", "已达成", "完成", "met", "pass", "✅", "[x]", "yes")
_VERDICT = re.compile(r"^\s*(?:[-*]\s*)?(?:G|目标\s*)?(\d+)\s*[.:：)、]\s*(.*)$", re.IGNORECASE)


@dataclass
class Verdict:
    """Per-goal verdict: ``met[i]`` and ``notes[i]`` for goal ``i + 1``."""

    goals: list[str]
    met: list[bool] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def all_met(self) -> bool:
        return bool(self.met) and all(self.met)

    def unmet(self) -> list[tuple[int, str, str]]:
        return [
            (i + 1, goal, self.notes[i]) for i, goal in enumerate(self.goals) if not self.met[i]
        ]

    def findings(self) -> str:
        return "\n".join(
            f"{n}. {goal}" + (f" —— {note}" if note else "") for n, goal, note in self.unmet()
        )


def _status(rest: str) -> tuple[bool | None, str]:
    low = rest.strip().lower()
    for word in _MET:  # the negative forms first: "未达成" contains "达成"
        if low.startswith(word):
            return False, rest.strip()[len(word) :].strip(" -—:：,，")
    for word in _OK:
        if low.startswith(word):
            return True, rest.strip()[len(word) :].strip(" -—:：,，")
    return None, rest.strip()


def parse_verdict(reply: str, goals: list[str]) -> Verdict:
    """Read the judge's per-goal lines; a goal it did not rule on counts as unmet.

    The last line for a goal number wins (the conclusion comes at the end).
    """
    found: dict[int, tuple[bool, str]] = {}
    for line in reply.splitlines():
        match = _VERDICT.match(line)
        if not match:
            continue
        number = int(match.group(1))
        if not 1 <= number <= len(goals):
            continue
        status, note = _status(match.group(2))
        if status is not None:
            found[number] = (status, note)
    verdict = Verdict(goals=list(goals))
    for n in range(1, len(goals) + 1):
        status, note = found.get(n, (False, "验收人没有给出结论"))
        verdict.met.append(status)
        verdict.notes.append(note)
    return verdict


def with_goal(
    step: Step,
    *,
    goals_file: str | None = None,
    judge: AgentSpec = JUDGE,
    rounds: int | None = None,
) -> Step:
    """``step`` followed by the judge gate (see the module docstring).

    ``rounds`` defaults to ``[tool.flower.workflow] rounds``. Without a goals file,
    or with one that lists no goal, there is nothing to judge and the gate is open.
    ``ctx["_verdicts"][step]`` holds the last :class:`Verdict`; ``ctx["_goal_met"]``
    is True, False, or None when the judge itself failed.
    """
    if rounds is not None and rounds < 1:
        raise ValueError(f"rounds must be >= 1, got {rounds}")
    inner = step.body or one_turn

    async def gated(run: StepRun) -> StepResult:
        names = workflow_names(run.settings)
        path = Path(run.ctx["_workspace"]) / (goals_file or names.goals_file)
        limit = rounds or int(getattr(getattr(run.settings, "workflow", None), "rounds", 3))
        result = await inner(run)
        for n in range(1, limit + 1):
            if not result.ok:
                return result
            goals = read_goals(path)
            if not goals:
                return result
            verdict_run = await run.judge(
                judge, _judge_prompt(path, goals), label=f"{step.name}·判定#{n}"
            )
            if not verdict_run.ok:
                _set(run, step.name, None, None)
                return result
            verdict = parse_verdict(verdict_run.text, goals)
            _set(run, step.name, verdict, verdict.all_met)
            if verdict.all_met or n == limit:
                return result
            result = await run.turn(
                SEND_BACK.format(findings=verdict.findings()), label=f"{step.name}#round{n + 1}"
            )
        return result

    return replace_step(step, body=gated)


def _judge_prompt(path: Path, goals: list[str]) -> str:
    listed = "\n".join(f"{i}. {g}" for i, g in enumerate(goals, 1))
    return JUDGE_PROMPT.format(goals_file=path.name, goals=listed)


def _set(run: StepRun, name: str, verdict: Verdict | None, met: bool | None) -> None:
    verdicts: dict[str, Any] = run.ctx.setdefault("_verdicts", {})
    verdicts[name] = verdict
    run.ctx["_goal_met"] = met


__all__ = ["JUDGE", "Verdict", "parse_verdict", "with_goal"]
