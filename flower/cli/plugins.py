"""``flower plugins``: what is loaded, from where, with which hooks, and what failed."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from flower.cli.lazy import command_help
from flower.cli.output import print_json
from flower.core.i18n import N_, _, ngettext

KIND_LABELS = {
    "session_stores": N_("session stores"),
    "lineage_stores": N_("lineage stores"),
    "probers": N_("probers"),
    "pruning_policies": N_("pruning policies"),
    "commands": N_("commands"),
}
"""How the listing names what a plugin registered (``--json`` keeps the kinds)."""


def describe_plugins(ctx: typer.Context) -> list[dict[str, Any]]:
    """Every plugin the registry knows, with what it registered, as plain data."""
    from flower.cli.group import FlowerGroup
    from flower.core.plugins import get_registry

    registry = get_registry()
    root = ctx.find_root().command
    commands: dict[str, str] = {}
    if isinstance(root, FlowerGroup):
        root.load_plugin_commands()
        commands = root.plugin_commands
    rows = []
    for info in registry.plugins:
        registered = registry.registered_by(info.name)
        mine = sorted(name for name, plugin in commands.items() if plugin == info.name)
        if mine:
            registered["commands"] = mine
        rows.append(
            {
                "name": info.name,
                "module": info.module,
                "distribution": info.distribution,
                "version": info.version,
                "hooks": list(info.hooks),
                "registered": registered,
                "error": info.error,
            }
        )
    return rows


@command_help(
    N_("List loaded plugins: distribution, version, hooks, what each registered, errors.")
)
def plugins(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help=N_("Machine-readable output."))] = False,
) -> None:
    if as_json:
        from flower.core.i18n import language

        # the values are data (an error's words included): English in every language
        with language("en"):
            rows = describe_plugins(ctx)
    else:
        rows = describe_plugins(ctx)
    if as_json:
        print_json(rows)
        return
    for row in rows:
        dist = row["distribution"] or "-"
        version = f" {row['version']}" if row["version"] else ""
        status = _("FAILED") if row["error"] else _("ok")
        typer.echo(f"{row['name']}  ({dist}{version}, {row['module']})  {status}")
        if row["hooks"]:
            typer.echo(_("    hooks: {hooks}").format(hooks=", ".join(row["hooks"])))
        for kind, names in row["registered"].items():
            label = _(KIND_LABELS[kind]) if kind in KIND_LABELS else kind
            typer.echo(f"    {label}: {', '.join(names)}")
        if row["error"]:
            typer.echo(_("    error: {error}").format(error=row["error"]))
    failed = sum(1 for row in rows if row["error"])
    total = ngettext(
        "{count} plugin, {failed} failed", "{count} plugins, {failed} failed", len(rows)
    )
    typer.echo(total.format(count=len(rows), failed=failed))
