"""The frozen front of the built-in workflow: confirm the brief, then set the goals.

The brief (``brief.md`` in English, ``需求.md`` in Chinese, an existing one under either
name first: :func:`~flower.workflow.documents.documents`) is complete when its four
sections all have text; the goals file (``goals.md``, ``目标.md``) when it lists at least
one numbered goal. A complete file is frozen: its step is skipped on the next wake (the
brief's content still goes into ctx). A goals file that exists but lists no goal is
malformed: it is re-derived with a warning. Step names, and file names that override
the lookup, come from ``[tool.flower.workflow]``.
"""

from __future__ import annotations

import inspect
import logging
import warnings
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import msgspec

from flower.core.i18n import _, every_translation, ngettext
from flower.runtime.spec import STOP_MAX_TOKENS, STOP_MAX_TURNS, AgentSpec, StepResult
from flower.workflow.base import Context, Step, StepRun
from flower.workflow.documents import (
    ADDENDUM_SECTION,
    BRIEF_SECTIONS,
    MalformedGoalsWarning,
    WorkflowNames,
    append_to_brief,
    brief_headings,
    brief_is_complete,
    documents,
    extract_brief,
    goals_from_brief,
    goals_frozen,
    is_complete_brief,
    parse_goals,
    read_goals,
    read_text,
    render_goals,
    workflow_names,
    write_atomic,
)
from flower.workflow.prompts import (
    CLARIFIER_INSTRUCTIONS,
    CLARIFY_PROMPT,
    CLARIFY_RESUME,
    DONE_WHEN,
    GOAL_SETTER_INSTRUCTIONS,
    GOALS_PROMPT,
    GOALS_RETRY,
    NO_ANSWER,
    NO_REQUEST,
    NOT_SAID,
    USER_ADDS,
)

if TYPE_CHECKING:
    from flower.core.config import Settings

log = logging.getLogger(__name__)


def clarifier() -> AgentSpec:
    """The clarifier, its instructions in the language of this wake."""
    return AgentSpec(
        name="clarifier",
        instructions=_(CLARIFIER_INSTRUCTIONS),
        allowed_tools=["Read", "Glob", "Grep"],
        max_turns=12,
    )


def goal_setter() -> AgentSpec:
    return AgentSpec(
        name="goal-setter",
        instructions=_(GOAL_SETTER_INSTRUCTIONS),
        allowed_tools=["Read", "Glob", "Grep"],
        max_turns=8,
    )


def request_in(prompt: str) -> str | None:
    """The user's request inside a clarifier's first prompt (in whichever language that
    wake spoke); None when ``prompt`` is no such prompt or the user said nothing."""
    text = prompt.strip()
    for template in every_translation(CLARIFY_PROMPT):
        head, found, tail = template.strip().partition("{request}")
        if found and text.startswith(head) and text.endswith(tail):
            request = text[len(head) : len(text) - len(tail)].strip()
            if request and request not in every_translation(NO_REQUEST):
                return request
    return None


Ask = Callable[[str], "str | Awaitable[str | None] | None"]
"""Shows the clarifier's questions to the user and returns the answer (None: no one)."""
RequestAsBrief = Callable[[str], "bool | Awaitable[bool]"]
"""Asked with the request once the exchanges ran out without a brief: True makes the
request itself the brief, so the run goes on (a first run gets to work)."""


class GoalsOffer(msgspec.Struct, frozen=True):
    """Goals flower can go on with when the goal setter gave no numbered goals."""

    goals: list[str]
    """The goals, in order."""
    kept: int
    """How many of them (the first) are the goals file's own, kept as they were; 0 when
    they are taken from the brief's "What to do" (and what was added to it later)."""
    goals_file: str
    """The goals file's name."""


class GoalsFallback(Protocol):
    """What the goals step does when the goal setter gives no numbered goals, and says
    when a goals file the user edited is used as it is (the CLI asks on a terminal)."""

    def choose(self, offer: GoalsOffer) -> list[str] | Awaitable[list[str] | None] | None:
        """The goals to go on with (``offer.goals``, or the user's own); None: the step
        fails."""

    def edited(self, goals_file: str, count: int) -> None:
        """The goals file was edited after what the user said last: it is the user's
        answer and is used as it is (``count`` goals); the goals are not derived again."""


def fallback_goals(brief: str, goals: list[str] | None, said: list[str]) -> tuple[list[str], int]:
    """The goals to go on with when the goal setter gives none, and how many of them
    are kept from ``goals`` (the goals file's): those goals and every sentence in
    ``said`` (what the user said that they lack yet) as one more goal each; without
    goals, the ones :func:`~flower.workflow.documents.goals_from_brief` takes."""
    if goals:
        added = [" ".join(text.split()) for text in said]
        return [*goals, *dict.fromkeys(a for a in added if a and a not in goals)], len(goals)
    return goals_from_brief(brief), 0


def brief_from_request(request: str) -> str:
    """A complete brief (the four sections) that is the request itself."""
    text = request.strip()
    bodies = (text, text, _(NOT_SAID), _(DONE_WHEN).format(request=text))
    return "".join(
        f"## {title}\n\n{body}\n\n" for title, body in zip(brief_headings(), bodies, strict=True)
    )


CUT_SHORT = frozenset({STOP_MAX_TURNS, STOP_MAX_TOKENS})
"""Stops of a run that used up its turns (tool calls only) or its reply's length (cut
at max_tokens twice) and gave no brief or goals: the model did not play along, so the
step falls back as it does for a terse reply."""


def _went_on(result: StepResult) -> StepResult:
    """The step's result once it went on with a brief or goals: a last run that stopped
    short (see :data:`CUT_SHORT`; the manifest records it) does not fail the step."""
    return result if result.ok else replace(result, ok=True, error=None, stop=None)


def _first_prompt_of(run: StepRun) -> str | None:
    """The first user words of ``run``'s session (None: none, or unreadable)."""
    from flower.core.transcript.blocks import prompt_texts

    if run.session_id is None:
        return None
    try:
        entries = run.runtime.store.load(run.runtime.key(run.session_id)) or []
    except Exception:  # an unreadable transcript: the request is not known
        return None
    for entry in entries:
        texts = prompt_texts(entry)
        if texts:
            return "\n".join(texts)
    return None


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
    agent: AgentSpec | None = None,
    settings: Settings | None = None,
    max_exchanges: int = 6,
    request_as_brief: RequestAsBrief | None = None,
) -> Step:
    """Confirm the brief with the user and freeze it into the brief file.

    ``ask(questions) -> answer`` talks to the user; without it (or when it returns
    nothing) the clarifier writes the brief on its own assumptions. When
    ``max_exchanges`` pass without a brief, ``request_as_brief(request)`` decides
    whether the request itself becomes the brief (without it, the step fails).
    """
    names = workflow_names(settings)
    agent = agent or clarifier()

    def brief_path(ctx: Context) -> Path:
        return documents(ctx.workspace, settings).brief

    def frozen(ctx: Context) -> bool:
        text = read_text(brief_path(ctx))
        if text is None or not is_complete_brief(text):
            return False
        ctx.brief = ctx.values[names.clarify_step] = text
        return True

    def asked(ctx: Context) -> str:
        return (ctx.request or request or "").strip()  # ctx.request: the builtin's memo

    def first(ctx: Context) -> str:
        asked_for = asked(ctx)
        return _(CLARIFY_PROMPT).format(request=asked_for or _(NO_REQUEST))

    def resume(ctx: Context) -> str:
        said = ctx.said
        resume = _(CLARIFY_RESUME)
        return f"{resume}\n\n" + _(USER_ADDS).format(said=said) if said else resume

    async def body(run: StepRun) -> StepResult:
        prompt = run.first_prompt()
        result: StepResult | None = None
        gave_up_asking = ask is None
        for _exchange in range(max_exchanges):
            result = await run.turn(prompt)
            if not result.ok and result.stop not in CUT_SHORT:
                return result
            brief = extract_brief(result.text)
            if brief is None and brief_is_complete(brief_path(run.ctx)):
                brief = read_text(brief_path(run.ctx))  # the clarifier wrote it itself
            if brief is not None:
                write_atomic(brief_path(run.ctx), brief)
                run.ctx.brief = brief
                return _went_on(result)
            if not result.ok:
                break  # cut short (turns or length) with no brief: fall back
            answer = None if gave_up_asking or ask is None else await _ask(ask, result.text)
            if answer is None:
                gave_up_asking = True
            prompt = answer or _(NO_ANSWER)
        assert result is not None
        wanted = asked(run.ctx)
        if request_as_brief is not None:
            # what the session was first asked, when lineage lost it (an older flower
            # dropped it once the clarifier's session held it)
            first_asked = request_in(_first_prompt_of(run) or "")
            if first_asked and first_asked not in wanted:
                wanted = "\n\n".join(filter(None, [first_asked, wanted]))
        if wanted and request_as_brief is not None:
            decided = request_as_brief(wanted)
            if inspect.isawaitable(decided):
                decided = await decided
            if decided:
                brief = brief_from_request(wanted)
                write_atomic(brief_path(run.ctx), brief)
                run.ctx.brief = brief
                run.ctx.brief_from_request = True
                return _went_on(result)
        # the step fails though its last run ended well: recorded as such, in the manifest too
        error = ngettext(
            "the brief was not confirmed after {count} exchange",
            "the brief was not confirmed after {count} exchanges",
            max_exchanges,
        ).format(count=max_exchanges)
        verdict = replace(result, ok=False, error=error)
        run.record(verdict)
        return verdict

    return Step(names.clarify_step, agent, first, resume_prompt=resume, skip_if=frozen, body=body)


def goals_step(
    *,
    agent: AgentSpec | None = None,
    settings: Settings | None = None,
    fallback: GoalsFallback | None = None,
) -> Step:
    """Derive the goals file from the brief; skipped while the goals file is complete.

    ``ctx.rederive_goals`` (set when the user added something on wake) forces a
    new pass; the full brief is sent again on resume, which is what re-deriving needs.
    When the goal setter gives no numbered goals, ``fallback.choose`` is offered the
    goals of :func:`fallback_goals` (what ``ctx.wake_memo`` holds unheard is what the
    user said); without ``fallback``, or when it chooses none, the step fails.
    """
    names = workflow_names(settings)
    agent = agent or goal_setter()

    def goals_path(ctx: Context) -> Path:
        return documents(ctx.workspace, settings).goals

    def frozen(ctx: Context) -> bool:
        goals = read_goals(goals_path(ctx))
        if goals == []:
            warnings.warn(
                _("{path} lists no numbered goal; deriving it again").format(path=goals_path(ctx)),
                MalformedGoalsWarning,
                stacklevel=2,
            )
            return False
        if not goals_frozen(len(goals or []), rederive=ctx.rederive_goals):
            return False
        ctx.goals = goals
        return True

    def prompt(ctx: Context) -> str:
        brief = ctx.brief or read_text(documents(ctx.workspace, settings).brief) or ""
        return _(GOALS_PROMPT).format(brief=brief.strip())

    async def body(run: StepRun) -> StepResult:
        result = await run.turn(run.first_prompt())
        for attempt in range(3):
            if not result.ok and result.stop not in CUT_SHORT:
                return result
            goals = parse_goals(result.text)
            if goals:
                write_atomic(goals_path(run.ctx), render_goals(goals))
                run.ctx.goals = goals
                return _went_on(result)
            if not result.ok:
                break  # cut short (turns or length) with no goals: fall back
            if attempt < 2:
                result = await run.turn(_(GOALS_RETRY))
        chosen = await _fall_back(run.ctx) if fallback is not None else None
        if chosen:
            write_atomic(goals_path(run.ctx), render_goals(chosen))
            run.ctx.goals = chosen
            return _went_on(result)
        # as for the brief: the last run ended well, the step did not; the manifest says so
        verdict = replace(result, ok=False, error=_("the goal-setting step gave no numbered goals"))
        run.record(verdict)
        return verdict

    async def _fall_back(ctx: Context) -> list[str] | None:
        assert fallback is not None
        path = goals_path(ctx)
        said = ctx.wake_memo.unheard if ctx.wake_memo is not None else []
        goals, kept = fallback_goals(prompt_brief(ctx), read_goals(path), said)
        if not goals:
            return None
        chosen = fallback.choose(GoalsOffer(goals, kept, path.name))
        if inspect.isawaitable(chosen):
            chosen = await chosen
        return [" ".join(goal.split()) for goal in chosen or [] if goal.strip()] or None

    def prompt_brief(ctx: Context) -> str:
        return ctx.brief or read_text(documents(ctx.workspace, settings).brief) or ""

    return Step(names.goals_step, agent, prompt, skip_if=frozen, body=body)


__all__ = [
    "ADDENDUM_SECTION",
    "BRIEF_SECTIONS",
    "GoalsFallback",
    "GoalsOffer",
    "MalformedGoalsWarning",
    "RequestAsBrief",
    "WorkflowNames",
    "append_to_brief",
    "brief_from_request",
    "brief_is_complete",
    "clarifier",
    "clarify_step",
    "extract_brief",
    "fallback_goals",
    "goal_setter",
    "goals_step",
    "is_complete_brief",
    "parse_goals",
    "read_goals",
    "render_goals",
    "workflow_names",
]
