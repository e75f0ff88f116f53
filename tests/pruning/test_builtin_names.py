"""Each built-in policy is registered under its own name."""

from __future__ import annotations

from flower.core.plugins import get_registry
from flower_plugins.pruning.policies import BUILTIN_POLICIES


def test_a_registered_factory_makes_the_policy() -> None:
    registry = get_registry()
    for name, cls in BUILTIN_POLICIES.items():
        policy = registry.get("pruning_policies", name).factory(None)
        assert type(policy) is cls and policy.name == name
