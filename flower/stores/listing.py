"""Every session of a store, newest first: what ``flower sessions list`` and the
sessions page of ``flower ui`` list.

Only the store's listing is read (``list_projects`` and ``list_sessions``: the index of
a SQL store, the folder of a jsonfs one), never a transcript; :func:`listed_origin`
reads one session's first entry, for a list that shows forks.

::

    from flower import open_session_store
    from flower.stores.listing import listing

    with open_session_store() as store:
        for row in listing(store):
            print(row.last_active, row.project_key, row.session_id)
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from flower.core.display import utc_time
from flower.core.errors import StoreDamagedError
from flower.core.fork import ForkOrigin, origin_of
from flower.core.protocols import SessionStoreBase
from flower.core.records import SessionKey


class SessionRow(msgspec.Struct, frozen=True):
    """One main transcript as the listing has it."""

    project_key: str
    session_id: str
    mtime_ms: int

    @property
    def key(self) -> SessionKey:
        return SessionKey(self.project_key, self.session_id)

    @property
    def last_active(self) -> str:
        """When it was last written, in UTC (:func:`~flower.core.display.utc_time`)."""
        return utc_time(self.mtime_ms)


def listing(
    store: SessionStoreBase, project: str | None = None, *, workspace: Path | None = None
) -> list[SessionRow]:
    """Every main transcript of ``project`` (default: of every project), newest first.

    A store that cannot list its projects lists the project of ``workspace`` (when
    given); one that cannot list its sessions raises ``NotImplementedError``.
    """
    from flower.core.keys import project_key

    if project is not None:
        projects = [project]
    else:
        try:
            projects = store.list_projects()
        except NotImplementedError:
            if workspace is None:
                raise
            projects = [project_key(workspace)]
    rows = [
        SessionRow(proj, info.session_id, info.mtime_ms)
        for proj in projects
        for info in store.list_sessions(proj)
    ]
    rows.sort(key=lambda r: (-r.mtime_ms, r.session_id, r.project_key))
    return rows


def listed_origin(store: SessionStoreBase, key: SessionKey) -> ForkOrigin | None:
    """What ``key`` was forked from (:func:`flower.core.fork.origin_of`); nothing for a
    session the store cannot read: a damaged one is said when it is shown, not by
    failing a whole listing."""
    try:
        return origin_of(store, key)
    except StoreDamagedError:
        return None


__all__ = ["SessionRow", "listed_origin", "listing"]
