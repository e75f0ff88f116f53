"""Fork a session into a new one on any store, in the shape the Claude Agent SDK writes.

:func:`fork` copies the active chain of a transcript (up to an entry, by default its
leaf) into a new session: every entry gets a new ``uuid`` and the new ``sessionId``,
``parentUuid`` and ``logicalParentUuid`` follow the new uuids, and each entry is stamped
``forkedFrom: {sessionId, messageUuid}`` naming the entry it was copied from, as the
SDK's ``fork_session_via_store`` does (so either tool reads the other's forks). A
``custom-title`` entry ends the fork, as the SDK writes it. The source is never touched.

The whole fork is one ``append``: a store's batch is durable and all-or-nothing, so a
process killed in the middle leaves no fork or the whole fork. New uuids are derived
from the fork's session id and the source uuid, so repeating a fork with the same
``session_id`` writes the same entries and the store's de-duplication adds nothing.
"""

from __future__ import annotations

import uuid as uuid_module
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, NamedTuple

import msgspec

from flower.core.errors import FlowerError, StoreDamagedError, UnknownSessionError
from flower.core.i18n import _
from flower.core.protocols import SessionStore, SessionStoreBase
from flower.core.records import Entry, SessionKey
from flower.core.transcript.blocks import is_conversation, prompt_texts
from flower.core.transcript.chain import active_chain

FORK_NAMESPACE = uuid_module.UUID("b6d3f0c2-1f4e-4c59-9e7a-6a2f6f0c4b21")
"""Namespace of the uuids a fork derives from its session id and the source uuids."""

_SESSION_ONLY_FIELDS = ("teamName", "agentName", "slug", "sourceToolAssistantUUID")
"""Fields the SDK's fork drops: they would leak the source session's state."""

_TITLE_CHARS = 200


class ForkError(FlowerError, ValueError):
    """A fork that cannot be made as asked (an entry off the chain, a taken id...)."""

    exit_code = 2


class ForkOrigin(msgspec.Struct, frozen=True):
    """Where a forked session came from: ``forkedFrom`` of its entries."""

    session_id: str
    message_uuid: str


class UserTurn(msgspec.Struct, frozen=True):
    """One thing the user said on a chain (not a tool result): where a rewind can go."""

    uuid: str
    index: int
    """Position of the prompt on the chain."""
    timestamp: str | None
    text: str
    """The prompt's words (its first text)."""
    context: int | None
    """Tokens of context the model had on the last reply before this prompt."""


def _now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def fork_uuid(session_id: str, source_uuid: str) -> str:
    """The uuid a fork into ``session_id`` gives the copy of ``source_uuid``."""
    return str(uuid_module.uuid5(FORK_NAMESPACE, f"{session_id}/{source_uuid}"))


def forked_from(entries: Sequence[Mapping[str, Any]]) -> ForkOrigin | None:
    """The session (and entry) a transcript was forked from, from its first stamped entry."""
    for entry in entries:
        origin = entry.get("forkedFrom")
        if isinstance(origin, dict):
            sid, uid = origin.get("sessionId"), origin.get("messageUuid")
            if isinstance(sid, str) and isinstance(uid, str):
                return ForkOrigin(sid, uid)
    return None


def is_prompt(entry: Mapping[str, Any]) -> bool:
    """A user entry the user said (words, not tool results, summaries or meta notes)."""
    if entry.get("type") != "user" or entry.get("isSidechain"):
        return False
    if entry.get("isMeta") or entry.get("isCompactSummary"):
        return False
    return bool(prompt_texts(entry)) and isinstance(entry.get("uuid"), str)


def user_turns(chain: Sequence[Entry]) -> list[UserTurn]:
    """The prompts of an active chain, oldest first, with the context before each."""
    from flower.core.entries import reported_usage
    from flower.core.transcript.usage import context_tokens

    turns: list[UserTurn] = []
    context: int | None = None
    for i, entry in enumerate(chain):
        usage = reported_usage(entry) if entry.get("type") == "assistant" else None
        if usage:
            context = context_tokens(usage)
        if is_prompt(entry):
            stamp = entry.get("timestamp")
            turns.append(
                UserTurn(
                    uuid=entry["uuid"],
                    index=i,
                    timestamp=stamp if isinstance(stamp, str) else None,
                    text=prompt_texts(entry)[0],
                    context=context,
                )
            )
    return turns


def turns_back_point(chain: Sequence[Entry], turns: int, session_id: str) -> str:
    """The uuid a fork ``turns`` user turns back ends at: the entry before that prompt.

    Raises :class:`ForkError` when the chain has fewer than ``turns + 1`` prompts (the
    first prompt stays: a fork with nothing in it is no conversation).
    """
    if isinstance(turns, bool) or not isinstance(turns, int) or turns < 1:
        raise ForkError(
            _("turns back must be a whole number of at least 1, got {value}").format(
                value=repr(turns)
            )
        )
    prompts = user_turns(chain)
    if turns >= len(prompts):
        most = len(prompts) - 1
        raise ForkError(
            _(
                "session {session} has {count} user turn(s): it can go back at most {most} "
                "turn(s), not {turns}"
            ).format(session=session_id, count=len(prompts), most=most, turns=turns)
        )
    cut = prompts[len(prompts) - turns].index
    before = chain[cut - 1]
    return str(before["uuid"])


def _chain_to(key: SessionKey, entries: Sequence[Entry], at: str | None) -> list[Entry]:
    chain = [e for e in active_chain(entries) if not e.get("isSidechain")]
    if not any(is_conversation(e) for e in chain):
        raise ForkError(
            _("session {session} has no messages to fork").format(session=key.session_id)
        )
    if at is None:
        return chain
    for i, entry in enumerate(chain):
        if entry.get("uuid") == at:
            return chain[: i + 1]
    first, last = chain[0].get("uuid"), chain[-1].get("uuid")
    raise ForkError(
        _(
            "entry {uuid} is not on the active chain of session {session} ({count} entries, "
            "from {first} to {last}; {command} lists them)"
        ).format(
            uuid=repr(at),
            session=key.session_id,
            count=len(chain),
            first=first,
            last=last,
            command=f"`flower sessions show {key.session_id}`",
        )
    )


def _title(entries: Sequence[Entry]) -> str:
    """The SDK's choice: the last customTitle, else the last aiTitle, else the first prompt."""
    custom = ai = None
    for entry in entries:
        if isinstance(entry.get("customTitle"), str) and entry["customTitle"]:
            custom = entry["customTitle"]
        if isinstance(entry.get("aiTitle"), str) and entry["aiTitle"]:
            ai = entry["aiTitle"]
    if custom or ai:
        return str(custom or ai)
    for entry in entries:
        if is_prompt(entry):
            first = prompt_texts(entry)[0].strip().splitlines()
            if first:
                return first[0][:_TITLE_CHARS]
    return "Forked session"


def fork_entries(
    source: SessionKey, entries: Sequence[Entry], at: str | None, new_session_id: str
) -> list[Entry]:
    """The entries of a fork of ``entries`` (the transcript of ``source``) into
    ``new_session_id``, ending at ``at`` (default: the leaf). Pure; writes nothing."""
    chain = _chain_to(source, entries, at)
    mapping = {e["uuid"]: fork_uuid(new_session_id, e["uuid"]) for e in chain}
    by_uuid = {e["uuid"]: e for e in chain}
    writable = [e for e in chain if e.get("type") != "progress"]
    now = _now_iso()
    out: list[Entry] = []
    for i, original in enumerate(writable):
        parent = original.get("parentUuid")
        new_parent = None
        while isinstance(parent, str) and parent in by_uuid:  # skip progress ancestors
            if by_uuid[parent].get("type") != "progress":
                new_parent = mapping[parent]
                break
            parent = by_uuid[parent].get("parentUuid")
        logical = original.get("logicalParentUuid")
        forked: Entry = {
            **original,
            "uuid": mapping[original["uuid"]],
            "parentUuid": new_parent,
            "logicalParentUuid": mapping.get(logical) if logical else logical,
            "sessionId": new_session_id,
            # the leaf gets the time of the fork, so a reader picks it as the newest
            "timestamp": now if i == len(writable) - 1 else original.get("timestamp", now),
            "isSidechain": False,
            "forkedFrom": {"sessionId": source.session_id, "messageUuid": original["uuid"]},
        }
        for field in _SESSION_ONLY_FIELDS:
            forked.pop(field, None)
        out.append(forked)
    replacements = [
        r
        for e in entries
        if e.get("type") == "content-replacement"
        and e.get("sessionId") == source.session_id
        and isinstance(e.get("replacements"), list)
        for r in e["replacements"]
    ]
    if replacements:
        out.append(
            {
                "type": "content-replacement",
                "sessionId": new_session_id,
                "replacements": replacements,
                "uuid": fork_uuid(new_session_id, "content-replacement"),
                "timestamp": now,
            }
        )
    out.append(
        {
            "type": "custom-title",
            "sessionId": new_session_id,
            "customTitle": f"{_title(entries)} (fork)",
            "uuid": fork_uuid(new_session_id, "custom-title"),
            "timestamp": now,
        }
    )
    return out


def fork(
    store: SessionStore,
    key: SessionKey,
    at: str | None = None,
    *,
    session_id: str | None = None,
) -> SessionKey:
    """Fork the active chain of ``key`` up to entry ``at`` (default: the leaf) into a
    new session of the same project; returns its key.

    ``session_id`` names the fork (default: a new random uuid). Repeating a fork with
    the same arguments and ``session_id`` changes nothing and returns the same key; a
    ``session_id`` already holding another transcript is a :class:`ForkError`, as is an
    ``at`` off the active chain. An unknown ``key`` is an :class:`UnknownSessionError`.
    """
    key = key.main
    entries = store.load(key)
    if entries is None:
        raise UnknownSessionError(
            _("no session {id} in the session store").format(id=repr(key.session_id))
        )
    new_id = session_id if session_id is not None else str(uuid_module.uuid4())
    target = SessionKey(key.project_key, new_id)
    if target == key:
        raise ForkError(
            _("a fork needs a new session id, not the source's own ({id})").format(id=new_id)
        )
    forked = fork_entries(key, entries, at, new_id)
    existing = store.load(target)
    if existing:
        expected = {e["uuid"] for e in forked}
        if any(e.get("uuid") not in expected for e in existing):
            raise ForkError(
                _(
                    "session {session} already exists and is not this fork of {source}; "
                    "choose another id"
                ).format(session=new_id, source=key.session_id)
            )
    store.append(target, forked)
    return target


def fork_back(
    store: SessionStore, key: SessionKey, at: str | None = None, turns_back: int | None = None
) -> tuple[SessionKey, str | None]:
    """:func:`fork` at entry ``at``, or before the last ``turns_back`` user turns
    (:func:`turns_back_point`), else at the leaf (``flower sessions fork``); the new key
    and the uuid of the entry it was forked at (``None`` for an empty chain)."""
    chain = active_chain(store.load(key.main) or [])
    if turns_back is not None:
        at = turns_back_point(chain, turns_back, key.session_id)
    new = fork(store, key, at)
    return new, at or (chain[-1].get("uuid") if chain else None)


def origin_of(store: SessionStoreBase, key: SessionKey) -> ForkOrigin | None:
    """Where ``key`` was forked from: the session, and the entry the fork ends at (its
    last copied entry). Only a fork is read past its first entry."""
    for entry in store.iter_entries(key):
        if entry.get("type") in ("user", "assistant", "system", "attachment"):
            if forked_from([entry]) is None:
                return None
            break
    else:
        return None
    stamped = [e for e in store.load(key) or [] if isinstance(e.get("forkedFrom"), dict)]
    return forked_from(stamped[-1:])


def fork_points(store: SessionStoreBase, key: SessionKey) -> dict[str, list[str]]:
    """``{entry uuid: [session ids forked there]}`` over the sessions of ``key``'s project."""
    points: dict[str, list[str]] = {}
    try:
        infos = store.list_sessions(key.project_key)
    except NotImplementedError:
        return points
    for info in infos:
        other = SessionKey(key.project_key, info.session_id)
        if other == key:
            continue
        try:
            origin = origin_of(store, other)
        except StoreDamagedError:  # a damaged session is no reason not to show this one
            continue
        if origin is not None and origin.session_id == key.session_id:
            points.setdefault(origin.message_uuid, []).append(info.session_id)
    return points


class ForkMarks(NamedTuple):
    """What ``flower sessions show`` says of forks, in the active language."""

    title: str
    """Added to the transcript's title: ``, forked from <session> at <uuid>`` (or "")."""
    notes: dict[str, list[str]]
    """``{entry uuid: [note]}``: where another session was forked off this one."""


def fork_marks(store: SessionStoreBase, key: SessionKey) -> ForkMarks:
    """What ``key`` was forked from (:func:`origin_of`) and where other sessions of its
    project were forked off it (:func:`fork_points`), as ``flower sessions show`` says
    them."""
    origin = origin_of(store, key)
    title = (
        ""
        if origin is None
        else _(", forked from {session} at {uuid}").format(
            session=origin.session_id, uuid=origin.message_uuid
        )
    )
    notes = {
        uuid: [_("session {session} was forked here").format(session=sid) for sid in sids]
        for uuid, sids in fork_points(store, key).items()
    }
    return ForkMarks(title, notes)


__all__ = [
    "ForkError",
    "ForkMarks",
    "ForkOrigin",
    "UserTurn",
    "fork",
    "fork_back",
    "fork_entries",
    "fork_marks",
    "fork_points",
    "fork_uuid",
    "forked_from",
    "is_prompt",
    "origin_of",
    "turns_back_point",
    "user_turns",
]
