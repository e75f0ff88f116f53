"""pluggy hook specifications: every hook receives a ``register`` callback.

A plugin module implements any of these with ``@flower.hookimpl``::

    @hookimpl
    def register_pruning_policies(register):
        register("drop-thinking", DropThinking)
"""

from __future__ import annotations

from typing import Any

import pluggy

hookspec = pluggy.HookspecMarker("flower")
hookimpl = pluggy.HookimplMarker("flower")


@hookspec
def register_session_stores(register: Any) -> None:
    """``register(name, factory, *, schemes=(), options=None)``.

    ``factory(url, options, settings) -> SessionStore``. ``schemes`` are the URL
    schemes (before ``+driver``) the backend answers, e.g. ``("sqlite",)``.
    ``options`` is a msgspec Struct type that decodes the backend's own options.
    """


@hookspec
def register_lineage_stores(register: Any) -> None:
    """``register(name, factory, *, schemes=(), options=None)``.

    ``factory(url, options, settings) -> LineageStore``.
    """


@hookspec
def register_probers(register: Any) -> None:
    """``register(name, factory)`` with ``factory(settings) -> Prober``."""


@hookspec
def register_pruning_policies(register: Any) -> None:
    """``register(name, factory)`` with ``factory(settings) -> PruningPolicy``."""


@hookspec
def register_commands(app: Any) -> None:
    """Add commands to the ``flower`` typer app."""
