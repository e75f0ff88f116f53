"""What ``flower sessions show`` says of forks: where a session came from, where others left it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from flower.core.i18n import _

if TYPE_CHECKING:
    from flower.core.protocols import SessionStoreBase
    from flower.core.records import SessionKey


def fork_marks(store: SessionStoreBase, key: SessionKey) -> tuple[str, dict[str, list[str]]]:
    """For ``sessions show``: a title suffix naming what ``key`` was forked from, and
    the notes to show after each entry where another session was forked off."""
    from flower.core.fork import fork_points, origin_of

    origin = origin_of(store, key)
    suffix = (
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
    return suffix, notes
