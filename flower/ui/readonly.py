"""A session store the viewer can only read from: every write is refused; and the empty
store it reads while the configured one does not exist yet."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from flower.core.errors import FlowerError
from flower.core.protocols import SessionStoreBase
from flower.core.records import Entry, SessionInfo, SessionKey


class ReadOnlyError(FlowerError):
    """Something tried to write through the viewer's store."""


class ReadOnlyStore(SessionStoreBase):
    """``inner``'s reads; ``append``, ``delete`` and ``set_modified`` raise."""

    def __init__(self, inner: SessionStoreBase) -> None:
        self.inner = inner

    def _refuse(self, what: str) -> Any:
        raise ReadOnlyError(f"the viewer is read-only: it does not {what}")

    def append(self, key: SessionKey, entries: Sequence[Entry]) -> None:
        if entries:
            self._refuse("append entries")

    def delete(self, key: SessionKey) -> None:
        self._refuse("delete sessions")

    def set_modified(self, key: SessionKey, mtime_ms: int) -> None:
        self._refuse("change a session's time")

    def load(self, key: SessionKey) -> list[Entry] | None:
        return self.inner.load(key)

    def iter_entries(self, key: SessionKey) -> Iterator[Entry]:
        return self.inner.iter_entries(key)

    def list_sessions(self, project_key: str) -> list[SessionInfo]:
        return self.inner.list_sessions(project_key)

    def list_projects(self) -> list[str]:
        return self.inner.list_projects()

    def list_subkeys(self, key: SessionKey) -> list[str]:
        return self.inner.list_subkeys(key)

    def exists(self, key: SessionKey) -> bool:
        return self.inner.exists(key)

    def find_session(self, session_id: str) -> SessionKey | None:
        return self.inner.find_session(session_id)

    def last_usage(self, key: SessionKey) -> dict[str, Any] | None:
        return self.inner.last_usage(key)

    def close(self) -> None:
        self.inner.close()


class NoStoreYet(SessionStoreBase):
    """The configured store before anything created it: no projects, no sessions."""

    def load(self, key: SessionKey) -> list[Entry] | None:
        return None

    def list_sessions(self, project_key: str) -> list[SessionInfo]:
        return []

    def list_projects(self) -> list[str]:
        return []

    def list_subkeys(self, key: SessionKey) -> list[str]:
        return []

    def exists(self, key: SessionKey) -> bool:
        return False

    def find_session(self, session_id: str) -> SessionKey | None:
        return None

    def last_usage(self, key: SessionKey) -> dict[str, Any] | None:
        return None
