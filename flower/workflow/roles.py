"""Who each session is in a workflow: its role, its step, and a title from the user's
request rather than flower's own prompt (``flower sessions list`` and ``flower ui``).

The manifest is the source: it records every step run with its session id and run
label (``干活·判定#1``). The label's step against the workflow's step names gives the
role; a judge's label is the judge's; a session that first appears in a relay's row
(one that retires older sessions) is a relay. A session the manifest does not know has
no role here, and the caller keeps whatever it showed before.

The title is the request the user typed, read from the clarifier session that came
before in the manifest (its first prompt holds it); without one, the step's name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from flower.core.i18n import N_
from flower.core.labels import label_parts, shown_label, step_named
from flower.workflow.clarify import request_in
from flower.workflow.documents import workflow_names

if TYPE_CHECKING:
    from flower.core.config import Settings
    from flower.core.fork import ForkOrigin
    from flower.core.protocols import SessionStoreBase
    from flower.stores.listing import SessionRow

ROLES = {
    "clarifier": N_("clarifier"),
    "goals": N_("goals"),
    "worker": N_("worker"),
    "judge": N_("judge"),
    "relay": N_("relay"),
}
"""The roles a session of the built-in workflow has, and the English words they are
shown by (through the catalogs, like every word flower says)."""


@dataclass(frozen=True)
class SessionRole:
    """What the manifest says one session was."""

    role: str
    """``clarifier``, ``goals``, ``worker``, ``judge``, ``relay``; ``""`` for a step of
    a workflow of one's own (its step says what it is)."""
    step: str
    """The step key the session ran under (data, as written: ``干活``)."""
    label: str
    """The run label of its first run (``干活·判定#1``)."""
    clarifier: str = ""
    """The session id of the clarifier whose request this session works on ("")."""

    def shown_role(self, gettext: Callable[[str], str]) -> str:
        message = ROLES.get(self.role)
        return gettext(message) if message is not None else ""

    def shown_step(self, gettext: Callable[[str], str]) -> str:
        """The label as the user reads it (``work·judge#1`` in English)."""
        return shown_label(self.label, gettext)


def _role_of(label: str, row: Mapping[str, Any], builtin: Mapping[str, str]) -> str:
    parts = label_parts(label)
    if parts.judge:
        return "judge"
    retired = row.get("retired")
    if isinstance(retired, list) and retired:
        return "relay"
    key = step_named(parts.step, builtin)
    return builtin.get(key or parts.step, "")


def session_roles(
    rows: Iterable[Mapping[str, Any]], settings: Settings | None = None
) -> dict[str, SessionRole]:
    """Each session the manifest ``rows`` name: its role and step as of its first run
    (a relayed session resumed on a later wake stays the relay it started as)."""
    names = workflow_names(settings)
    builtin = {
        names.clarify_step: "clarifier",
        names.goals_step: "goals",
        names.work_step: "worker",
    }
    found: dict[str, SessionRole] = {}
    clarifier = ""
    for row in rows:
        session, label = row.get("session_id"), row.get("step")
        if not isinstance(session, str) or not session or not isinstance(label, str):
            continue
        known = found.get(session)
        if known is None:
            role = _role_of(label, row, builtin)
            if role == "clarifier":
                clarifier = session
            step = label_parts(label).step
            found[session] = known = SessionRole(role, step, label, clarifier)
    return found


def run_roles(settings: Settings) -> dict[str, SessionRole]:
    """:func:`session_roles` of the run directory's manifest; nothing when it cannot be
    read (a listing then shows the sessions as they are)."""
    from flower.core.manifest import read_manifest

    try:
        return session_roles(read_manifest(settings.run_path), settings)
    except OSError:
        return {}


def first_prompt(entries: Iterable[Mapping[str, Any]]) -> str:
    """The words of a transcript's first prompt (a user message that is no tool result)."""
    from flower.core.transcript.blocks import content_words

    for entry in entries:
        message = entry.get("message")
        if entry.get("type") != "user" or not isinstance(message, dict):
            continue
        if entry.get("isMeta") or entry.get("isCompactSummary"):
            continue
        content = message.get("content")
        if isinstance(content, list) and any(
            isinstance(b, dict) and b.get("type") == "tool_result" for b in content
        ):
            continue
        words = content_words(content, skip=("image",))
        if words and not words.isspace():
            return words
    return ""


class Titles:
    """Titles of the sessions the manifest knows: the request of each one's clarifier
    (its transcript read by ``load(project_key, session_id)`` once per clarifier), else
    its step as shown through ``gettext``."""

    def __init__(
        self,
        roles: Mapping[str, SessionRole],
        load: Callable[[str, str], Iterable[Mapping[str, Any]] | None],
        gettext: Callable[[str], str],
        limit: int = 120,
    ) -> None:
        self.roles = roles
        self.load = load
        self.gettext = gettext
        self.limit = limit
        self._requests: dict[str, str | None] = {}

    def request(self, project_key: str, clarifier: str) -> str | None:
        if clarifier not in self._requests:
            try:
                entries = self.load(project_key, clarifier) or []
            except Exception:  # a clarifier that cannot be read: the step is the title
                entries = []
            self._requests[clarifier] = request_in(first_prompt(entries))
        return self._requests[clarifier]

    def __call__(self, project_key: str, session_id: str) -> str | None:
        """The session's title; None for a session the manifest does not know."""
        known = self.roles.get(session_id)
        if known is None:
            return None
        request = self.request(project_key, known.clarifier) if known.clarifier else None
        words = " ".join(request.split()) if request else known.shown_step(self.gettext)
        return words if len(words) <= self.limit else words[: self.limit - 1] + "…"


def known_sessions(
    settings: Settings,
    store: SessionStoreBase,
    listed: Iterable[tuple[str, str]],
    gettext: Callable[[str], str],
) -> tuple[dict[str, SessionRole], dict[str, str]]:
    """What the run directory's manifest says the ``listed`` sessions (project, id)
    were, and their titles (:class:`Titles`); sessions it does not know are left out,
    and their transcripts are not read."""
    from flower.core.records import SessionKey

    listed = list(listed)
    everyone = run_roles(settings)
    roles = {s: everyone[s] for _p, s in listed if s in everyone}
    titles = Titles(roles, lambda p, s: store.load(SessionKey(p, s)), gettext)
    return roles, {s: titles(p, s) or "" for p, s in listed if s in roles}


class ListedSession(NamedTuple):
    """One row of ``flower sessions list``."""

    row: SessionRow
    """The store's listing row (:func:`flower.stores.listing.listing`)."""
    known: SessionRole | None
    """What the run directory's manifest says the session was; None: it does not know it."""
    title: str | None
    """Its title (:class:`Titles`; ``""`` when it has none), None when not ``known``."""
    forked_from: ForkOrigin | None = None
    """What it was forked from, when the listing was asked for forks."""

    def as_json(self, forks: bool = False) -> dict[str, object]:
        """What ``flower sessions list --json`` gives for it (``forked_from`` with ``forks``)."""
        known, row = self.known, self.row
        found: dict[str, object] = {
            "project_key": row.project_key,
            "session_id": row.session_id,
            "mtime_ms": row.mtime_ms,
            "modified": row.last_active,
            "role": (known.role or None) if known else None,
            "step": known.step if known else None,
            "label": known.label if known else None,
            "title": self.title,
        }
        if forks:
            origin = self.forked_from
            found["forked_from"] = origin and {
                "session_id": origin.session_id,
                "message_uuid": origin.message_uuid,
            }
        return found


def listed_sessions(
    settings: Settings,
    store: SessionStoreBase,
    project: str | None = None,
    *,
    workspace: Path | None = None,
    forks: bool = False,
    gettext: Callable[[str], str] = str,
) -> list[ListedSession]:
    """The rows of ``flower sessions list``: the store's sessions of ``project`` (default:
    of every project; :func:`~flower.stores.listing.listing`, newest first), each with
    what :func:`known_sessions` says of it and, with ``forks``, what it was forked from
    (which reads each session's first entry). A store that cannot list its sessions
    raises ``NotImplementedError``."""
    from flower.stores.listing import listed_origin, listing

    rows = listing(store, project, workspace=workspace)
    origins = {r.key: listed_origin(store, r.key) for r in rows} if forks else {}
    roles, titles = known_sessions(
        settings, store, [(r.project_key, r.session_id) for r in rows], gettext
    )
    return [
        ListedSession(r, roles.get(r.session_id), titles.get(r.session_id), origins.get(r.key))
        for r in rows
    ]


__all__ = [
    "ROLES",
    "ListedSession",
    "SessionRole",
    "Titles",
    "first_prompt",
    "known_sessions",
    "listed_sessions",
    "run_roles",
    "session_roles",
]
