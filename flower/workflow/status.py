"""What ``flower status`` says about a workspace, in words: one fact a line.

:func:`status_facts` turns a :func:`~flower.workflow.plan.wake_state` into
:class:`StatusFact` s (the lineage, a fresh start and why, the brief and goals, words a
killed run left, a rewind cut short, each recorded session, the last verdict) and ends
with :func:`next_run`, what a bare ``flower`` would do next. The CLI prints
:func:`describe_state`'s lines; whether ``flower`` would wake at all is
:func:`~flower.workflow.wake.verdict`, and ``flower status`` exits with its
:func:`status_code`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from flower.core.display import human_tokens, one_line, pad, short_path
from flower.core.i18n import N_, _, ngettext
from flower.core.labels import shown_label, shown_steps
from flower.workflow.documents import documents, workflow_names
from flower.workflow.plan import skipped_steps
from flower.workflow.wake import builtin_view, lineage_name, verdict

if TYPE_CHECKING:
    from flower.core.config import Settings
    from flower.workflow.documents import WorkflowNames
    from flower.workflow.state import WakeState

LABEL_WIDTH = 12
"""Columns of the label at the start of each ``flower status`` line."""

STATUS_WAKES = 0
"""``flower status`` exit code: a bare ``flower`` here would wake (resume or carry on)."""
STATUS_NOTHING = 1
"""Nothing to carry on here: ``flower`` needs to be told what to do."""
STATUS_STOPS = 3
"""``flower`` here would stop before its banner: the session store cannot be read."""


class StatusFact(msgspec.Struct, frozen=True):
    """One fact of ``flower status``: ``key``, its label in English (``"lineage"``,
    ``"step"``, ``"next"``...), the ``label`` in the active language, and ``text``."""

    key: str
    label: str
    text: str


def _fact(key: str, text: str) -> StatusFact:
    return StatusFact(key, _(key), text)


def status_facts(state: WakeState, workspace: Path, settings: Settings) -> list[StatusFact]:
    """``state`` (a whole :func:`~flower.workflow.plan.wake_state`) in words, one
    :class:`StatusFact` at a time, in the active language, ending with :func:`next_run`."""

    checks = state.checks
    names = workflow_names(settings, checks.recorded)
    lines: list[StatusFact] = [_fact(N_("workspace"), short_path(workspace))]
    where = lineage_name(settings)
    if checks.lineage == "ok":
        woken = ngettext("woken {n} time", "woken {n} times", state.woke).format(n=state.woke)
        lines.append(_fact(N_("lineage"), f"{where}, {woken}"))
    else:
        lines.append(
            _fact(
                N_("lineage"),
                _("none in {lineage} (missing, unreadable or another workspace)").format(
                    lineage=where
                ),
            )
        )
    fresh = checks.fresh
    if fresh and fresh.reason == "moved":
        why = _(
            "the lineage here was written for {path} (moved or copied): the next run starts "
            "fresh and sets it aside; `flower adopt` takes the old place back"
        ).format(path=fresh.moved_from)
        lines.append(_fact(N_("fresh"), why))
    elif fresh and fresh.reason == "unreadable":
        why = _(
            "{lineage} cannot be read: the next run starts fresh and sets it aside into "
            "notes/archive/"
        ).format(lineage=where)
        lines.append(_fact(N_("fresh"), why))
    elif fresh:
        why = _(
            "the sessions of {steps} are gone from the store: the next run sets lineage aside "
            "into notes/archive/ (`flower adopt` takes it back once they are restored)"
        ).format(steps=shown_steps(fresh.steps))
        lines.append(_fact(N_("fresh"), why))
    files = documents(workspace, settings)
    brief = _("{file} confirmed") if checks.brief else _("{file} not confirmed")
    lines.append(_fact(N_("brief"), brief.format(file=files.brief.name)))
    if checks.goals or files.goals.exists():
        goals = _("{n} in {file}").format(n=checks.goals, file=files.goals.name)
    else:
        goals = _("none yet ({file} does not exist)").format(file=files.goals.name)
    lines.append(_fact(N_("goals"), goals))
    for path in files.not_used:
        unused = _("{file} (another language's name; this run's is used)")
        lines.append(_fact(N_("not used"), unused.format(file=path.name)))
    if checks.store:
        lines.append(_fact(N_("store"), _("unreadable: {error}").format(error=checks.store)))
    for text in checks.unrecorded:
        said = _("{words} (a run cut short before recording it)").format(words=one_line(text))
        lines.append(_fact(N_("said"), said))
    for text in checks.unheard:
        said = _("{words} (not heard by {step} yet: the next `flower` passes it on)").format(
            words=one_line(text), step=shown_label(names.work_step)
        )
        lines.append(_fact(N_("said"), said))
    rewind = checks.rewind
    if rewind is not None and rewind.damaged:
        lines.append(_fact(N_("rewind"), rewind.damaged))
    elif rewind is not None:
        cut = ngettext(
            "{step} {n} turn back, cut short: the next `flower` or `flower rewind` finishes it "
            "first (now session {session})",
            "{step} {n} turns back, cut short: the next `flower` or `flower rewind` finishes it "
            "first (now session {session})",
            rewind.turns or 0,
        ).format(step=shown_label(rewind.step or ""), n=rewind.turns, session=rewind.new_session)
        lines.append(_fact(N_("rewind"), cut))
    recorded = in_run_order(checks.recorded, names)
    for step, sid in recorded.items():
        size = checks.context.get(step)
        if checks.alive.get(step) and size is not None:
            kept = _("{step}: {session} (in the store, context {size})")
        elif checks.alive.get(step):
            kept = _("{step}: {session} (in the store)")
        elif checks.store:
            kept = _("{step}: {session} (not checked: the store is unreadable)")
        else:
            kept = _("{step}: {session} (gone from the store: starts fresh)")
        size_text = human_tokens(size) if size is not None else ""
        shown = shown_label(step)
        lines.append(_fact(N_("step"), kept.format(step=shown, session=sid, size=size_text)))
    ours = builtin_view(state, settings)
    others = [step for step in recorded if step not in ours.checks.recorded]
    if others:
        other = _(
            "{steps}: another workflow's steps (its Python code resumes them; `flower` runs "
            "the built-in workflow)"
        ).format(steps=shown_steps(others))
        lines.append(_fact(N_("other"), other))
    verdict = checks.verdict
    if verdict is not None:
        woke = _("wake {n}").format(n=verdict.woke)
        if verdict.met is None:
            said = _("the judge gave no verdict ({wake})").format(wake=woke)
        else:
            said = ngettext(
                "{met} of {goals} goal met ({wake})",
                "{met} of {goals} goals met ({wake})",
                verdict.goals,
            ).format(met=verdict.met, goals=verdict.goals, wake=woke)
        lines.append(_fact(N_("verdict"), said))
    lines.append(_fact(N_("next"), next_run(state, settings)))
    return lines


def describe_state(state: WakeState, workspace: Path, settings: Settings) -> list[str]:
    """What ``flower status`` prints: :func:`status_facts` one a line, the label padded
    to :data:`LABEL_WIDTH` columns."""
    return [
        pad(fact.label, LABEL_WIDTH - 1) + " " + fact.text
        for fact in status_facts(state, workspace, settings)
    ]


def in_run_order(steps: dict[str, str], names: WorkflowNames) -> dict[str, str]:
    """``steps`` in the order a wake runs them: the built-in workflow's steps in its
    order, then any other workflow's as lineage lists them."""
    order = [names.clarify_step, names.goals_step, names.work_step]
    ours = {step: steps[step] for step in order if step in steps}
    return {**ours, **{step: sid for step, sid in steps.items() if step not in ours}}


def next_run(state: WakeState, settings: Settings) -> str:
    """What a bare ``flower`` here would do next, in words (``flower status``'s last
    line), for ``state``, a whole :func:`~flower.workflow.plan.wake_state`."""
    checks = state.checks
    ours = builtin_view(state, settings)
    names = workflow_names(settings, checks.recorded)
    if checks.store:
        return _("`flower` stops until the session store can be read")
    if ours.waking:
        # a confirmed brief and a goals file are kept as they are: those steps are skipped,
        # unless a wake cut short left the goals to derive again (or words for them)
        done = skipped_steps(state, settings)
        steps = in_run_order(ours.steps, names)
        resumed = [step for step in steps if step not in done] or list(steps)
        return _("`flower` resumes {steps} (wake {n})").format(
            steps=shown_steps(resumed), n=state.woke + 1
        )
    if checks.brief:
        return _("`flower` goes on from the confirmed brief in new sessions")
    if checks.request or checks.unrecorded:
        request = checks.unrecorded[-1] if checks.unrecorded else checks.request or ""
        return _("`flower` starts on the request a killed run left: {request}").format(
            request=one_line(request)
        )
    if ours.checks.recorded:
        return _(
            "`flower` starts over in new sessions (the recorded ones are gone); with nothing "
            "said, it first looks at the workspace"
        )
    return _('nothing to resume: flower "what to do" starts something')


def status_code(state: WakeState, settings: Settings) -> int:
    """How ``flower status`` exits for ``state`` (a whole
    :func:`~flower.workflow.plan.wake_state`): :data:`STATUS_WAKES` when a bare
    ``flower`` would wake, :data:`STATUS_NOTHING` when there is nothing to carry on,
    :data:`STATUS_STOPS` when it would stop (the session store cannot be read)."""
    codes = {"wakes": STATUS_WAKES, "nothing": STATUS_NOTHING, "stops": STATUS_STOPS}
    return codes[verdict(state, settings)]


__all__ = [
    "LABEL_WIDTH",
    "STATUS_NOTHING",
    "STATUS_STOPS",
    "STATUS_WAKES",
    "StatusFact",
    "describe_state",
    "in_run_order",
    "next_run",
    "status_code",
    "status_facts",
]
