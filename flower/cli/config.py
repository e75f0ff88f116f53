"""``flower config``: the effective configuration and where each value came from."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from flower.cli.context import get_loaded_settings
from flower.cli.lazy import command_help
from flower.cli.output import print_json
from flower.core.display import compact_json
from flower.core.i18n import N_, _
from flower.core.labels import shown_step
from flower.core.redact import redact_text, redact_value

SOURCE_WORDS = {"default": N_("default"), "command line": N_("command line")}
"""The sources that are words, not a file or variable name: shown translated (the
JSON keeps them as they are)."""


STEP_KEYS = ("workflow.clarify_step", "workflow.goals_step", "workflow.work_step")
"""The settings that name a step: their value is the lineage key, shown translated."""

DOCUMENT_KEYS = ("workflow.brief_file", "workflow.goals_file")
"""The settings :func:`flower.workflow.documents.document_lookups` answers for when unset."""


def _show(value: object) -> str:
    if isinstance(value, str):
        return value
    return compact_json(value)


@command_help(
    N_(
        "Show the effective configuration and the source of every value.\n"
        "\n"
        "Sources, later wins: defaults, [tool.flower] in the nearest pyproject.toml,\n"
        "FLOWER_* environment variables, command-line options. Passwords are masked."
    )
)
def config(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help=N_("Machine-readable output."))] = False,
) -> None:
    import msgspec

    from flower.core.config import default_store_url, effective_items
    from flower.workflow.documents import document_lookups

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
    workspace = Path.cwd().resolve()  # where a run would look for them
    lookups = dict(zip(DOCUMENT_KEYS, document_lookups(workspace, loaded.settings), strict=True))
    if as_json:
        print_json(
            {
                "pyproject": pyproject,
                "settings": redact_value(msgspec.to_builtins(loaded.settings)),
                "sources": {key: source for key, _value, source in items},
                "items": [{"key": k, "value": v, "source": s} for k, v, s in items],
                "effective": {
                    "sessions_url": sessions_url,
                    **{
                        key.rsplit(".", 1)[-1]: lookup.as_json(workspace)
                        for key, lookup in lookups.items()
                    },
                },
            }
        )
        return
    from flower.core.config import store_name
    from flower.workflow.documents import step_lookups

    steps = step_lookups(workspace, loaded.settings)
    none = _("(none: no [tool.flower] table found)")
    typer.echo(_("pyproject: {path}").format(path=pyproject or none))
    typer.echo(_("session store: {store}").format(store=redact_text(store_name(loaded.settings))))
    typer.echo("")
    width = max(len(key) for key, _value, _source in items)
    for key, value, source in items:
        shown = _(SOURCE_WORDS[source]) if source in SOURCE_WORDS else source
        if key in lookups and value is None:  # unset: say what the lookup picks here
            shown = lookups[key].said(workspace)
        if key in STEP_KEYS and value is None:  # unset: the key a run here uses
            lookup = steps[key.rsplit(".", 1)[-1]]
            value, shown = lookup.key, lookup.said()
        if key in STEP_KEYS and isinstance(value, str) and shown_step(value) != value:
            shown = _("{source}; shown as {name}").format(source=shown, name=shown_step(value))
        typer.echo(f"{key.ljust(width)} = {_show(value)}  # {shown}")
