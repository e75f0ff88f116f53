"""The judge's verdict: which goals are met, read from its reply one line per goal."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from flower.core.i18n import N_, _

NO_VERDICT = N_("the judge gave no verdict")
"""The note of a goal the judge did not rule on (it counts as unmet)."""

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
        status, note = found.get(n, (False, _(NO_VERDICT)))
        verdict.met.append(status)
        verdict.notes.append(note)
    return verdict


__all__ = ["NO_VERDICT", "Verdict", "parse_verdict"]
