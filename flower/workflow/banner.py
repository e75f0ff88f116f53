"""What a wake says about itself: the wake line, the lines under it, the step headers.

The proof, at a glance, that flower remembered. The strings are the product's own (the
seed page), in the user's language: a user who sees ``<- 在 ~/proj 接上上次  需求已确认 ·
目标 15 条 · 干活上下文 80.2K · 第 3 次唤醒`` (in English ``<- carrying on in ~/proj
brief confirmed · 15 goals · work context 80.2K · wake 3``) knows which conversation
continues and how big its context has grown.

What a wake shows is decided here as typed data: :func:`wake_banner_lines` gives the
:class:`WakeBanner` of a :class:`~flower.workflow.state.WakeState` (the wake's number
and its :class:`BannerLine` s, each with a :data:`Tone`); :func:`fresh_start_said`,
:func:`passed_on_said` and :func:`archived_said` the lines under it. ``flower`` and a
fleet's wake log render them (the CLI in colour on a terminal)::

    from pathlib import Path

    from flower.core.config import Settings
    from flower.workflow.banner import wake_banner_lines
    from flower.workflow.plan import wake_state

    settings = Settings()
    banner = wake_banner_lines(wake_state(".", settings=settings), Path.cwd(), settings)
    for line in banner.lines:
        print(line.tone, line.text)
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import msgspec

from flower.core.display import human_tokens, relative_path, short_path, shown_width
from flower.core.i18n import _, ngettext
from flower.core.labels import parse_label, same_step, shown_label, shown_step, shown_steps

if TYPE_CHECKING:
    from flower.core.config import Settings
    from flower.core.lineage import FreshStart
    from flower.workflow.state import WakeState

Tone = Literal["banner", "note", "warning", "done"]
"""How a line reads: ``banner`` (the wake line), ``note`` (a side remark), ``warning``
(something to look at) or ``done`` (a step decided something for the user)."""


class BannerLine(msgspec.Struct, frozen=True):
    """One line a wake shows: its ``text`` in the active language and its ``tone``."""

    text: str
    tone: Tone


class WakeBanner(msgspec.Struct, frozen=True):
    """What a wake shows first: ``woke``, its number (1: a fresh start), and ``lines``:
    the wake line, then the lost sessions and the files of another language not used."""

    woke: int
    lines: list[BannerLine]


def wake_banner_lines(state: WakeState | None, workspace: Path, settings: Settings) -> WakeBanner:
    """The banner of a wake from ``state`` (a :func:`~flower.workflow.wake.builtin_view`;
    None: a fresh start, as after ``--new``): what it resumes, or that it starts
    something new; the first wake has no "last time" to pick up from, even beside a
    confirmed brief."""
    from flower.workflow.documents import documents, workflow_names

    if state is None:
        return WakeBanner(1, [BannerLine(fresh_banner(workspace), "banner")])
    checks = state.checks
    woke = state.woke + 1
    work_step = workflow_names(settings, checks.recorded).work_step
    if woke > 1 and (state.waking or checks.brief):
        first = wake_banner(
            workspace,
            woke=woke,
            brief_confirmed=checks.brief,
            goals=checks.goals,
            work_step=work_step,
            context_tokens=checks.context.get(work_step),
            rewound=checks.rewound,
        )
    else:
        first = fresh_banner(workspace)
    lines = [BannerLine(first, "banner")]
    lost = [name for name, alive in checks.alive.items() if not alive]
    if lost:
        lines.append(BannerLine(lost_sessions_line(lost), "warning"))
    files = documents(workspace, settings)
    if files.not_used:
        used = [files.brief.name, files.goals.name]
        unused = not_used_line(used, [p.name for p in files.not_used])
        lines.append(BannerLine(unused, "warning"))
    return WakeBanner(woke, lines)


def fresh_start_said(fresh: FreshStart, workspace: Path, settings: Settings) -> BannerLine:
    """Under the banner when lineage was there but this wake set it aside (``fresh``)."""
    from flower.workflow.wake import lineage_name

    archived = None if fresh.archived is None else relative_path(fresh.archived, workspace)
    text = fresh_start_line(
        fresh.reason,
        moved_from=fresh.moved_from,
        steps=fresh.steps,
        archived=archived,
        lineage_name=lineage_name(settings),
    )
    return BannerLine(text, "note")


def passed_on_said(words: list[str]) -> BannerLine:
    """Under the banner when words a killed run was told go to the model first."""
    return BannerLine(unrecorded_line(words), "warning")


def archived_said(into: Path, workspace: Path) -> BannerLine:
    """``--new`` (or ``/new``) moved the last conversation into ``into``."""
    where = relative_path(into, workspace)
    return BannerLine(
        _("   archived the last conversation into {path}/").format(path=where), "note"
    )


HEADER_WIDTH = 40


def rewound_part(turns: int) -> str:
    """In the wake line after ``flower rewind N``."""
    return ngettext("rewound {turns} turn", "rewound {turns} turns", turns).format(turns=turns)


def wake_banner(
    workspace: str | os.PathLike[str],
    *,
    woke: int,
    brief_confirmed: bool,
    goals: int,
    work_step: str | None,
    context_tokens: int | None,
    home: str | None = None,
    rewound: int | None = None,
) -> str:
    """``<- 在 <where> 接上上次  需求已确认 · 目标 N 条 · <step>上下文 X · 第 N 次唤醒``.

    Parts are shown only when known: the goals count when the list is non-empty, the
    context when the store can tell the last round's size, ``退回 N 轮`` after a rewind.
    """
    parts: list[str] = []
    if brief_confirmed:
        parts.append(_("brief confirmed"))
    if goals > 0:
        parts.append(ngettext("{count} goal", "{count} goals", goals).format(count=goals))
    if work_step and context_tokens is not None:
        parts.append(
            _("{step} context {tokens}").format(
                step=shown_step(work_step), tokens=human_tokens(context_tokens)
            )
        )
    if rewound:
        parts.append(rewound_part(rewound))
    parts.append(_("wake {count}").format(count=woke))
    head = _("<- carrying on in {where}").format(where=short_path(workspace, home))
    return f"{head}  " + " · ".join(parts)


def fresh_banner(workspace: str | os.PathLike[str], home: str | None = None) -> str:
    """The first line of a run that has nothing to resume."""
    return _("-> starting something new in {where}").format(where=short_path(workspace, home))


def brief_from_request_line(brief_file: str) -> str:
    """Under the banner when the request itself became the brief (a first run that
    could not confirm one and was told to go on)."""
    return _("   -> the request itself is the brief ({file}); on to the goals and the work").format(
        file=brief_file
    )


def goals_fallback_line(goals_file: str, goals: int, kept: int, typed: bool) -> str:
    """Under the goals step's header when the goal setter gave no numbered goals: which
    goals the run goes on with (``kept`` of the file's own, the rest added; or the
    ``typed`` ones; or, with ``kept`` 0, the ones taken from the brief)."""
    from flower.core.i18n import ngettext
    from flower.workflow.documents import brief_headings

    if typed:
        text = ngettext(
            "   -> {file} holds the {count} goal you typed; on to the work",
            "   -> {file} holds the {count} goals you typed; on to the work",
            goals,
        )
    elif not kept:
        text = ngettext(
            "   -> no numbered goals from the model: {file} takes {count} goal from the"
            ' brief\'s "{section}"; on to the work',
            "   -> no numbered goals from the model: {file} takes {count} goals from the"
            ' brief\'s "{section}"; on to the work',
            goals,
        )
    elif goals == kept:
        text = _(
            "   -> no new goals from the model: {file} keeps the {kept} it had; on to the work"
        )
    elif goals == kept + 1:
        text = _(
            "   -> no new goals from the model: {file} keeps the {kept} it had and adds what"
            " you said as goal {first}; on to the work"
        )
    else:
        text = _(
            "   -> no new goals from the model: {file} keeps the {kept} it had and adds what"
            " you said as goals {first} to {last}; on to the work"
        )
    return text.format(
        file=goals_file,
        count=goals,
        section=brief_headings()[1],
        kept=kept,
        first=kept + 1,
        last=goals,
    )


def goals_edited_line(goals_file: str, count: int) -> str:
    """Under the banner when the goals file was edited after what the user said last:
    it is used as it is, not derived again."""
    from flower.core.i18n import ngettext

    return ngettext(
        "   -> {file} was edited after what you said: used as it is ({count} goal), not"
        " derived again",
        "   -> {file} was edited after what you said: used as it is ({count} goals), not"
        " derived again",
        count,
    ).format(file=goals_file, count=count)


def not_used_line(used: list[str], not_used: list[str]) -> str:
    """Under the banner when the brief or the goals are there under two languages' names:
    the one named in this run's language is used, the other left alone."""
    return _(
        "   !! also here under another language's name, not used: {files} (this run uses {used})"
    ).format(files=", ".join(not_used), used=", ".join(used))


def lost_sessions_line(steps: list[str]) -> str:
    """Under the banner when lineage names sessions the store no longer holds.

    Those steps start a new conversation (the seed's silent fresh start); saying so
    keeps "did it remember?" visible.
    """
    return _(
        "   !! sessions in the record are no longer in the store: {steps}; these steps start over"
    ).format(steps=shown_steps(steps))


def unrecorded_line(texts: list[str], width: int = 60) -> str:
    """Under the banner when a run was cut short before it recorded what it was told:
    those words are passed on now, so nothing said is lost."""
    said = " / ".join(" ".join(text.split()) for text in texts)
    if len(said) > width:
        said = said[: width - 1] + "…"
    return _(
        "   !! the last run was cut short before it recorded what you said; passing it on"
        " now: {said}"
    ).format(said=said)


def step_header(step: str, round_no: int, rounds: int, *, resumed: bool, woke: int | None) -> str:
    """``== 干活 =====...  3/3  <- 接上次 · 第 3 次唤醒`` (the tail only when resumed;
    ``woke=None``, as for ``flower once``, which has no wakes: ``<- 接上次`` alone)."""
    head = f"== {shown_label(step)} "
    head += "=" * max(3, HEADER_WIDTH - shown_width(head))
    line = f"{head}  {round_no}/{rounds}"
    if resumed:
        line += "  " + (
            _("<- carrying on")
            if woke is None
            else _("<- carrying on · wake {count}").format(count=woke)
        )
    return line


def step_heading(
    label: str, *, resumed: bool, rounds: int, work_step: str, woke: int | None
) -> str:
    """The :func:`step_header` of a run of step ``label`` (``#retry``, ``#round``, a
    judge's mark: :func:`flower.core.labels.parse_label`): a judge's round counts the
    work step's ``rounds``, a retry is one run, a round of the gated work step counts
    ``rounds``, any other step one; ``resumed``: it goes on in a session an earlier
    process made."""
    parsed = parse_label(label)
    if parsed.judge:
        judged = label[: label.rindex("#")]  # the step with the judge's mark
        return step_header(judged, parsed.n, rounds, resumed=False, woke=woke)
    if parsed.kind == "retry":
        return step_header(label, 1, 1, resumed=resumed, woke=woke)
    gated = parsed.kind == "round" or same_step(parsed.step, work_step)
    total = rounds if gated else 1
    return step_header(parsed.step, parsed.n, total, resumed=resumed, woke=woke)


def fresh_start_line(
    reason: str,
    *,
    moved_from: str | None,
    steps: list[str],
    archived: str | None,
    lineage_name: str,
) -> str:
    """Under the banner when lineage was there but this wake cannot use it: why it starts
    afresh, where the old lineage went and the command that takes the old place back."""
    if reason == "moved":
        why = _("the lineage here was written for {path} (moved or copied)").format(path=moved_from)
    elif reason == "gone":
        why = _("the sessions of {steps} are gone from the store").format(steps=shown_steps(steps))
    else:
        why = _("{lineage} could not be read").format(lineage=lineage_name)
    if archived is None:
        back = _("it could not be set aside, so it is kept as it is and not written this run")
    else:
        back = _("old lineage in {path}/ · `flower adopt {path}` takes the old place back").format(
            path=archived
        )
    return _("   starting fresh: {why}; {back}").format(why=why, back=back)


__all__ = [
    "HEADER_WIDTH",
    "BannerLine",
    "Tone",
    "WakeBanner",
    "archived_said",
    "brief_from_request_line",
    "fresh_banner",
    "fresh_start_line",
    "fresh_start_said",
    "goals_edited_line",
    "goals_fallback_line",
    "lost_sessions_line",
    "not_used_line",
    "passed_on_said",
    "rewound_part",
    "step_header",
    "step_heading",
    "unrecorded_line",
    "wake_banner",
    "wake_banner_lines",
]
