"""``flower doctor``: is everything a run needs in place? One line per check, ok or fail.

Checks the configuration, the installed plugins (each loaded, no name claimed twice),
the session store (reachable, schema current), the pruning
chain (every policy's plugin loaded and working), the API endpoint (probed with the
configured strategy, timed), the presence of an API key (never its value) and whether
runs are traced (OpenTelemetry). Exits 1 when any check fails.
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Annotated, Any

import typer

from flower.core.errors import FlowerError

if TYPE_CHECKING:
    from flower.core.config import LoadedSettings, Settings

KEY_VARIABLES = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")


@dataclass
class Check:
    name: str
    ok: bool
    detail: str
    seconds: float | None = None


def _timed(work: Callable[[], Any]) -> tuple[Any, float]:
    started = time.perf_counter()
    value = work()
    return value, time.perf_counter() - started


def check_config(ctx: typer.Context) -> tuple[Check, LoadedSettings | None]:
    from flower.cli.context import config_error_text, get_loaded_settings
    from flower.core.errors import ConfigError
    from flower.stores.resolve import check_configured_plugins

    try:
        loaded = get_loaded_settings(ctx)
    except FlowerError as exc:
        return Check("config", False, str(exc)), None
    try:
        check_configured_plugins(loaded.settings, pruning=False)  # the pruning check's job
    except ConfigError as exc:
        return Check("config", False, config_error_text(exc)), None
    where = str(loaded.pyproject) if loaded.pyproject else "defaults (no [tool.flower] found)"
    return Check("config", True, where), loaded


def check_store(settings: Settings) -> Check:
    from flower.cli.context import store_name
    from flower.core.config import default_store_url, sqlite_file
    from flower.core.errors import StoreNotFoundError
    from flower.core.records import SessionKey
    from flower.core.redact import redact_text, redact_url
    from flower.stores.open import open_session_store

    url = default_store_url(settings)
    shown = redact_url(url) if url else store_name(settings)
    database = sqlite_file(url) if url else None
    if database is not None and not database.exists():
        # Opening would create it: doctor leaves no files behind.
        return Check("store", True, f"{shown} does not exist yet; the first run creates it")

    def reach() -> None:
        # read-only: doctor creates no store and migrates no schema (auto_migrate or not)
        store = open_session_store(settings.sessions.url, settings=settings, read_only=True)
        try:
            store.exists(SessionKey("flower-doctor", "probe"))
        finally:
            store.close()

    try:
        _, seconds = _timed(reach)
    except StoreNotFoundError as exc:
        if url is not None and url.startswith("postgres") and not settings.sessions.auto_migrate:
            return Check("store", False, f"{redact_text(str(exc))}: run `flower db upgrade`")
        return Check("store", True, f"{shown} does not exist yet; the first run creates it")
    except FlowerError as exc:
        # the store's own errors usually name it already
        said = redact_text(str(exc))
        return Check("store", False, said if said.startswith(shown) else f"{shown}: {said}")
    except Exception as exc:
        return Check("store", False, f"{shown}: {type(exc).__name__}: {exc}")
    return Check("store", True, f"{shown} reachable, schema current", seconds)


def check_run_dir(settings: Settings) -> Check:
    """The workspace and the run directory can be written (or created), as a run needs."""
    from pathlib import Path

    from flower.cli.run_lock import RunDirError, require_writable

    try:
        require_writable(Path.cwd(), "the workspace")
        require_writable(settings.run_path, "the run directory")
    except RunDirError as exc:
        return Check("run dir", False, str(exc))
    return Check("run dir", True, f"{settings.run_path} writable")


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
    return Check("plugins", True, f"{len(plugins)} loaded")


def check_pruning(settings: Settings) -> Check:
    """The configured pruning chain can be built: every name is a loaded plugin's, no
    name twice, no options table for a missing policy, and every factory works."""
    from flower.cli.context import config_error_text
    from flower.core.errors import ConfigError
    from flower.stores.prune import PruningWarning, configured_policies

    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", PruningWarning)
            policies = configured_policies(settings)
    except ConfigError as exc:
        return Check("pruning", False, config_error_text(exc))
    except FlowerError as exc:
        return Check("pruning", False, str(exc))
    left_out = [str(w.message) for w in caught if issubclass(w.category, PruningWarning)]
    if left_out:
        return Check("pruning", False, "; ".join(left_out))
    return Check("pruning", True, " -> ".join(p.name for p in policies) or "no policies")


def check_endpoint(settings: Settings) -> Check:
    from flower.core.resilience import endpoint, make_prober

    source = "ANTHROPIC_BASE_URL" if os.environ.get("ANTHROPIC_BASE_URL", "").strip() else "default"
    try:
        host, port = endpoint()
        prober = make_prober(settings)
    except FlowerError as exc:
        return Check("endpoint", False, str(exc))
    strategy, timeout = settings.probe.strategy, settings.probe.timeout
    if strategy == "none":
        return Check("endpoint", True, f"{host}:{port} ({source}) not probed (strategy none)")
    reachable, seconds = _timed(lambda: prober.reachable(host, port, timeout))
    took = f"{seconds * 1000:.0f} ms"
    if reachable:
        detail = f"{host}:{port} ({source}) reachable by {strategy} probe in {took}"
    else:
        detail = (
            f"{host}:{port} ({source}) unreachable by {strategy} probe after {took} "
            f"(timeout {timeout:g} s)"
        )
    return Check("endpoint", bool(reachable), detail, seconds)


def check_api_key() -> Check:
    present = [name for name in KEY_VARIABLES if os.environ.get(name, "").strip()]
    if present:
        return Check("api key", True, f"{' and '.join(present)} set")
    return Check("api key", False, "set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN)")


def check_traces(settings: Settings) -> Check:
    from flower.core.telemetry import describe

    ok, detail = describe(settings)
    return Check("traces", ok, detail)


def run_checks(ctx: typer.Context) -> list[Check]:
    config, loaded = check_config(ctx)
    checks = [config, check_plugins()]
    if loaded is None:
        checks.append(Check("run dir", False, "skipped: the configuration is invalid"))
        checks.append(Check("store", False, "skipped: the configuration is invalid"))
        checks.append(Check("pruning", False, "skipped: the configuration is invalid"))
        checks.append(Check("endpoint", False, "skipped: the configuration is invalid"))
    else:
        checks.append(check_run_dir(loaded.settings))
        checks.append(check_store(loaded.settings))
        checks.append(check_pruning(loaded.settings))
        checks.append(check_endpoint(loaded.settings))
    checks.append(check_api_key())
    if loaded is not None:
        checks.append(check_traces(loaded.settings))
    return checks


def doctor(
    ctx: typer.Context,
    json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Check configuration, session store, pruning chain, API endpoint and API key; exit 1 if
    any fails."""
    from flower.cli.output import print_json
    from flower.core.redact import redact_text

    checks = run_checks(ctx)
    for check in checks:
        check.detail = redact_text(check.detail)
    failed = [c for c in checks if not c.ok]
    if json:
        print_json({"ok": not failed, "checks": [asdict(c) for c in checks]})
    else:
        width = max(len(c.name) for c in checks)
        for check in checks:
            typer.echo(f"{'ok' if check.ok else 'fail':<4}  {check.name:<{width}}  {check.detail}")
        typer.echo(f"{len(failed)} of {len(checks)} checks failed" if failed else "all checks ok")
    if failed:
        raise typer.Exit(1)
