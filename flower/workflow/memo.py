"""What was said and has not reached a step yet, kept in lineage until it has: a wake
cut short leaves the next one to finish the job (see flower.workflow.builtin).

A first run's request (:data:`REQUEST`) until the brief is written; what was said on
wakes until the working step (:class:`WakeMemo`) or a clarifier that has not written
the brief (:class:`ClarifyMemo`) holds it, and whether the goals still lack it."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from flower.core.lineage import Lineage
from flower.core.transcript.blocks import prompt_texts
from flower.workflow.documents import read_goals
from flower.workflow.said_journal import Said, mark_recorded


class WakeMemo:
    """What was said on wakes and has not reached the working step yet, and whether
    the goals still lack it: kept in the lineage record (``extra``), written at once,
    so a wake cut short leaves the next one to finish the job."""

    UNHEARD = "unheard"
    GOALS_STALE = "goals_stale"
    SENT_AFTER = "unheard_sent_after"
    """Where the working step's transcript stood when the words were last sent to it:
    ``{"session": id or None, "entries": n}``; what a cut-short wake stored after that
    point was heard."""
    GOALS_SEEN = "goals_when_said"
    """A digest of the goals file when words were last said (:func:`goals_digest`): a
    goals file that differs from it on a later wake was edited after them by the user,
    and is the user's answer."""

    def __init__(self, lineage: Lineage | None) -> None:
        self.lineage = lineage
        self.extra: dict[str, Any] = lineage.record.extra if lineage is not None else {}
        unheard = self.extra.get(self.UNHEARD)
        valid = isinstance(unheard, list) and all(isinstance(t, str) for t in unheard)
        self.unheard: list[str] = list(unheard) if valid and unheard else []
        self.goals_stale = self.extra.get(self.GOALS_STALE) is True
        sent = self.extra.get(self.SENT_AFTER)
        self.sent_after: dict[str, Any] | None = sent if isinstance(sent, dict) else None
        seen = self.extra.get(self.GOALS_SEEN)
        self.goals_seen: str | None = seen if isinstance(seen, str) else None

    STALES_GOALS = True
    """Whether new words leave the goals to derive again."""

    def said(self, *texts: str, goals: Path | None = None) -> None:
        """Keep ``texts`` (in order) until the step hears them, and how the goals file
        ``goals`` read then: one lineage save."""
        self.unheard += texts
        self.goals_stale = self.goals_stale or self.STALES_GOALS
        if self.STALES_GOALS and goals is not None:
            self.goals_seen = goals_digest(goals)
        self._save()

    def goals_rederived(self) -> None:
        if self.goals_stale or self.goals_seen is not None:
            self.goals_stale = False
            self.goals_seen = None
            self._save()

    def goals_edited(self, goals: Path) -> bool:
        """Whether the goals are stale and the goals file ``goals`` was changed since
        the words were said (by the user: their answer, used as it is)."""
        return goals_edited(self.extra, goals)

    def heard(self, texts: list[str] | None = None) -> None:
        """Everything unheard (or only ``texts``) reached the working step."""
        left = [t for t in self.unheard if texts is not None and t not in texts]
        if left != self.unheard:
            self.unheard = left
            self._save()

    def sending(self, session_id: str | None, entries: int) -> None:
        """The words go to the working step now, its transcript ``entries`` long."""
        self.sent_after = {"session": session_id, "entries": entries}
        self._save()

    def landed(self, session_id: str | None, entries: list[dict[str, Any]]) -> list[str]:
        """The unheard words a cut-short wake already stored in the working step's
        transcript (``entries``, of ``session_id``): they were sent, the model may have
        answered them; sending them again would say them twice."""
        sent = self.sent_after
        if sent is None or session_id is None:
            return []
        # a session other than the one they were sent to was started after (a relay)
        start = sent.get("entries") if sent.get("session") == session_id else 0
        start = start if isinstance(start, int) and start >= 0 else len(entries)
        prompts = [text for entry in entries[start:] for text in prompt_texts(entry)]
        return [t for t in self.unheard if any(t in prompt for prompt in prompts)]

    def _save(self) -> None:
        if not self.unheard:
            self.sent_after = None
        for key, value in (
            (self.UNHEARD, self.unheard),
            (self.GOALS_STALE, self.goals_stale),
            (self.SENT_AFTER, self.sent_after),
            (self.GOALS_SEEN, self.goals_seen),
        ):
            if value:
                self.extra[key] = value
            else:
                self.extra.pop(key, None)
        if self.lineage is not None:
            self.lineage.save()


class ClarifyMemo(WakeMemo):
    """What was said on wakes to a clarifier that had not confirmed the brief yet, until
    the clarifier's transcript holds it (the goals are derived after it anyway)."""

    UNHEARD = "unheard_by_clarifier"
    GOALS_STALE = "clarify_goals_stale"  # never set: the goals come after the brief
    SENT_AFTER = "unheard_by_clarifier_sent_after"
    GOALS_SEEN = "clarify_goals_when_said"  # never set, as GOALS_STALE
    STALES_GOALS = False


def goals_digest(goals: Path) -> str:
    """What the goals file holds, as a digest (``""``: missing or unreadable)."""
    try:
        return hashlib.sha256(goals.read_bytes()).hexdigest()
    except OSError:
        return ""


def goals_edited(extra: dict[str, Any], goals: Path) -> bool:
    """Whether lineage's ``extra`` leaves the goals to derive again although the goals
    file ``goals`` was changed since the words were said and lists goals: the user
    answered, and the file is used as it is."""
    seen = extra.get(WakeMemo.GOALS_SEEN)
    if extra.get(WakeMemo.GOALS_STALE) is not True or not isinstance(seen, str):
        return False
    return goals_digest(goals) != seen and bool(read_goals(goals))


REQUEST = "request"
"""Lineage extra: a first run's request (and what was said to its clarifier after it),
until the brief is written: a clarifier that never writes one, resumed after a kill,
a 401 or a dropped connection, falls back on it."""


def remember_request(
    lineage: Lineage | None, said: str | None, journal_words: list[Said] | None = None
) -> str | None:
    """The request of a first run: what was said now, else what a run killed before its
    clarifier started was asked (kept in lineage, written at once, with the tokens of
    the ``journal_words`` it came from)."""
    if lineage is None:
        return said
    extra = lineage.record.extra
    earlier = extra.get(REQUEST) if isinstance(extra.get(REQUEST), str) else None
    request = said or earlier  # what is said now replaces a request no step took up
    if journal_words or (request and request != earlier):
        if request:
            extra[REQUEST] = request
        mark_recorded(extra, journal_words or [])
        lineage.save()
    return request


def request_with(lineage: Lineage | None, texts: list[str]) -> str | None:
    """The request kept in lineage, with ``texts`` (said to a clarifier that has not
    written the brief yet) added to it; saved by the caller, with the words."""
    if lineage is None:
        return "\n\n".join(texts) or None
    extra = lineage.record.extra
    earlier = extra.get(REQUEST) if isinstance(extra.get(REQUEST), str) else None
    new = [text for text in texts if text not in (earlier or "")]
    request = "\n\n".join([earlier, *new] if earlier else new) or None
    if request and request != earlier:
        extra[REQUEST] = request
    return request


def forget_request(lineage: Lineage | None) -> None:
    if lineage is not None and REQUEST in lineage.record.extra:
        del lineage.record.extra[REQUEST]
        lineage.save()


__all__ = [
    "REQUEST",
    "ClarifyMemo",
    "WakeMemo",
    "forget_request",
    "goals_digest",
    "goals_edited",
    "remember_request",
    "request_with",
]
