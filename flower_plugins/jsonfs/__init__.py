"""Built-in plugin: the ``jsonfs`` session store and the ``json`` lineage store.

URLs:

- ``jsonfs:///abs/path``: transcripts under ``/abs/path`` (e.g. a copy of
  ``~/.claude/projects``); ``jsonfs://relative/path`` is relative to the working
  directory when the store is opened, and ``jsonfs://~/...`` expands the home folder.
- ``file:///abs/lineage.json`` (or a folder, which gets ``lineage.json`` inside):
  the lineage file; with no URL, ``<run_dir>/lineage.json`` under the working directory.

This module is the entry point loaded at CLI start-up, so it only registers: the
stores, their options (msgspec) and the settings are imported when a store is opened.
The public names below still import from here, on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from flower.core.hookspecs import hookimpl

if TYPE_CHECKING:
    from collections.abc import Mapping

    from flower.core.config import Settings
    from flower.plugin import RegisterBackend

    # three of the names __getattr__ gives, re-exported (``as``) for type checkers
    from flower_plugins.jsonfs.factory import JsonfsOptions as JsonfsOptions
    from flower_plugins.jsonfs.lineage import JsonLineageStore as JsonLineageStore
    from flower_plugins.jsonfs.sessions import JsonfsSessionStore as JsonfsSessionStore

_PUBLIC = {
    "JsonLineageStore": "flower_plugins.jsonfs.lineage",
    "JsonfsOptions": "flower_plugins.jsonfs.factory",
    "JsonfsSessionStore": "flower_plugins.jsonfs.sessions",
    "LoadProblem": "flower_plugins.jsonfs.sessions",
    "lineage_path_from_url": "flower_plugins.jsonfs.factory",
    "open_json_lineage": "flower_plugins.jsonfs.factory",
    "open_jsonfs_store": "flower_plugins.jsonfs.factory",
    "root_from_url": "flower_plugins.jsonfs.factory",
}
_OPTIONS = "flower_plugins.jsonfs.factory:JsonfsOptions"

__all__ = sorted(_PUBLIC)


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def _jsonfs_store(
    *,
    url: str,
    options: JsonfsOptions | Mapping[str, object] | None,
    settings: Settings,
    read_only: bool = False,
) -> JsonfsSessionStore:
    from flower_plugins.jsonfs.factory import open_jsonfs_store

    return open_jsonfs_store(url=url, options=options, settings=settings, read_only=read_only)


def _json_lineage(
    *, url: str | None, options: JsonfsOptions | Mapping[str, object] | None, settings: Settings
) -> JsonLineageStore:
    from flower_plugins.jsonfs.factory import open_json_lineage

    return open_json_lineage(url=url, options=options, settings=settings)


@hookimpl
def register_session_stores(register: RegisterBackend) -> None:
    register("jsonfs", _jsonfs_store, schemes=("jsonfs",), options=_OPTIONS)


@hookimpl
def register_lineage_stores(register: RegisterBackend) -> None:
    register("json", _json_lineage, schemes=("file",), options=_OPTIONS)
