"""``flower doctor``: is everything a run needs in place? One line per check, ok or fail.

Checks the configuration, the installed plugins (each loaded, no name claimed twice),
the session store (reachable, schema current), the pruning
chain (every policy's plugin loaded and working), the API endpoint (probed with the
configured strategy, timed), the presence of an API key (never its value) and whether
runs are traced (OpenTelemetry). Exits 1 when any check fails.
"""

from __future__ import annotations

import contextlib
import os
import time
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Annotated, Any

import typer

from flower.cli.lazy import command_help
from flower.core.errors import FlowerError
from flower.core.i18n import N_, _, language

if TYPE_CHECKING:
    from flower.core.config import LoadedSettings, Settings

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
    where = str(loaded.pyproject) if loaded.pyproject else _("defaults (no [tool.flower] found)")
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
        return Check(
            "store",
            True,
            _("{store} does not exist yet; the first run creates it").format(store=shown),
        )

    def reach() -> None:
        # read-only: doctor creates no store and migrates no schema (auto_migrate or not)
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
        return Check(
            "store",
            True,
            _("{store} does not exist yet; the first run creates it").format(store=shown),
        )
    except FlowerError as exc:
        # the store's own errors usually name it already
        said = redact_text(str(exc))
        return Check("store", False, said if said.startswith(shown) else f"{shown}: {said}")
    except Exception as exc:
        return Check("store", False, f"{shown}: {type(exc).__name__}: {exc}")
    return Check("store", True, _("{store} reachable, schema current").format(store=shown), seconds)


def check_run_dir(settings: Settings) -> Check:
    """The workspace and the run directory can be written (or created), as a run needs."""
    from pathlib import Path

    from flower.core.run_lock import RunDirError, require_writable

    try:
        require_writable(Path.cwd(), N_("the workspace"))
        require_writable(settings.run_path, N_("the run directory"))
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
    return Check("pruning", True, " -> ".join(p.name for p in policies) or _("no policies"))


def check_endpoint(settings: Settings) -> Check:
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
    from flower.runtime.credentials import keys_present

    present = keys_present()
    if present:
        return Check("api key", True, _("{names} set").format(names=_(" and ").join(present)))
    return Check("api key", False, _("set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN)"))


def check_traces(settings: Settings) -> Check:
    from flower.core.telemetry import describe

    ok, detail = describe(settings)
    return Check("traces", ok, detail)


def run_checks(ctx: typer.Context) -> list[Check]:
    config, loaded = check_config(ctx)
    checks = [config, check_plugins()]
    if loaded is None:
        skipped = _("skipped: the configuration is invalid")
        for name in ("run dir", "store", "pruning", "endpoint"):
            checks.append(Check(name, False, skipped))
    else:
        checks.append(check_run_dir(loaded.settings))
        checks.append(check_store(loaded.settings))
        checks.append(check_pruning(loaded.settings))
        checks.append(check_endpoint(loaded.settings))
    checks.append(check_api_key())
    if loaded is not None:
        checks.append(check_traces(loaded.settings))
    return checks


@command_help(
    N_(
        "Check configuration, session store, pruning chain, API endpoint and API key; "
        "exit 1 if\n"
        "any fails."
    )
)
def doctor(
    ctx: typer.Context,
    json: Annotated[bool, typer.Option("--json", help=N_("Machine-readable output."))] = False,
) -> None:
    from flower.cli.output import print_json
    from flower.core.display import pad, shown_width
    from flower.core.redact import redact_text

    if json:
        from flower.cli.context import get_loaded_settings

        # read first, as reading the settings sets the language they choose; an error in
        # them is the config check's to say
        with contextlib.suppress(FlowerError):
            get_loaded_settings(ctx)
        with language("en"):  # --json's values are data: the same words in every language
            checks = run_checks(ctx)
    else:
        checks = run_checks(ctx)
    for check in checks:
        check.detail = redact_text(check.detail)
    failed = [c for c in checks if not c.ok]
    if json:
        print_json({"ok": not failed, "checks": [asdict(c) for c in checks]})
    else:
        names = {c.name: _(CHECK_NAMES.get(c.name, c.name)) for c in checks}
        marks = {True: _("ok"), False: _("fail")}
        width = max(shown_width(name) for name in names.values())
        mark_width = max(shown_width(mark) for mark in marks.values())
        for check in checks:
            name, mark = names[check.name], marks[check.ok]
            typer.echo(f"{pad(mark, mark_width)}  {pad(name, width)}  {check.detail}")
        if failed:
            typer.echo(
                _("{failed} of {total} checks failed").format(failed=len(failed), total=len(checks))
            )
        else:
            typer.echo(_("all checks ok"))
    if failed:
        raise typer.Exit(1)
