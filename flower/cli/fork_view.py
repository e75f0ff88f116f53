"""What ``flower sessions`` shows of forks: where a session came from, where others left it."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from flower.core.fork import ForkOrigin
    from flower.core.protocols import SessionStoreBase
    from flower.core.records import SessionKey


def origin_of(store: SessionStoreBase, key: SessionKey) -> ForkOrigin | None:
    """Where ``key`` was forked from: the session, and the entry the fork ends at (its
    last copied entry). Only a fork is read past its first entry."""
    from flower.core.fork import forked_from

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
    from flower.core.records import SessionKey

    points: dict[str, list[str]] = {}
    try:
        infos = store.list_sessions(key.project_key)
    except NotImplementedError:
        return points
    for info in infos:
        other = SessionKey(key.project_key, info.session_id)
        if other == key:
            continue
        origin = origin_of(store, other)
        if origin is not None and origin.session_id == key.session_id:
            points.setdefault(origin.message_uuid, []).append(info.session_id)
    return points


def fork_marks(store: SessionStoreBase, key: SessionKey) -> tuple[str, dict[str, list[str]]]:
    """For ``sessions show``: a title suffix naming what ``key`` was forked from, and
    the notes to show after each entry where another session was forked off."""
    origin = origin_of(store, key)
    suffix = "" if origin is None else f", forked from {origin.session_id} at {origin.message_uuid}"
    notes = {
        uuid: [f"session {sid} was forked here" for sid in sids]
        for uuid, sids in fork_points(store, key).items()
    }
    return suffix, notes
