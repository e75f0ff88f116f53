"""A session's transcripts: its main one, then its subagents' (by subpath).

Every command that walks a whole session (copy, archive, the secrets scan,
encryption's key check, rekey, stats) walks it in this one order.
"""

from __future__ import annotations

from flower.core.protocols import SessionStoreBase
from flower.core.records import SessionKey


def transcripts(store: SessionStoreBase, key: SessionKey) -> list[SessionKey]:
    """A session's transcripts: ``key``, then its subagents' (by subpath); a store
    that cannot list subkeys has only the main one."""
    try:
        subpaths = store.list_subkeys(key)
    except NotImplementedError:
        subpaths = []
    return [key, *(key.child(sub) for sub in sorted(subpaths))]


__all__ = ["transcripts"]
