"""Settings or a URL -> store instances, through the plugin registry.

Like ``sqlalchemy.create_engine``: ``open_session_store("sqlite:///runs/sessions.db")``
or, with no URL, the store ``[tool.flower.sessions]`` configures.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from flower.core.config import Settings, default_store_url, load_settings, sqlite_file
from flower.core.errors import StoreNotFoundError, StoreUnavailableError
from flower.core.plugins import Registration, get_registry
from flower.core.protocols import LineageStore, SessionStoreBase
from flower.stores.resolve import by_name, by_scheme, decode_options

if TYPE_CHECKING:
    from flower.stores.encrypt import EncryptedSessionStore


def normalised_url(url: str) -> str:
    """``url`` with an embedded store's database file (sqlite) or folder (jsonfs)
    resolved to an absolute path, so that two spellings of one store compare equal
    (``sqlite:///runs/sessions.db`` and ``sqlite:////<cwd>/runs/sessions.db``); any
    other URL as it is."""
    file = sqlite_file(url)
    if file is not None:
        return f"sqlite:///{file.resolve()}"
    if urlsplit(url).scheme == "jsonfs":
        from flower_plugins.jsonfs.factory import root_from_url

        try:
            return f"jsonfs://{root_from_url(url).resolve()}"  # jsonfs:///abs/path
        except StoreUnavailableError:
            return url  # opening it says what is wrong
    return url


def is_configured_store(url: str, settings: Settings) -> bool:
    """Whether ``url`` names the session store ``settings`` configure."""
    return normalised_url(url) == normalised_url(settings.sessions_url())


def takes_read_only(factory: Callable[..., Any]) -> bool:
    """Whether a backend's factory can open its store read-only (a ``read_only``
    keyword): a factory without one is opened as it is, for reading too."""
    try:
        parameters = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == "read_only" or p.kind is p.VAR_KEYWORD for p in parameters)


def _create(
    reg: Registration, url: str | None, options: object, settings: Settings, ro: bool
) -> Any:
    if ro and takes_read_only(reg.factory):
        return reg.factory(url=url, options=options, settings=settings, read_only=True)
    return reg.factory(url=url, options=options, settings=settings)


def open_session_store(
    url: str | None = None, *, settings: Settings | None = None, read_only: bool = False
) -> SessionStoreBase:
    """Open the session store ``url`` names, or the configured one when ``url`` is None.

    ``read_only`` (for commands that only read): the built-in backends then create
    nothing, migrate nothing and open SQLite read-only, and a store that does not exist
    is :class:`~flower.core.errors.StoreNotFoundError`."""
    settings = settings or load_settings().settings
    registry = get_registry()
    conf = settings.sessions
    configured = url is None or is_configured_store(url, settings)
    if url is None and conf.url is None:
        reg = by_name(registry, "session_stores", conf.backend, "sessions")
        url = default_store_url(settings)
    else:
        # A URL, given or configured, names its backend by its scheme.
        url = url or conf.url
        assert url is not None
        reg = by_scheme(registry, "session_stores", url, "sessions", configured=url == conf.url)
    options = decode_options(reg, conf.options, "tool.flower.sessions.options")
    store = _create(reg, url, options, settings, read_only)
    if conf.encrypt and configured:
        # Only the configured store is encrypted; another URL (sessions copy --from) opens raw.
        from flower.stores.encrypt import encrypt_store

        try:
            return encrypt_store(store, settings)
        except BaseException:
            store.close()
            raise
    return store


EMPTY_STORE_URL = "sqlite:///:memory:"
"""What a configured store that does not exist yet reads as: an empty store in memory."""


def open_existing(settings: Settings, url: str | None = None) -> SessionStoreBase | None:
    """The store ``url`` names (or the configured one) opened read-only, creating and
    migrating nothing; None when the configured store does not exist yet. A ``url``
    given for one command (``sessions copy --from``) that does not exist is
    :class:`~flower.core.errors.StoreNotFoundError`."""
    try:
        return open_session_store(url or settings.sessions.url, settings=settings, read_only=True)
    except StoreNotFoundError:
        if url is not None:
            raise
        return None


def open_readable(settings: Settings, url: str | None = None) -> SessionStoreBase:
    """What a command that only reads opens: :func:`open_existing`, with a configured
    store that does not exist yet read as an empty one (in memory), never created."""
    store = open_existing(settings, url)
    return store if store is not None else open_session_store(EMPTY_STORE_URL, settings=settings)


def open_store(
    settings: Settings, url: str | None = None, *, read_only: bool = False, create: bool = True
) -> SessionStoreBase:
    """The session store ``url`` names, or the one ``settings`` configure, as a command
    opens it: ``read_only`` (one that only reads: :func:`open_readable`) and
    ``create=False`` (one that only deletes: opened to write when it exists, else an
    empty stand-in) create no store that is not there yet. Otherwise an explicit or
    configured URL picks its backend by scheme; without any URL the configured backend
    opens its embedded default (created when missing)."""
    if read_only or not create:
        existing = open_existing(settings, url)
        if existing is None:
            return open_session_store(EMPTY_STORE_URL, settings=settings)
        if read_only:
            return existing
        existing.close()
    return open_session_store(url or settings.sessions.url, settings=settings)


def open_lineage_store(
    url: str | None = None, *, settings: Settings | None = None, read_only: bool = False
) -> LineageStore:
    """Open the lineage store ``url`` names, or the configured one (``read_only``: as
    :func:`open_session_store` takes it)."""
    settings = settings or load_settings().settings
    registry = get_registry()
    conf = settings.lineage
    if url is None and conf.url is None:
        reg = by_name(registry, "lineage_stores", conf.backend, "lineage")
        url = None
    else:
        url = url or conf.url
        assert url is not None
        reg = by_scheme(registry, "lineage_stores", url, "lineage", configured=url == conf.url)
    options = decode_options(reg, conf.options, "tool.flower.lineage.options")
    return _create(reg, url, options, settings, read_only)


def open_encrypted_url(url: str, key: str) -> EncryptedSessionStore:
    """Open the store at ``url`` encrypted under ``key`` (text form); picklable for tests."""
    from flower.stores.encrypt import EncryptedSessionStore
    from flower.stores.keyring import parse_keys

    keyring = parse_keys(key, "the key argument")
    return EncryptedSessionStore(open_session_store(url, settings=Settings()), keyring)
