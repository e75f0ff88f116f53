"""flower: long-running Claude agent workflows that never lose their place.

Names are imported lazily so ``flower --help`` starts fast.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # typing itself is not imported: the console script starts here
if TYPE_CHECKING:
    from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "SessionKey": "flower.core.records",
    "SessionInfo": "flower.core.records",
    "LineageRecord": "flower.core.records",
    "project_key": "flower.core.keys",
    "hookimpl": "flower.core.hookspecs",
    "open_session_store": "flower.stores.open",
    "open_lineage_store": "flower.stores.open",
    "load_settings": "flower.core.config",
    "Settings": "flower.core.config",
    "FlowerError": "flower.core.errors",
    "MissingAPIKeyError": "flower.runtime.credentials",
    "InvalidRunOptionError": "flower.runtime.engine",
    "UnknownToolError": "flower.runtime.tools.base",
    "PruningSessionStore": "flower.stores.prune",
    "AgentSpec": "flower.runtime.spec",
    "StepResult": "flower.runtime.spec",
    "Runtime": "flower.runtime.engine",
    "Resilience": "flower.core.resilience",
    "Lineage": "flower.core.lineage",
    "load_lineage": "flower.stores.lineage",
    "Step": "flower.workflow.base",
    "Workflow": "flower.workflow.base",
    "wake_state": "flower.workflow.plan",
    "WorkflowContext": "flower.workflow.context",
    "with_goal": "flower.workflow.goal",
}

__all__ = [*sorted(_EXPORTS), "__version__"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'flower' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
