from __future__ import annotations

import types

import pytest

from flower.core.errors import PluginError
from flower.core.hookspecs import hookimpl
from flower.core.plugins import PluginWarning, get_registry, reset_registry

pytestmark = pytest.mark.usefixtures("english")  # expects flower's English output


@pytest.fixture(autouse=True)
def _fresh_registry():
    yield
    reset_registry()


def _plugin(name: str, **hooks: object) -> types.ModuleType:
    module = types.ModuleType(name)
    for hook_name, fn in hooks.items():
        setattr(module, hook_name, hookimpl(fn))
    return module


def test_builtins_are_registered_through_the_entry_point_group() -> None:
    registry = get_registry()
    names = {p.name for p in registry.plugins}
    assert {"sql", "jsonfs", "pruning", "probes"} <= names
    assert all(p.distribution == "flower" for p in registry.plugins if p.name in names)


def test_a_third_party_backend_is_found_by_name_and_scheme() -> None:
    def register_session_stores(register):
        register("memo", lambda **kw: "store", schemes=("memo",))

    registry = reset_registry(
        extra=[_plugin("thirdparty", register_session_stores=register_session_stores)]
    )
    assert registry.get("session_stores", "memo").plugin == "thirdparty"
    assert registry.by_scheme("session_stores", "memo+driver").name == "memo"


def test_unknown_names_list_what_is_available() -> None:
    registry = get_registry()
    with pytest.raises(PluginError, match="available"):
        registry.get("probers", "carrier-pigeon")
    with pytest.raises(PluginError, match="scheme 'gopher'"):
        registry.by_scheme("session_stores", "gopher")


def test_two_plugins_claiming_one_name_the_first_keeps_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("FLOWER_STRICT_PLUGINS", raising=False)

    def register_probers(register):
        register("twin", lambda settings: None)

    a = _plugin("plugin_a", register_probers=register_probers)
    b = _plugin("plugin_b", register_probers=register_probers)
    with pytest.warns(PluginWarning, match="probe strategy 'twin' is ignored"):
        registry = reset_registry(extra=[a, b])
    assert registry.get("probers", "twin").plugin == "plugin_a"
    errors = {p.name: p.error for p in registry.plugins}
    assert errors["plugin_a"] is None
    assert "plugin 'plugin_a' already provides one by that name" in (errors["plugin_b"] or "")

    monkeypatch.setenv("FLOWER_STRICT_PLUGINS", "1")
    with pytest.raises(PluginError, match="plugin 'plugin_b': its probe strategy 'twin'"):
        reset_registry(extra=[a, b])


def test_a_hook_that_raises_is_reported_not_fatal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FLOWER_STRICT_PLUGINS", raising=False)

    def register_probers(register):
        register("half-done", lambda settings: None)
        raise RuntimeError("boom")

    with pytest.warns(UserWarning, match="boom"):
        registry = reset_registry(extra=[_plugin("flaky", register_probers=register_probers)])
    info = next(p for p in registry.plugins if p.name == "flaky")
    assert "boom" in (info.error or "")
    assert "half-done" not in registry.names("probers")  # none of a failed hook is kept


def test_strict_mode_makes_a_broken_hook_fatal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLOWER_STRICT_PLUGINS", "1")

    def register_probers(register):
        raise RuntimeError("boom")

    with pytest.raises(PluginError, match="boom"):
        reset_registry(extra=[_plugin("flaky", register_probers=register_probers)])


def test_a_builtin_name_is_reserved_even_before_the_builtin_is_registered() -> None:
    import pluggy

    from flower.core import hookspecs
    from flower.core.plugins import _register_module

    pm = pluggy.PluginManager("flower")
    pm.add_hookspecs(hookspecs)
    impostor = _plugin("evil_sql")
    with pytest.raises(PluginError, match="the plugin name 'sql' is flower's own"):
        _register_module(pm, [], "sql", impostor, "evilplug", "1.0")
    assert pm.get_plugin("sql") is None  # the built-in can still take its name
