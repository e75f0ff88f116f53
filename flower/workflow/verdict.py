"""The judge's verdict: which goals are met, read from its reply one line per goal."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import msgspec

from flower.core.i18n import N_, _, every_translation
from flower.workflow.state import WakeVerdict

if TYPE_CHECKING:
    from flower.core.lineage import Lineage

NO_VERDICT = N_("the judge gave no verdict")
UNMET_WITH_NOTE = N_("{n}. {goal} — {note}")
"""A goal not met and the judge's note on it, as the work step is told."""
"""The note of a goal the judge did not rule on (it counts as unmet)."""

# TRANSLATORS: the words a judge's verdict line may open with for a goal
# that is met ("1. met — the evidence", as the judge prompt asks), split
# by "|", the prompt's word first. English and every catalog's words are
# accepted in any language: a judge may answer in any of them.
MET_WORDS = N_("met|pass|yes")
# TRANSLATORS: as "met|pass|yes", for a goal that is not met ("2. not
# met — what is missing, and where"), the prompt's word first.
NOT_MET_WORDS = N_("not met|unmet|fail|no")
MET_SIGNS = ("✅", "[x]")
NOT_MET_SIGNS = ("❌", "[ ]")
"""Marks that say the same in every language."""

# TRANSLATORS: the words a judge may put before a goal's number on a verdict
# line ("G1: met", "goal 1. met"), split by "|". Every catalog's words are
# accepted in any language.
GOAL_PREFIXES = N_("G|goal")


def _verdict_line() -> re.Pattern[str]:
    """A verdict line: a goal number, maybe after a prefix of any language, then the rest."""
    prefixes = {
        word.strip()
        for translated in every_translation(GOAL_PREFIXES)
        for word in translated.split("|")
        if word.strip()
    }
    prefix = "|".join(re.escape(word) for word in sorted(prefixes, key=len, reverse=True))
    return re.compile(
        rf"^\s*(?:[-*]\s*)?(?:(?:{prefix})\s*)?(\d+)\s*[.:：)、]\s*(.*)$", re.IGNORECASE
    )


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
            _(UNMET_WITH_NOTE).format(n=n, goal=goal, note=note) if note else f"{n}. {goal}"
            for n, goal, note in self.unmet()
        )


VERDICT_KEY = "verdict"
"""The manifest key a judge run's row holds its verdict under (numbers only, no text):
``{"goals": M, "met": N, "unmet": [goal numbers]}``."""


@dataclass(frozen=True)
class RoundVerdict:
    """What a judge's round found, as its manifest row keeps it."""

    goals: int
    met: int
    unmet: tuple[int, ...] = ()

    @property
    def all_met(self) -> bool:
        return self.goals > 0 and self.met == self.goals


def manifest_fields(verdict: Verdict) -> dict[str, Any]:
    """The keys a judge run's manifest row adds for ``verdict``."""
    unmet = [n for n, _goal, _note in verdict.unmet()]
    return {VERDICT_KEY: {"goals": len(verdict.goals), "met": sum(verdict.met), "unmet": unmet}}


def recorded_verdict(row: dict[str, Any], goals: list[str] | None = None) -> RoundVerdict | None:
    """The verdict a judge run's manifest row records; for a row written before rows
    held one, the judge's text read against ``goals`` (the goals file as it is now)
    when given. None for a judge run that failed or a verdict that cannot be read."""
    found = row.get(VERDICT_KEY)
    if isinstance(found, dict):
        count, met, unmet = found.get("goals"), found.get("met"), found.get("unmet")
        if not isinstance(count, int) or not isinstance(met, int):
            return None
        numbers = [n for n in unmet if isinstance(n, int)] if isinstance(unmet, list) else []
        return RoundVerdict(count, met, tuple(numbers))
    text = row.get("text")
    if not goals or row.get("ok") is not True or not isinstance(text, str) or not text:
        return None
    verdict = parse_verdict(text, goals)
    unmet = tuple(n for n, _goal, _note in verdict.unmet())
    return RoundVerdict(len(goals), sum(verdict.met), unmet)


def verdict_words() -> list[tuple[str, bool]]:
    """Every word a verdict line may open with and whether it means met, longest first:
    the words of every language flower has a catalog for, and the signs."""
    words: dict[str, bool] = {}
    for met, message, signs in (
        (False, NOT_MET_WORDS, NOT_MET_SIGNS),
        (True, MET_WORDS, MET_SIGNS),
    ):
        for translated in every_translation(message):
            for word in translated.split("|"):
                if word.strip():
                    words.setdefault(word.strip().lower(), met)  # in both lists: not met
        for sign in signs:
            words.setdefault(sign, met)
    # the longest that fits wins: "未达成" is not "达成", "not met" is not "no"
    return sorted(words.items(), key=lambda item: -len(item[0]))


def _status(rest: str, words: list[tuple[str, bool]]) -> tuple[bool | None, str]:
    low = rest.strip().lower()
    for word, met in words:
        if low.startswith(word):
            return met, rest.strip()[len(word) :].strip(" -—:：,，")
    return None, rest.strip()


def parse_verdict(reply: str, goals: list[str]) -> Verdict:
    """Read the judge's per-goal lines; a goal it did not rule on counts as unmet.

    The last line for a goal number wins (the conclusion comes at the end).
    """
    words = verdict_words()
    verdict_line = _verdict_line()
    found: dict[int, tuple[bool, str]] = {}
    for line in reply.splitlines():
        match = verdict_line.match(line)
        if not match:
            continue
        number = int(match.group(1))
        if not 1 <= number <= len(goals):
            continue
        status, note = _status(match.group(2), words)
        if status is not None:
            found[number] = (status, note)
    verdict = Verdict(goals=list(goals))
    for n in range(1, len(goals) + 1):
        status, note = found.get(n, (False, _(NO_VERDICT)))
        verdict.met.append(status)
        verdict.notes.append(note)
    return verdict


LAST_VERDICT = "verdict"
"""The lineage ``extra`` key holding the judge's last verdict (a :class:`WakeVerdict`).

The verdict is kept twice on purpose, and both come from one :class:`Verdict`: every
judge round's manifest row holds that round's numbers (:data:`VERDICT_KEY`, the history
``flower ui`` shows, run directory wide, absent with ``Workflow(manifest=False)``), and
lineage holds the last one of this workspace with its wake (``flower status`` reads it
without scanning the manifest, and it says "no verdict" when the judge's run failed,
which leaves no manifest verdict)."""


def record_verdict(lineage: Lineage | None, verdict: WakeVerdict) -> None:
    """Keep the judge's last verdict in lineage (written at once)."""
    if lineage is not None:
        lineage.record.extra[LAST_VERDICT] = msgspec.to_builtins(verdict)
        lineage.save()


def last_verdict(extra: Mapping[str, Any]) -> WakeVerdict | None:
    """The judge's last verdict kept in lineage, or None (none yet, or not readable)."""
    raw = extra.get(LAST_VERDICT)
    if not isinstance(raw, dict):
        return None
    try:
        return msgspec.convert(raw, WakeVerdict)
    except msgspec.ValidationError:
        return None


__all__ = [
    "GOAL_PREFIXES",
    "LAST_VERDICT",
    "MET_WORDS",
    "NOT_MET_WORDS",
    "NO_VERDICT",
    "VERDICT_KEY",
    "RoundVerdict",
    "Verdict",
    "last_verdict",
    "manifest_fields",
    "parse_verdict",
    "record_verdict",
    "recorded_verdict",
    "verdict_words",
]
