"""``flower config``: the effective configuration and where each value came from."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from flower.cli.context import get_loaded_settings, store_name
from flower.cli.output import compact_json, print_json
from flower.core.i18n import N_, _
from flower.core.redact import redact_text, redact_value

SOURCE_WORDS = {"default": N_("default"), "command line": N_("command line")}
"""The sources that are words, not a file or variable name: shown translated (the
JSON keeps them as they are)."""


def _show(value: Any) -> str:
    if isinstance(value, str):
        return value
    return compact_json(value)


def config(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Show the effective configuration and the source of every value.

    Sources, later wins: defaults, [tool.flower] in the nearest pyproject.toml,
    FLOWER_* environment variables, command-line options. Passwords are masked.
    """
    import msgspec

    from flower.core.config import default_store_url, effective_items

    loaded = get_loaded_settings(ctx)
    from flower.stores.resolve import check_configured_plugins

    check_configured_plugins(loaded.settings)  # a backend's options are configuration too
    items = [
        (key, redact_value(value, key.rsplit(".", 1)[-1]), redact_text(source))
        for key, value, source in effective_items(loaded)
    ]
    url = default_store_url(loaded.settings)
    sessions_url = redact_text(url) if url else None
    pyproject = str(loaded.pyproject) if loaded.pyproject else None
    if as_json:
        print_json(
            {
                "pyproject": pyproject,
                "settings": redact_value(msgspec.to_builtins(loaded.settings)),
                "sources": {key: source for key, _value, source in items},
                "items": [{"key": k, "value": v, "source": s} for k, v, s in items],
                "effective": {"sessions_url": sessions_url},
            }
        )
        return
    none = _("(none: no [tool.flower] table found)")
    typer.echo(_("pyproject: {path}").format(path=pyproject or none))
    typer.echo(_("session store: {store}").format(store=redact_text(store_name(loaded.settings))))
    typer.echo("")
    width = max(len(key) for key, _value, _source in items)
    for key, value, source in items:
        shown = _(SOURCE_WORDS[source]) if source in SOURCE_WORDS else source
        typer.echo(f"{key.ljust(width)} = {_show(value)}  # {shown}")
