"""The plugin manager: built-ins and third-party plugins through one path.

Plugins come from the entry-point group ``flower`` (flower's own built-ins are
declared there too). Each entry point is loaded on its own: one that fails is
recorded and reported, and the rest keep working, unless ``FLOWER_STRICT_PLUGINS=1``.
"""

from __future__ import annotations

import importlib
import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import pluggy

from flower.core import hookspecs
from flower.core.entry_points import FoundEntryPoint, scan
from flower.core.errors import NoSuchPluginError, PluginError, did_you_mean

GROUP = "flower"
BUILTIN_MODULES = {
    "sql": "flower_plugins.sql",
    "jsonfs": "flower_plugins.jsonfs",
    "pruning": "flower_plugins.pruning",
    "probes": "flower_plugins.probes",
    "redact": "flower_plugins.redact",
}
"""flower's own plugins, name -> module: the one list. pyproject.toml declares the same
pairs as entry points (a test holds them equal); this list registers them when a source
tree runs without installed metadata, and reserves their names."""
KINDS = ("session_stores", "lineage_stores", "probers", "pruning_policies")
_KIND_LABELS = {
    "session_stores": "session store",
    "lineage_stores": "lineage store",
    "probers": "probe strategy",
    "pruning_policies": "pruning policy",
}


@dataclass(frozen=True)
class Registration:
    """One thing a plugin registered: a backend, a prober or a pruning policy.

    ``options`` may be registered as ``"module:Name"``: the options type is then
    imported when a store is opened, so registering stays free of its imports.
    """

    kind: str
    name: str
    factory: Callable[..., Any]
    plugin: str
    schemes: tuple[str, ...] = ()
    options_ref: type | str | None = None

    @property
    def options(self) -> type | None:
        ref = self.options_ref
        if not isinstance(ref, str):
            return ref
        module, _, name = ref.partition(":")
        try:
            resolved = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError) as exc:
            raise PluginError(
                f"plugin {self.plugin!r}: options {ref!r} of {self.name!r} cannot be "
                f"imported: {exc}"
            ) from exc
        if not isinstance(resolved, type):
            raise PluginError(f"plugin {self.plugin!r}: options {ref!r} is not a type")
        return resolved


@dataclass
class PluginInfo:
    name: str
    module: str
    distribution: str | None
    version: str | None
    hooks: list[str] = field(default_factory=list)
    error: str | None = None


class PluginWarning(UserWarning):
    pass


class Registry:
    """What every loaded plugin registered, by kind and name."""

    def __init__(self, pm: pluggy.PluginManager, infos: list[PluginInfo]) -> None:
        self.pm = pm
        self.plugins = infos
        self._items: dict[str, dict[str, Registration]] = {kind: {} for kind in KINDS}
        for kind in KINDS:
            self._collect(kind)

    def _collect(self, kind: str) -> None:
        hook = getattr(self.pm.hook, f"register_{kind}")
        # flower's own plugins first, then the others in load order: on a clash of
        # names the one registered first keeps it and the other plugin is reported
        impls = sorted(
            enumerate(hook.get_hookimpls()),
            key=lambda pair: (self.pm.get_name(pair[1].plugin) not in BUILTIN_MODULES, pair[0]),
        )
        for _, impl in impls:
            plugin_name = self.pm.get_name(impl.plugin) or repr(impl.plugin)
            added: list[str] = []

            def register(
                name: str,
                factory: Callable[..., Any],
                *,
                schemes: tuple[str, ...] | list[str] = (),
                options: type | str | None = None,
                _plugin: str = plugin_name,
                _added: list[str] = added,
            ) -> None:
                clash = self._clash(kind, name, tuple(schemes))
                if clash is not None:
                    report_problem(self.plugins, _plugin, clash, skipped=False)
                    return
                self._items[kind][name] = Registration(
                    kind, name, factory, _plugin, tuple(schemes), options
                )
                _added.append(name)

            try:
                impl.function(register)
            except (PluginError, KeyboardInterrupt):  # strict mode made a clash fatal
                raise
            except BaseException as exc:  # a broken hook, even one calling sys.exit()
                for name in added:  # all of a failed hook is left out, not half of it
                    del self._items[kind][name]
                report_problem(self.plugins, plugin_name, f"register_{kind} failed: {exc!r}")

    def _clash(self, kind: str, name: str, schemes: tuple[str, ...]) -> str | None:
        """Why registering ``name`` (handling ``schemes``) is refused, if it is."""
        label = _KIND_LABELS[kind]
        existing = self._items[kind].get(name)
        if existing is not None:
            return (
                f"its {label} {name!r} is ignored: plugin {existing.plugin!r} already "
                f"provides one by that name"
            )
        for other in self._items[kind].values():
            shared = sorted(set(schemes) & set(other.schemes))
            if shared:
                return (
                    f"its {label} {name!r} is ignored: plugin {other.plugin!r} already "
                    f"handles URLs of scheme {shared[0]!r} (with {other.name!r})"
                )
        return None

    def names(self, kind: str) -> list[str]:
        return sorted(self._items[kind])

    def get(self, kind: str, name: str) -> Registration:
        try:
            return self._items[kind][name]
        except KeyError:
            label = kind.replace("_", " ").rstrip("s")
            raise NoSuchPluginError(
                f"no {label} named {name!r}{did_you_mean([name], self.names(kind))}; "
                f"available: {', '.join(self.names(kind)) or 'none'}"
            ) from None

    def schemes(self, kind: str) -> list[str]:
        """Every URL scheme the backends of ``kind`` handle."""
        return sorted({s for reg in self._items[kind].values() for s in reg.schemes})

    def by_scheme(self, kind: str, scheme: str) -> Registration:
        base = scheme.split("+", 1)[0]
        for reg in self._items[kind].values():
            if base in reg.schemes:
                return reg
        raise NoSuchPluginError(
            f"no backend handles URLs of scheme {scheme!r}; known: {', '.join(self.schemes(kind))}"
        )


def report_problem(infos: list[PluginInfo], name: str, error: str, *, skipped: bool = True) -> None:
    """Record ``error`` on the plugin (the latest one of that name: a refused entry point
    is recorded after the one holding its name) and warn, or raise when strict."""
    for info in reversed(infos):
        if info.name == name:
            info.error = f"{info.error}; {error}" if info.error and not skipped else error
            break
    if os.environ.get("FLOWER_STRICT_PLUGINS") == "1":
        raise PluginError(f"plugin {name!r}: {error}")
    what = " skipped" if skipped else ""
    warnings.warn(f"flower plugin {name!r}{what}: {error}", PluginWarning, stacklevel=3)


def _entry_points() -> list[FoundEntryPoint]:
    """The group's entry points: read directly when the layout allows (fast), else
    through ``importlib.metadata``; either way the path is scanned once per registry."""
    found = scan(GROUP)
    if found is not None:
        return found
    from importlib import metadata

    return [
        FoundEntryPoint(
            ep.name,
            ep.value,
            ep.dist.name if ep.dist else None,
            ep.dist.version if ep.dist else None,
        )
        for ep in metadata.entry_points(group=GROUP)
    ]


def _load(ep: FoundEntryPoint) -> Any:
    """What ``EntryPoint.load()`` returns: the module, or the attribute it names."""
    target: Any = importlib.import_module(ep.module)
    for attr in (ep.attr or "").split("."):
        if attr:
            target = getattr(target, attr)
    return target


def _register_module(
    pm: pluggy.PluginManager,
    infos: list[PluginInfo],
    name: str,
    module: ModuleType,
    dist: str | None,
    version: str | None,
) -> None:
    builtin = BUILTIN_MODULES.get(name)
    if builtin is not None and module.__name__ != builtin:
        # flower's own names are reserved, with or without installed metadata
        raise PluginError(
            f"the plugin name {name!r} is flower's own (for {builtin}); "
            "give the entry point another name"
        )
    taken = pm.get_plugin(name)
    if taken is module:
        return
    if taken is not None:
        owner = next((i for i in infos if i.name == name), None)
        by = f" ({owner.distribution})" if owner is not None and owner.distribution else ""
        raise PluginError(
            f"the plugin name {name!r} is taken by {taken.__name__}{by}; "
            "give the entry point another name"
        )
    pm.register(module, name=name)
    hooks = sorted(impl.name for impl in pm.get_hookcallers(module) or [])
    infos.append(PluginInfo(name, module.__name__, dist, version, hooks))


def build_plugin_manager(
    extra: list[ModuleType] | None = None,
) -> tuple[pluggy.PluginManager, list[PluginInfo]]:
    """Load every entry point of group ``flower`` one by one; report, never crash."""
    pm = pluggy.PluginManager(GROUP)
    pm.add_hookspecs(hookspecs)
    infos: list[PluginInfo] = []
    # flower's own entry points first: a third-party one reusing a built-in's name is
    # then reported rather than silently taking the built-in's place
    for ep in sorted(
        _entry_points(), key=lambda ep: ep.name not in BUILTIN_MODULES or ep.dist != "flower"
    ):
        dist, version = ep.dist, ep.version
        try:
            module = _load(ep)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # sys.exit() at import is a broken plugin too
            infos.append(
                PluginInfo(ep.name, ep.value, dist, version, error=f"{type(exc).__name__}: {exc}")
            )
            report_problem(
                infos, ep.name, f"failed to import {ep.value}: {type(exc).__name__}: {exc}"
            )
            continue
        try:
            _register_module(pm, infos, ep.name, module, dist, version)
        except Exception as exc:
            infos.append(PluginInfo(ep.name, ep.value, dist, version, error=str(exc)))
            report_problem(infos, ep.name, f"invalid plugin: {exc}")
    # Running from a source tree without installed metadata: register built-ins directly.
    for name, modname in BUILTIN_MODULES.items():
        if pm.get_plugin(name) is None and not any(i.name == name for i in infos):
            try:
                module = importlib.import_module(modname)
            except ImportError:
                continue
            _register_module(pm, infos, name, module, "flower", None)
    for module in extra or []:
        _register_module(pm, infos, module.__name__, module, None, None)
    return pm, infos


_registry: Registry | None = None


def get_registry() -> Registry:
    """The process-wide registry, built on first use."""
    global _registry
    if _registry is None:
        pm, infos = build_plugin_manager()
        _registry = Registry(pm, infos)
    return _registry


def reset_registry(extra: list[ModuleType] | None = None) -> Registry:
    """Rebuild the registry (tests, or after installing a plugin in-process)."""
    global _registry
    pm, infos = build_plugin_manager(extra)
    _registry = Registry(pm, infos)
    return _registry


__all__ = ["PluginInfo", "Registration", "Registry", "get_registry", "reset_registry"]
