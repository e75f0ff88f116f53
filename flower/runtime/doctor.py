"""Is everything a run needs in place? The checks of ``flower doctor``, one result each.

The configuration, the installed plugins (each loaded, no name claimed twice), the run
directory, the session store (reachable, schema current), the pruning chain (every
policy's plugin loaded and working), the API endpoint (probed with the configured
strategy, timed), the presence of an API key (never its value) and whether runs are
traced (OpenTelemetry). No check creates a store, migrates a schema or writes a file.

::

    from flower.core.config import load_settings
    from flower.runtime.doctor import run_checks

    for check in run_checks(load_settings):
        print("ok  " if check.ok else "fail", check.name, check.detail)
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from flower.core.errors import ConfigError, FlowerError
from flower.core.i18n import N_, _

if TYPE_CHECKING:
    from flower.core.config import LoadedSettings, Settings

_T = TypeVar("_T")

CHECK_NAMES = {
    name: name
    for name in (
        N_("config"),
        N_("plugins"),
        N_("run dir"),
        N_("store"),
        N_("pruning"),
        N_("endpoint"),
        N_("api key"),
        N_("traces"),
    )
}
"""Each check's name: English in ``--json`` (data), translated in the lines."""


@dataclass
class Check:
    """One check's result: ``detail`` says what was found (why it failed, when not ok)."""

    name: str
    ok: bool
    detail: str
    seconds: float | None = None
    """How long the probe took (the store's and the endpoint's)."""


def _timed(work: Callable[[], _T]) -> tuple[_T, float]:
    started = time.perf_counter()
    value = work()
    return value, time.perf_counter() - started


def check_config(load: Callable[[], LoadedSettings]) -> tuple[Check, LoadedSettings | None]:
    """The settings ``load`` reads, and the plugins they name (pruning aside: that is
    :func:`check_pruning`'s); the loaded settings, or ``None`` when they are invalid."""
    from flower.stores.resolve import check_configured_plugins

    try:
        loaded = load()
    except FlowerError as exc:
        return Check("config", False, str(exc)), None
    try:
        check_configured_plugins(loaded.settings, pruning=False)
    except ConfigError as exc:
        return Check("config", False, loaded.explain(exc)), None
    where = str(loaded.pyproject) if loaded.pyproject else _("defaults (no [tool.flower] found)")
    return Check("config", True, where), loaded


def check_store(settings: Settings) -> Check:
    """The session store is reachable, its schema current and (SQLite) sound; read only:
    a store that is not there yet is ok (the first run creates it)."""
    from flower.core.config import default_store_url, sqlite_file, store_name
    from flower.core.errors import StoreNotFoundError
    from flower.core.records import SessionKey
    from flower.core.redact import redact_text, redact_url
    from flower.stores.open import open_session_store

    url = default_store_url(settings)
    shown = redact_url(url) if url else store_name(settings)
    database = sqlite_file(url) if url else None
    not_yet = _("{store} does not exist yet; the first run creates it").format(store=shown)
    if database is not None and not database.exists():
        return Check("store", True, not_yet)  # opening would create it

    def reach() -> None:
        store = open_session_store(settings.sessions.url, settings=settings, read_only=True)
        try:
            store.exists(SessionKey("flower-doctor", "probe"))
            # a SQLite file: whether SQLite finds it sound, as a run's writer would
            damage = getattr(getattr(store, "inner", store), "damage", None)
            why = damage() if callable(damage) else None
            if why is not None:
                raise FlowerError(
                    _(
                        "{store} is damaged ({what}); save what is readable with: "
                        "flower sessions repair"
                    ).format(store=shown, what=why)
                )
        finally:
            store.close()

    try:
        _nothing, seconds = _timed(reach)
    except StoreNotFoundError as exc:
        if url is not None and url.startswith("postgres") and not settings.sessions.auto_migrate:
            return Check(
                "store",
                False,
                _("{error}: run `flower db upgrade`").format(error=redact_text(str(exc))),
            )
        return Check("store", True, not_yet)
    except FlowerError as exc:
        # the store's own errors usually name it already
        said = redact_text(str(exc))
        return Check("store", False, said if said.startswith(shown) else f"{shown}: {said}")
    except Exception as exc:
        return Check("store", False, f"{shown}: {type(exc).__name__}: {exc}")
    return Check("store", True, _("{store} reachable, schema current").format(store=shown), seconds)


def check_run_dir(settings: Settings) -> Check:
    """The workspace and the run directory can be written (or created), as a run needs."""
    from flower.core.run_lock import RunDirError, require_run_dirs

    try:
        require_run_dirs(Path.cwd(), settings.run_path)
    except RunDirError as exc:
        return Check("run dir", False, str(exc))
    return Check("run dir", True, _("{path} writable").format(path=settings.run_path))


def check_plugins() -> Check:
    """Every installed plugin loaded, and registered what it offered without a clash."""
    from flower.core.plugins import get_registry

    plugins = get_registry().plugins
    failed = [p for p in plugins if p.error]
    if failed:
        return Check(
            "plugins",
            False,
            "; ".join(f"{p.name} ({p.distribution or p.module}): {p.error}" for p in failed),
        )
    return Check("plugins", True, _("{n} loaded").format(n=len(plugins)))


def check_pruning(loaded: LoadedSettings) -> Check:
    """The configured pruning chain can be built: every name is a loaded plugin's, no
    name twice, no options table for a missing policy, and every factory works."""
    from flower.stores.prune import PruningWarning, configured_policies

    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", PruningWarning)
            policies = configured_policies(loaded.settings)
    except ConfigError as exc:
        return Check("pruning", False, loaded.explain(exc))
    except FlowerError as exc:
        return Check("pruning", False, str(exc))
    left_out = [str(w.message) for w in caught if issubclass(w.category, PruningWarning)]
    if left_out:
        return Check("pruning", False, "; ".join(left_out))
    return Check("pruning", True, " -> ".join(p.name for p in policies) or _("no policies"))


def check_endpoint(settings: Settings) -> Check:
    """The API endpoint answers the configured probe (``strategy = "none"``: not probed)."""
    from flower.core.resilience import endpoint, make_prober

    source = (
        "ANTHROPIC_BASE_URL" if os.environ.get("ANTHROPIC_BASE_URL", "").strip() else _("default")
    )
    try:
        host, port = endpoint()
        prober = make_prober(settings)
    except FlowerError as exc:
        return Check("endpoint", False, str(exc))
    strategy, timeout = settings.probe.strategy, settings.probe.timeout
    if strategy == "none":
        return Check(
            "endpoint",
            True,
            _("{host}:{port} ({source}) not probed (strategy none)").format(
                host=host, port=port, source=source
            ),
        )
    reachable, seconds = _timed(lambda: prober.reachable(host, port, timeout))
    took = f"{seconds * 1000:.0f} ms"
    if reachable:
        detail = _("{host}:{port} ({source}) reachable by {strategy} probe in {took}")
    else:
        detail = _(
            "{host}:{port} ({source}) unreachable by {strategy} probe after {took} "
            "(timeout {timeout:g} s)"
        )
    detail = detail.format(
        host=host, port=port, source=source, strategy=strategy, took=took, timeout=timeout
    )
    return Check("endpoint", bool(reachable), detail, seconds)


def check_api_key() -> Check:
    """An API key is set (its name is said, never its value)."""
    from flower.runtime.credentials import keys_present

    present = keys_present()
    if present:
        return Check("api key", True, _("{names} set").format(names=_(" and ").join(present)))
    return Check("api key", False, _("set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN)"))


def check_traces(settings: Settings) -> Check:
    """Whether runs are traced (OpenTelemetry), and where to."""
    from flower.core.telemetry import describe

    ok, detail = describe(settings)
    return Check("traces", ok, detail)


def run_checks(load: Callable[[], LoadedSettings]) -> list[Check]:
    """Every check, in order, with the settings ``load`` reads (the checks that need them
    fail as skipped when they are invalid); every detail redacted."""
    from flower.core.redact import redact_text

    config, loaded = check_config(load)
    checks = [config, check_plugins()]
    if loaded is None:
        skipped = _("skipped: the configuration is invalid")
        checks += [Check(n, False, skipped) for n in ("run dir", "store", "pruning", "endpoint")]
    else:
        checks.append(check_run_dir(loaded.settings))
        checks.append(check_store(loaded.settings))
        checks.append(check_pruning(loaded))
        checks.append(check_endpoint(loaded.settings))
    checks.append(check_api_key())
    if loaded is not None:
        checks.append(check_traces(loaded.settings))
    for check in checks:
        check.detail = redact_text(check.detail)
    return checks


__all__ = [
    "CHECK_NAMES",
    "Check",
    "check_api_key",
    "check_config",
    "check_endpoint",
    "check_plugins",
    "check_pruning",
    "check_run_dir",
    "check_store",
    "check_traces",
    "run_checks",
]
