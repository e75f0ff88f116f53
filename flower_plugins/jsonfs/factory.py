"""The ``jsonfs`` and ``json`` stores' options, URL parsing and factories.

Imported when a store is opened, not when the plugin registers (see ``__init__``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from urllib.parse import unquote, urlsplit

import msgspec

from flower.core.config import Settings
from flower.core.errors import StoreNotFoundError, StoreUnavailableError
from flower.core.i18n import _
from flower_plugins.jsonfs.lineage import FILENAME, JsonLineageStore
from flower_plugins.jsonfs.sessions import JsonfsSessionStore


class JsonfsOptions(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """``[tool.flower.sessions.options]`` / ``[tool.flower.lineage.options]`` for these stores."""

    fsync: bool = True
    """fsync every append (and every lineage save) before returning. Turning it off
    keeps data safe from a killed process but not from power loss."""


def _path_from_url(url: str, schemes: tuple[str, ...]) -> Path:
    parts = urlsplit(url)
    if parts.scheme not in schemes:
        raise StoreUnavailableError(
            _("{url} is not a {schemes}: URL").format(url=repr(url), schemes=" or ".join(schemes))
        )
    if parts.query or parts.fragment:
        raise StoreUnavailableError(
            _("{url}: query strings and fragments are not supported; use options instead").format(
                url=repr(url)
            )
        )
    raw = unquote(parts.netloc + parts.path)
    if not raw or "\x00" in raw:
        raise StoreUnavailableError(_("{url} names no usable path").format(url=repr(url)))
    if raw.startswith("//"):
        raw = "/" + raw.lstrip("/")
    path = Path(raw).expanduser()
    return path if path.is_absolute() else Path.cwd() / path


def root_from_url(url: str) -> Path:
    """The transcript folder a ``jsonfs:`` URL names."""
    return _path_from_url(url, ("jsonfs",))


def lineage_path_from_url(url: str) -> Path:
    """The lineage file a ``file:`` URL (or a plain path) names."""
    if "://" not in url and not url.startswith("file:"):
        url = f"file:{url}"
    path = _path_from_url(url, ("file",))
    if url.endswith("/") or path.is_dir():
        path = path / FILENAME
    return path


def _fsync_option(options: JsonfsOptions | Mapping[str, object] | None) -> bool:
    if isinstance(options, JsonfsOptions):
        return options.fsync
    return msgspec.convert(options or {}, JsonfsOptions).fsync


def open_jsonfs_store(
    *,
    url: str,
    options: JsonfsOptions | Mapping[str, object] | None,
    settings: Settings,
    read_only: bool = False,
) -> JsonfsSessionStore:
    root = root_from_url(url)
    if read_only and not root.is_dir():  # a reader creates no folder, not even later
        raise StoreNotFoundError(_("no jsonfs store at {path} (no such folder)").format(path=root))
    return JsonfsSessionStore(root, fsync=_fsync_option(options))


def open_json_lineage(
    *, url: str | None, options: JsonfsOptions | Mapping[str, object] | None, settings: Settings
) -> JsonLineageStore:
    path = lineage_path_from_url(url) if url else Path.cwd() / settings.run_dir / FILENAME
    return JsonLineageStore(path, fsync=_fsync_option(options))


__all__ = [
    "JsonfsOptions",
    "lineage_path_from_url",
    "open_json_lineage",
    "open_jsonfs_store",
    "root_from_url",
]
