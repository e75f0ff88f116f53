"""A dict-backed SessionStore, and a plugin module registering it as ``prune-test-memory``.

Enough of the protocol for the pruning tests, which must not depend on the SQL stores
being built elsewhere in the tree.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from flower.core.hookspecs import hookimpl
from flower.core.protocols import SessionStoreBase
from flower.core.records import SessionInfo, SessionKey

SHARED: dict[SessionKey, list[dict[str, Any]]] = {}


class MemoryStore(SessionStoreBase):
    def __init__(self, data: dict[SessionKey, list[dict[str, Any]]] | None = None) -> None:
        self.data = {} if data is None else data
        self.loads = 0

    def append(self, key: SessionKey, entries: Sequence[dict[str, Any]]) -> None:
        rows = self.data.setdefault(key, [])
        seen = {e.get("uuid") for e in rows if e.get("uuid")}
        rows.extend(copy.deepcopy(e) for e in entries if not e.get("uuid") or e["uuid"] not in seen)

    def load(self, key: SessionKey) -> list[dict[str, Any]] | None:
        self.loads += 1
        rows = self.data.get(key)
        return copy.deepcopy(rows) if rows is not None else None

    def list_projects(self) -> list[str]:
        return sorted({k.project_key for k in self.data})

    def list_sessions(self, project_key: str) -> list[SessionInfo]:
        return [SessionInfo(k.session_id, 0) for k in self.data if k.project_key == project_key]


@hookimpl
def register_session_stores(register: Any) -> None:
    register(
        "prune-test-memory",
        lambda url, options, settings: MemoryStore(SHARED),
        schemes=("prunemem",),
    )


class FailingPolicy:
    """Selected as ``failing-test``: its prune() always raises."""

    name = "failing-test"

    def __init__(self, settings: Any) -> None:
        pass

    def prune(self, entries: list[dict[str, Any]], ctx: Any) -> list[dict[str, Any]]:
        raise RuntimeError("kaboom")


def _broken_factory(settings: Any) -> Any:
    raise ValueError("invalid literal for int() with base 10: 'two'")


def _strict_factory(settings: Any) -> Any:
    from flower.core.errors import ConfigError

    raise ConfigError("configuration: [tool.flower.pruning.options.strict-test] level: bad")


def _bare_config_factory(settings: Any) -> Any:
    from flower.core.errors import ConfigError

    raise ConfigError("option 'level' must be one of: low, high")


class Misnamed:
    """Registered as ``misnamed-test`` but calls itself something else."""

    name = "what-the-class-says"

    def __init__(self, settings: Any) -> None:
        pass

    def prune(self, entries: list[dict[str, Any]], ctx: Any) -> list[dict[str, Any]]:
        raise RuntimeError("kaboom")


@hookimpl
def register_pruning_policies(register: Any) -> None:
    register("failing-test", FailingPolicy)
    register("bare-config-test", _bare_config_factory)  # a ConfigError naming no table
    register("misnamed-test", Misnamed)
    register("broken-factory-test", _broken_factory)  # a plugin bug at creation
    register("strict-test", _strict_factory)  # a plugin rejecting its options
    register("no-prune-test", lambda settings: object())
