"""Public helpers for testing flower workflows and plugins.

``FakeMessagesAPI`` (a scripted Messages API on loopback) and the store contract
suite (``check_session_store``, ``check_lineage_store``; see docs/contract.md) are
imported lazily, so importing :mod:`flower.testing` costs nothing until they are used.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "FakeMessagesAPI": "flower.testing.fake_api",
    "RecordedRequest": "flower.testing.fake_api",
    "Reply": "flower.testing.fake_api",
    "Fault": "flower.testing.fake_api",
    "check_session_store": "flower.testing.contract",
    "check_lineage_store": "flower.testing.contract",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'flower.testing' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
