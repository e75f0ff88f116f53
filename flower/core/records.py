"""The records every store speaks: keys, listings and lineage, as msgspec Structs."""

from __future__ import annotations

from typing import Any

import msgspec

from flower.core.errors import InvalidKeyError
from flower.core.i18n import N_, _

Entry = dict[str, Any]
"""One transcript entry: an opaque JSON-safe dict with at least ``type``."""

_FORBIDDEN_IN_NAME = ("/", "\\", "\x00")
_NAMES = {"project key": N_("project key"), "session id": N_("session id")}
"""The words for what a name is, shown in the active language; a field name
(``project_key``) stays as it is."""


def _named(what: str) -> str:
    return _(_NAMES[what]) if what in _NAMES else what


def check_name(what: str, value: str) -> str:
    """Validate a project key or session id: one path component, nothing that escapes."""
    if not isinstance(value, str) or not value:
        raise InvalidKeyError(
            _("{what} must be a non-empty string, got {value}").format(
                what=_named(what), value=repr(value)
            )
        )
    if value in (".", "..") or any(ch in value for ch in _FORBIDDEN_IN_NAME):
        raise InvalidKeyError(
            _("{what} {value} is not allowed: no '/', '\\', NUL, '.' or '..'").format(
                what=_named(what), value=repr(value)
            )
        )
    _check_utf8(what, value)
    return value


def _check_utf8(what: str, value: str) -> None:
    """A lone surrogate has no UTF-8: no file name or database text column can hold it."""
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidKeyError(
                _(
                    "{what} {value} is not allowed: it holds a lone surrogate, which no store "
                    "can write"
                ).format(what=_named(what), value=repr(value))
            ) from None


def check_subpath(value: str) -> str:
    """Validate a subpath: relative, '/'-separated, no empty, '.' or '..' component."""
    if not isinstance(value, str) or not value:
        raise InvalidKeyError(
            _("subpath must be a non-empty string or None, got {value}").format(value=repr(value))
        )
    if "\x00" in value or "\\" in value or value.startswith("/"):
        raise InvalidKeyError(
            _("subpath {value} is not allowed: no NUL, '\\' or leading '/'").format(
                value=repr(value)
            )
        )
    for part in value.split("/"):
        if part in ("", ".", ".."):
            raise InvalidKeyError(
                _("subpath {value} has an empty, '.' or '..' component").format(value=repr(value))
            )
    _check_utf8("subpath", value)
    return value


class SessionKey(msgspec.Struct, frozen=True):
    """Where a transcript lives, as the Claude Agent SDK's ``SessionKey`` names it."""

    project_key: str
    session_id: str
    subpath: str | None = None

    def __post_init__(self) -> None:
        check_name("project_key", self.project_key)
        check_name("session_id", self.session_id)
        if self.subpath is not None:
            check_subpath(self.subpath)

    @property
    def main(self) -> SessionKey:
        """The main transcript this key belongs to (itself when it has no subpath)."""
        if self.subpath is None:
            return self
        return SessionKey(self.project_key, self.session_id)

    def child(self, subpath: str) -> SessionKey:
        return SessionKey(self.project_key, self.session_id, subpath)


class SessionInfo(msgspec.Struct, frozen=True):
    """One main transcript in a project listing; ``mtime_ms`` is epoch milliseconds."""

    session_id: str
    mtime_ms: int


class Leftover(msgspec.Struct, frozen=True):
    """A file a killed writer left in a store that holds no transcript (a jsonfs first
    batch's temporary file): never listed nor loaded; ``flower sessions gc`` removes it.
    ``mtime_ms`` is when it was last written, epoch milliseconds."""

    path: str
    size: int
    mtime_ms: int


def newest_first(infos: list[SessionInfo]) -> list[SessionInfo]:
    """A listing in the contract's order: newest first, ties by session id (code point,
    whatever a database's collation would say)."""
    return sorted(infos, key=lambda info: (-info.mtime_ms, info.session_id))


class LineageRecord(msgspec.Struct):
    """Which session each step used, for one workspace (the seed's ``lineage.json``).

    ``extra`` keeps fields written by a newer flower so a save does not drop them.
    """

    workspace: str
    woke: int = 0
    steps: dict[str, str] = msgspec.field(default_factory=dict)
    extra: dict[str, Any] = msgspec.field(default_factory=dict)


class LineageMismatch(msgspec.Struct, frozen=True):
    """Why a lineage store holds something for a directory that does not count as its
    record: ``"moved"`` (a record written for ``moved_from``, the directory was moved or
    copied) or ``"unreadable"``. ``raw`` is what is there, to set aside before a new
    record takes its place."""

    reason: str
    raw: bytes
    moved_from: str | None = None
