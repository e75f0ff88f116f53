"""State shared by every command: the global options and the settings they produce.

Global options (``-r/--run-dir``, ``--sessions-url``) become overrides of
:func:`flower.core.config.load_settings` here and only here; any command gets the
effective settings with :func:`get_settings` and the session store with
:func:`open_store`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any

import typer

from flower.core.i18n import N_

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
        help=N_("Run directory, relative to the working directory (default: runs)."),
    ),
]
"""``-r/--run-dir``: on the root group and on the commands that run things."""


@dataclass
class CliState:
    """What the main group's options said; settings are loaded once, on first use. The
    :class:`flower.core.hookspecs.CommandState` every command (a plugin's too) reads."""

    run_dir: str | None = None
    sessions_url: str | None = None
    _loaded: LoadedSettings | None = field(default=None, repr=False)
    _checked: bool = field(default=False, repr=False)

    def overrides(self) -> dict[str, Any]:
        return {"run_dir": self.run_dir, "sessions.url": self.sessions_url}

    def loaded(self) -> LoadedSettings:
        """Defaults, pyproject, ``FLOWER_*`` and the global options, with their sources."""
        from flower.core.config import load_settings

        global _loaded_last
        if self._loaded is None:
            import os

            from flower.core.i18n import environment_language, set_language

            # a mistake in the settings is said in the environment's language (the one
            # --help read from them may be what is wrong)
            set_language(environment_language(os.environ))
            self._loaded = _loaded_last = load_settings(overrides=self.overrides())
            set_language(self._loaded.language)  # one language for all this command says
        return self._loaded

    def settings(self) -> Settings:
        """The effective settings, checked once against the loaded plugins and the key:
        a backend, probe strategy or pruning policy no plugin provides, or a store set to
        encrypt with no usable key, stops the command (exit 2) before it opens, writes or
        requests anything."""
        loaded = self.loaded()
        if not self._checked:
            from flower.stores.resolve import check_settings

            check_settings(loaded.settings)
            self._checked = True
        return loaded.settings


def get_state(ctx: typer.Context) -> CliState:
    root = ctx.find_root()
    if not isinstance(root.obj, CliState):
        root.obj = CliState()
    return root.obj


def get_loaded_settings(ctx: typer.Context) -> LoadedSettings:
    """Defaults, pyproject, ``FLOWER_*`` and the global options, with their sources."""
    return get_state(ctx).loaded()


_loaded_last: LoadedSettings | None = None  # what this process's command loaded


def config_error_text(exc: ConfigError) -> str:
    """``exc``'s message, naming where its key was set
    (:meth:`~flower.core.config.LoadedSettings.explain`, by what this command loaded)."""
    return str(exc) if _loaded_last is None else _loaded_last.explain(exc)


def get_settings(ctx: typer.Context) -> Settings:
    """The effective settings (:meth:`CliState.settings`)."""
    return get_state(ctx).settings()


def open_store(
    ctx: typer.Context, url: str | None = None, *, read_only: bool = False, create: bool = True
) -> SessionStoreBase:
    """The session store ``url`` names, or the configured one, for this command's
    settings (:func:`flower.stores.open.open_store`)."""
    from flower.stores.open import open_store as open_for

    return open_for(get_settings(ctx), url, read_only=read_only, create=create)


@contextmanager
def opened_store(
    ctx: typer.Context, url: str | None = None, *, read_only: bool = False, create: bool = True
) -> Iterator[tuple[SessionStoreBase, str]]:
    """:func:`open_store` and the store's redacted name, closed afterwards; ``read_only``
    (a command that only reads) and ``create=False`` (one that only deletes) create no
    store that is not there yet."""
    from flower.core.config import store_name
    from flower.core.redact import redact_text

    where = redact_text(url or store_name(get_settings(ctx)))
    store = open_store(ctx, url, read_only=read_only, create=create)
    try:
        yield store, where
    finally:
        store.close()
