"""Step keys and run labels: built, parsed and shown in one place.

A step's *key* names it in lineage (``steps``) and in the manifest (``step``). The
built-in workflow's three steps have one key per language flower speaks: the step's
name in that language (``确认需求``, ``设定目标``, ``干活`` in Chinese, as the seed has
them; ``confirm the brief``, ``set goals``, ``work`` in English). A wake uses the key
lineage already holds for the step, in whichever language (so a directory switched
between languages resumes), and the key in its own language for a step lineage does
not name yet (so an English user's files hold no Chinese they did not write), as
:func:`flower.workflow.documents.documents` does for the brief and the goals.

A *label* is what one agent run of a step is recorded as, in four forms (seed):
``<step>`` (the first try), ``<step>#retry<N>``, ``<step>#round<N>`` (the judge sent it
back) and ``<step>·判定#<N>`` (the judge's round; ``<step>·judge#<N>`` in English).
Labels are data: a manifest keeps them as written, and :func:`parse_label` reads the
judge's mark of any language.

This module sits in the core because the core reads labels too (a rewind names its
step as lineage has it); the workflow builds them (``flower.workflow.base`` and
``flower.workflow.goal``) and the CLI and the viewer show them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache
from typing import Literal, NamedTuple

from flower.core.i18n import N_, _, available_languages, translations

CLARIFY_STEP = N_("confirm the brief")
GOALS_STEP = N_("set goals")
WORK_STEP = N_("work")
BUILTIN_STEPS = (CLARIFY_STEP, GOALS_STEP, WORK_STEP)
"""The built-in steps, by their English names (the msgids of their keys)."""

JUDGE_MARK = N_("{step}·judge")
"""How a judge's round of ``{step}`` is named (``{step}·判定`` in Chinese)."""


# -- step keys -------------------------------------------------------------------------


def step_keys(message: str) -> list[str]:
    """Every key the built-in step ``message`` may have: the one of this wake's language
    first, then every other language's."""
    own = _(message)
    return list(dict.fromkeys([own, *(_keys_by_language(message).values())]))


def _keys_by_language(message: str) -> dict[str, str]:
    return {lang: translations(lang).gettext(message) for lang in available_languages()}


def builtin_key(message: str, recorded: Iterable[str] = ()) -> str:
    """The key of the built-in step ``message`` for this wake: the one ``recorded``
    (lineage's keys) holds in any language, this wake's language's first; else the key
    in this wake's language."""
    keys = step_keys(message)
    there = set(recorded)
    return next((key for key in keys if key in there), keys[0])


def builtin_message(key: str) -> str | None:
    """Which built-in step ``key`` is a key of (its English name), in any language."""
    for message in BUILTIN_STEPS:
        if key in _keys_by_language(message).values():
            return message
    return None


def same_step(key: str, other: str) -> bool:
    """Whether two keys name one step: equal, or one built-in step's keys in two
    languages."""
    if key == other:
        return True
    message = builtin_message(key)
    return message is not None and message == builtin_message(other)


# -- labels ----------------------------------------------------------------------------

Kind = Literal["first", "retry", "round", "judge"]


@dataclass(frozen=True)
class StepLabel:
    """What a label says: its ``step``, its ``kind`` and its number ``n`` (1 for a
    first try, the round for ``#round<N>`` and a judge's round, N for ``#retry<N>``;
    0 for a judge's mark with no round, as a header shows it)."""

    step: str
    kind: Kind
    n: int

    @property
    def judge(self) -> bool:
        return self.kind == "judge"


def retry_label(step: str, n: int) -> str:
    return f"{step}#retry{n}"


def round_label(step: str, n: int) -> str:
    return f"{step}#round{n}"


def judge_label(step: str, n: int) -> str:
    """The judge's round ``n`` on ``step``, its mark in this wake's language."""
    return _(JUDGE_MARK).format(step=step) + f"#{n}"


def _judge_marks() -> tuple[str, ...]:
    """The judge's mark (``·判定``, ``·judge``) of every language, longest first."""
    marks = {
        translations(lang).gettext(JUDGE_MARK).replace("{step}", "")
        for lang in available_languages()
    }
    return tuple(sorted((mark for mark in marks if mark), key=len, reverse=True))


@cache
def _label_pattern(marks: tuple[str, ...]) -> re.Pattern[str]:
    judge = "|".join(re.escape(mark) for mark in marks)
    return re.compile(
        rf"^(?P<step>.*?)(?:(?P<judge>{judge})(?:#(?P<jn>\d+))?|#(?P<kind>retry|round)?(?P<n>\d+))?$"
    )


def parse_label(label: str) -> StepLabel:
    """``干活·判定#2`` -> ``StepLabel("干活", "judge", 2)``; ``work#round3`` -> round 3;
    ``work#retry1`` -> retry 1; anything else is a first try of the step it names."""
    match = _label_pattern(_judge_marks()).match(label)
    assert match is not None  # the pattern matches any string
    if match.group("judge"):  # ``<step>·判定`` alone names the judge of the step
        return StepLabel(match.group("step"), "judge", int(match.group("jn") or 0))
    kind = match.group("kind")
    if kind == "retry":
        return StepLabel(match.group("step"), "retry", int(match.group("n")))
    if kind == "round":
        return StepLabel(match.group("step"), "round", int(match.group("n")))
    if match.group("n"):  # ``<step>#<N>``: a numbered run of a workflow of one's own
        return StepLabel(match.group("step"), "first", int(match.group("n")))
    return StepLabel(label, "first", 1)


class LabelParts(NamedTuple):
    """A label taken apart: ``干活·判定#1`` is step ``干活``, a judge's, tail ``#1``."""

    step: str
    judge: bool
    tail: str  # "#retry1", "#round2", "#1" or ""


def label_parts(label: str) -> LabelParts:
    """The step, whether it is the judge's run, and the tail of a label."""
    parsed = parse_label(label)
    if parsed.judge:
        return LabelParts(parsed.step, True, f"#{parsed.n}" if parsed.n else "")
    return LabelParts(parsed.step, False, label[len(parsed.step) :])


# -- as a user reads and types them ------------------------------------------------------


def shown_step(name: str, gettext: Callable[[str], str] = _) -> str:
    """A step's name as shown: a built-in step's key (in any language) by its name in
    the active language (or through ``gettext``, a catalog's own), any other as is."""
    message = builtin_message(name)
    return gettext(message) if message is not None else name


def shown_label(label: str, gettext: Callable[[str], str] = _) -> str:
    """A label as the user reads it: ``干活·判定#1`` -> ``work·judge#1`` in English.
    ``gettext`` is a catalog's own for a page that speaks its own language (flower ui)."""
    parsed = parse_label(label)
    step = shown_step(parsed.step, gettext)
    if parsed.judge:
        return gettext(JUDGE_MARK).format(step=step) + (f"#{parsed.n}" if parsed.n else "")
    return step + label[len(parsed.step) :]


def shown_steps(labels: Iterable[str]) -> str:
    """Steps or labels as shown, in one list: ``work, set goals`` in English,
    ``干活、设定目标`` in Chinese (the list separator is the language's too)."""
    return _(", ").join(shown_label(label) for label in labels)


def step_named(name: str, keys: Iterable[str]) -> str | None:
    """The key among ``keys`` that ``name`` names, as a user types it: the key itself
    (``干活``) or its shown name in any language flower speaks (``work``); a key wins
    over another step's shown name. ``None`` when none does."""
    keys = list(keys)
    if name in keys:
        return name
    catalogs = [translations(lang).gettext for lang in available_languages()]
    for key in keys:
        if any(shown_step(key, gettext) == name for gettext in catalogs):
            return key
    return None


__all__ = [
    "BUILTIN_STEPS",
    "CLARIFY_STEP",
    "GOALS_STEP",
    "JUDGE_MARK",
    "WORK_STEP",
    "LabelParts",
    "StepLabel",
    "builtin_key",
    "builtin_message",
    "judge_label",
    "label_parts",
    "parse_label",
    "retry_label",
    "round_label",
    "same_step",
    "shown_label",
    "shown_step",
    "shown_steps",
    "step_keys",
    "step_named",
]
