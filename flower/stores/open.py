"""Settings or a URL -> store instances, through the plugin registry.

Like ``sqlalchemy.create_engine``: ``open_session_store("sqlite:///runs/sessions.db")``
or, with no URL, the store ``[tool.flower.sessions]`` configures.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from flower.core.config import Settings, decode_section, load_settings
from flower.core.plugins import Registration, get_registry
from flower.core.protocols import LineageStore, SessionStoreBase


def _scheme(url: str) -> str:
    scheme = urlsplit(url).scheme
    return scheme or "file"


def _options(reg: Registration, raw: dict[str, Any], table: str) -> Any:
    if reg.options is None:
        return dict(raw)
    return decode_section(raw, reg.options, "configuration", table=table)


def open_session_store(
    url: str | None = None, *, settings: Settings | None = None
) -> SessionStoreBase:
    """Open the session store ``url`` names, or the configured one when ``url`` is None."""
    settings = settings or load_settings().settings
    registry = get_registry()
    conf = settings.sessions
    configured = url is None or url in (conf.url, settings.sessions_url())
    if url is None and conf.url is None:
        reg = registry.get("session_stores", conf.backend)
        url = settings.sessions_url()
    else:
        # A URL, given or configured, names its backend by its scheme.
        url = url or conf.url
        assert url is not None
        reg = registry.by_scheme("session_stores", _scheme(url))
    options = _options(reg, conf.options, "tool.flower.sessions.options")
    store = reg.factory(url=url, options=options, settings=settings)
    if conf.encrypt and configured:
        # Only the configured store is encrypted; another URL (sessions copy --from) opens raw.
        from flower.stores.encrypt import encrypt_store

        try:
            return encrypt_store(store, settings)
        except BaseException:
            store.close()
            raise
    return store


def open_lineage_store(url: str | None = None, *, settings: Settings | None = None) -> LineageStore:
    """Open the lineage store ``url`` names, or the configured one."""
    settings = settings or load_settings().settings
    registry = get_registry()
    conf = settings.lineage
    if url is None and conf.url is None:
        reg = registry.get("lineage_stores", conf.backend)
        url = None
    else:
        url = url or conf.url
        assert url is not None
        reg = registry.by_scheme("lineage_stores", _scheme(url))
    options = _options(reg, conf.options, "tool.flower.lineage.options")
    return reg.factory(url=url, options=options, settings=settings)
