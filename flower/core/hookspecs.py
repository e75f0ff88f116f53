"""pluggy hook specifications: every hook receives a ``register`` callback.

A plugin module implements any of these with ``@flower.plugin.hookimpl``::

    @hookimpl
    def register_pruning_policies(register: RegisterFactory) -> None:
        register("drop-thinking", DropThinking)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import pluggy

if TYPE_CHECKING:
    import typer

    from flower.core.config import Settings

hookspec = pluggy.HookspecMarker("flower")
hookimpl = pluggy.HookimplMarker("flower")


class RegisterBackend(Protocol):
    """The ``register`` of ``register_session_stores`` and ``register_lineage_stores``.

    ``options`` is a msgspec Struct type, or ``"module:Name"`` to import it only when
    a store is opened."""

    def __call__(
        self,
        name: str,
        factory: Callable[..., Any],
        *,
        schemes: tuple[str, ...] | list[str] = (),
        options: type | str | None = None,
    ) -> None: ...


class RegisterFactory(Protocol):
    """The ``register`` of ``register_probers`` and ``register_pruning_policies``:
    ``factory(settings)`` makes the prober or the policy."""

    def __call__(self, name: str, factory: Callable[[Any], Any]) -> None: ...


@hookspec
def register_session_stores(register: RegisterBackend) -> None:
    """``register(name, factory, *, schemes=(), options=None)``.

    ``factory(url, options, settings) -> SessionStore``. ``schemes`` are the URL
    schemes (before ``+driver``) the backend answers, e.g. ``("sqlite",)``.
    ``options`` is a msgspec Struct type that decodes the backend's own options.
    """


@hookspec
def register_lineage_stores(register: RegisterBackend) -> None:
    """``register(name, factory, *, schemes=(), options=None)``.

    ``factory(url, options, settings) -> LineageStore``.
    """


@hookspec
def register_probers(register: RegisterFactory) -> None:
    """``register(name, factory)`` with ``factory(settings) -> Prober``."""


@hookspec
def register_pruning_policies(register: RegisterFactory) -> None:
    """``register(name, factory)`` with ``factory(settings) -> PruningPolicy``."""


@hookspec
def register_commands(app: typer.Typer) -> None:
    """Add commands to the ``flower`` typer app (a ``typer.Typer``: ``@app.command()``).

    A command reads the settings ``flower`` runs with (its global options included:
    ``flower --sessions-url URL mycommand``) with
    :func:`flower.plugin.command_settings`, never from the command line's own modules."""


@runtime_checkable
class CommandState(Protocol):
    """What the ``flower`` command line keeps on its root click context
    (``ctx.find_root().obj``) for every command, a plugin's included."""

    def settings(self) -> Settings:
        """The effective settings: defaults, pyproject, ``FLOWER_*`` and the global
        options, checked once against the loaded plugins and the key."""
        ...
