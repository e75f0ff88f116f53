"""Every error flower raises on purpose derives from :class:`FlowerError`.

The CLI turns them into one clear line and an exit code instead of a traceback.
"""

from __future__ import annotations


class FlowerError(Exception):
    """Base class; ``exit_code`` is what the CLI exits with."""

    exit_code = 1


class ConfigError(FlowerError):
    """Bad configuration: names the file, the key path and what was expected.

    ``key`` (dotted, as in ``flower config``: ``pruning.policies``) is given when the
    check that failed ran after loading, where the file is no longer known; the CLI
    then names where that key was set."""

    exit_code = 2

    def __init__(self, message: str, *, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


class InvalidKeyError(FlowerError, ValueError):
    """A session key, project key or subpath that is empty or would escape a store."""


class InvalidEntryError(FlowerError, ValueError):
    """An entry that is not a JSON-safe dict with a ``type``; rejected before any write."""


class UnknownSessionError(FlowerError, LookupError):
    """A session id that the store does not hold."""


class StoreUnavailableError(FlowerError):
    """The store cannot be opened or reached (bad URL, server down, corrupted file)."""


DAMAGE_MARKER_SUFFIX = ".damaged"
"""``sessions.db.damaged`` beside a SQLite database flower found damaged: every later
process refuses to write into that file (``flower sessions repair`` removes it)."""


class StoreDamagedError(StoreUnavailableError):
    """The store's file is damaged: what it holds is not what was written (SQLite found
    a malformed page, or a load read less than the session holds). flower writes
    nothing more into it; ``flower sessions repair`` saves what is readable."""


def sqlite_locked(exc: BaseException) -> bool:
    """Whether ``exc`` (or the driver error a SQLAlchemy error wraps) is SQLite saying
    another connection holds the lock it needs: ``SQLITE_BUSY`` or ``SQLITE_LOCKED``,
    known by its error code (an extended code's low byte), never by SQLite's words."""
    import sqlite3  # on use: this module is imported at every start

    orig = getattr(exc, "orig", None) or exc
    code = getattr(orig, "sqlite_errorcode", None) if isinstance(orig, sqlite3.Error) else None
    return code is not None and (code & 0xFF) in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


class StoreNotFoundError(StoreUnavailableError):
    """A store opened only to read that does not exist (yet): opening it read-only
    creates nothing, so there is nothing to read."""


class SchemaOutOfDateError(FlowerError):
    """The database schema is behind (or ahead of) this version of flower."""


class PluginError(FlowerError):
    """A plugin failed to load, or two plugins claim the same name."""


class NoSuchPluginError(ConfigError, PluginError):
    """A backend, policy or prober name (or a URL scheme) that no loaded plugin provides:
    a mistake in the configuration or the command line, so exit code 2."""


class NothingToDoError(FlowerError):
    """A run cannot start: nothing to carry on, nothing said, and no terminal to ask on."""

    exit_code = 2


class LocalFaultError(StoreUnavailableError, OSError):
    """flower could not write one of its own files because of the machine (a full disk,
    a quota, a read-only file system). Never retried as an API error: what was stored
    before stays as it was, and the next ``flower`` carries on once it is fixed. Still
    an ``OSError``, so what swallows a failed write (lineage) goes on doing so. Made by
    :func:`flower.core.fileperms.local_fault`."""

    def __init__(self, message: str, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path


class UsageError(FlowerError):
    """Input that cannot be taken as given: options that do not go together, a session
    id prefix several ids start, a file of several sessions with no id to pick one. A
    usage error, so exit code 2."""

    exit_code = 2
