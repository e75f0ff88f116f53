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
from importlib import metadata
from types import ModuleType
from typing import Any, NamedTuple

import pluggy

from flower.core import hookspecs
from flower.core.errors import NoSuchPluginError, PluginError
from flower.core.i18n import N_, _
from flower.core.suggest import did_you_mean

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
    "session_stores": N_("session store"),
    "lineage_stores": N_("lineage store"),
    "probers": N_("probe strategy"),
    "pruning_policies": N_("pruning policy"),
}

_KIND_NAMES = {
    "session_stores": N_("session store"),
    "lineage_stores": N_("lineage store"),
    "probers": N_("prober"),
    "pruning_policies": N_("pruning policy"),
}
"""What a name asked for of each kind is called when no plugin provides it."""


class Registration(NamedTuple):
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
        module, _colon, name = ref.partition(":")
        try:
            resolved = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError) as exc:
            raise PluginError(
                _(
                    "plugin {plugin!r}: options {ref!r} of {name!r} cannot be imported: {error}"
                ).format(plugin=self.plugin, ref=ref, name=self.name, error=exc)
            ) from exc
        if not isinstance(resolved, type):
            raise PluginError(
                _("plugin {plugin!r}: options {ref!r} is not a type").format(
                    plugin=self.plugin, ref=ref
                )
            )
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
        for _order, impl in impls:
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
                report_problem(
                    self.plugins,
                    plugin_name,
                    _("{hook} failed: {error}").format(hook=f"register_{kind}", error=repr(exc)),
                )

    def _clash(self, kind: str, name: str, schemes: tuple[str, ...]) -> str | None:
        """Why registering ``name`` (handling ``schemes``) is refused, if it is."""
        label = _(_KIND_LABELS[kind])
        existing = self._items[kind].get(name)
        if existing is not None:
            return _(
                "its {label} {name!r} is ignored: plugin {plugin!r} already provides one by "
                "that name"
            ).format(label=label, name=name, plugin=existing.plugin)
        for other in self._items[kind].values():
            shared = sorted(set(schemes) & set(other.schemes))
            if shared:
                return _(
                    "its {label} {name!r} is ignored: plugin {plugin!r} already handles URLs "
                    "of scheme {scheme!r} (with {other!r})"
                ).format(
                    label=label, name=name, plugin=other.plugin, scheme=shared[0], other=other.name
                )
        return None

    def names(self, kind: str) -> list[str]:
        return sorted(self._items[kind])

    def registered_by(self, plugin: str) -> dict[str, list[str]]:
        """What ``plugin`` registered, by kind (``flower plugins``): only the kinds it
        registered something of, each kind's names sorted."""
        found = {
            kind: [name for name, reg in sorted(self._items[kind].items()) if reg.plugin == plugin]
            for kind in KINDS
        }
        return {kind: names for kind, names in found.items() if names}

    def get(self, kind: str, name: str) -> Registration:
        try:
            return self._items[kind][name]
        except KeyError:
            raise NoSuchPluginError(
                _("no {label} named {name!r}{did_you_mean}; available: {available}").format(
                    label=_(_KIND_NAMES.get(kind, kind)),
                    name=name,
                    did_you_mean=did_you_mean([name], self.names(kind)),
                    available=", ".join(self.names(kind)) or _("none"),
                )
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
            _("no backend handles URLs of scheme {scheme!r}; known: {known}").format(
                scheme=scheme, known=", ".join(self.schemes(kind))
            )
        )


def report_problem(infos: list[PluginInfo], name: str, error: str, *, skipped: bool = True) -> None:
    """Record ``error`` on the plugin (the latest one of that name: a refused entry point
    is recorded after the one holding its name) and warn, or raise when strict."""
    for info in reversed(infos):
        if info.name == name:
            info.error = f"{info.error}; {error}" if info.error and not skipped else error
            break
    if os.environ.get("FLOWER_STRICT_PLUGINS") == "1":
        raise PluginError(_("plugin {name!r}: {error}").format(name=name, error=error))
    if skipped:
        text = _("flower plugin {name!r} skipped: {error}")
    else:
        text = _("flower plugin {name!r}: {error}")
    warnings.warn(text.format(name=name, error=error), PluginWarning, stacklevel=3)


def _entry_points() -> list[metadata.EntryPoint]:
    """The entry points of group ``flower``, from every installed distribution."""
    return list(metadata.entry_points(group=GROUP))


def _distribution(ep: metadata.EntryPoint) -> tuple[str | None, str | None]:
    """Name and version of the distribution that declares ``ep`` (``None``: unknown)."""
    dist = ep.dist
    return (dist.name, dist.version) if dist is not None else (None, None)


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
            _(
                "the plugin name {name!r} is flower's own (for {module}); give the entry "
                "point another name"
            ).format(name=name, module=builtin)
        )
    taken = pm.get_plugin(name)
    if taken is module:
        return
    if taken is not None:
        owner = next((i for i in infos if i.name == name), None)
        by = f" ({owner.distribution})" if owner is not None and owner.distribution else ""
        raise PluginError(
            _(
                "the plugin name {name!r} is taken by {module}{by}; give the entry point "
                "another name"
            ).format(name=name, module=taken.__name__, by=by)
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
        _entry_points(),
        key=lambda ep: ep.name not in BUILTIN_MODULES or _distribution(ep)[0] != "flower",
    ):
        dist, version = _distribution(ep)
        try:
            module = ep.load()
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # sys.exit() at import is a broken plugin too
            infos.append(
                PluginInfo(ep.name, ep.value, dist, version, error=f"{type(exc).__name__}: {exc}")
            )
            report_problem(
                infos,
                ep.name,
                _("failed to import {module}: {error}").format(
                    module=ep.value, error=f"{type(exc).__name__}: {exc}"
                ),
            )
            continue
        try:
            _register_module(pm, infos, ep.name, module, dist, version)
        except Exception as exc:
            infos.append(PluginInfo(ep.name, ep.value, dist, version, error=str(exc)))
            report_problem(infos, ep.name, _("invalid plugin: {error}").format(error=exc))
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
