"""State shared by every command: the global options and the settings they produce.

Global options (``-r/--run-dir``, ``--sessions-url``) become overrides of
:func:`flower.core.config.load_settings` here and only here; any command gets the
effective settings with :func:`get_settings` and the session store with
:func:`open_store`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from flower.core.config import LoadedSettings, Settings
    from flower.core.errors import ConfigError
    from flower.core.protocols import SessionStoreBase

RunDirOption = Annotated[
    str | None,
    typer.Option(
        "-r",
        "--run-dir",
        metavar="DIR",
        help="Run directory, relative to the working directory (default: runs).",
    ),
]
"""``-r/--run-dir``: on the root group and on the commands that run things."""


@dataclass
class CliState:
    """What the main group's options said; settings are loaded once, on first use."""

    run_dir: str | None = None
    sessions_url: str | None = None
    _loaded: LoadedSettings | None = field(default=None, repr=False)

    def overrides(self) -> dict[str, Any]:
        return {"run_dir": self.run_dir, "sessions.url": self.sessions_url}


def get_state(ctx: typer.Context) -> CliState:
    root = ctx.find_root()
    if not isinstance(root.obj, CliState):
        root.obj = CliState()
    return root.obj


def get_loaded_settings(ctx: typer.Context) -> LoadedSettings:
    """Defaults, pyproject, ``FLOWER_*`` and the global options, with their sources."""
    from flower.core.config import load_settings

    global _loaded_last
    state = get_state(ctx)
    if state._loaded is None:
        state._loaded = _loaded_last = load_settings(overrides=state.overrides())
    return state._loaded


_loaded_last: LoadedSettings | None = None  # what this process's command loaded


def config_error_text(exc: ConfigError) -> str:
    """``exc``'s message, naming where its key was set when a check that runs after
    loading (a pruning policy name, say) raised it without the file."""
    text = str(exc)
    loaded = _loaded_last
    if exc.key is None or loaded is None:
        return text
    source = loaded.sources.get(exc.key)
    if source is None:
        return text
    if loaded.pyproject is not None and source.startswith(f"{loaded.pyproject} "):
        return f"{loaded.pyproject}: {text}"
    return f"{text} (set by {source})"


def get_settings(ctx: typer.Context) -> Settings:
    return get_loaded_settings(ctx).settings


def store_name(settings: Settings, url: str | None = None) -> str:
    """How messages name a store: ``url``, else the configured URL or embedded default;
    a backend with neither (a plugin's) by its name."""
    from flower.core.config import default_store_url

    url = url or default_store_url(settings)
    return url or f"the {settings.sessions.backend!r} session store"


def open_store(
    ctx: typer.Context, url: str | None = None, *, read_only: bool = False
) -> SessionStoreBase:
    """The session store ``url`` names, or the configured one.

    An explicit or configured URL picks its backend by scheme; without any URL the
    configured backend opens its embedded default. ``read_only``: see
    :func:`readable_url`.
    """
    from flower.stores.open import open_session_store

    settings = get_settings(ctx)
    target = readable_url(settings, url) if read_only else url or settings.sessions.url
    return open_session_store(target, settings=settings)


EMPTY_STORE_URL = "sqlite:///:memory:"


def readable_url(settings: Settings, url: str | None = None) -> str | None:
    """What a command that only reads opens for ``url`` (or the configured store): the
    same, except that a SQLite file that does not exist yet, which opening would
    create, is stood in for by an empty in-memory store."""
    from flower.core.config import sqlite_file

    target = url or settings.sessions.url
    if target is None and settings.sessions.backend != "sqlite":
        return None
    file = sqlite_file(target or settings.sessions_url())
    return EMPTY_STORE_URL if file is not None and not file.exists() else target
