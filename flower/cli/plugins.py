"""``flower plugins``: what is loaded, from where, with which hooks, and what failed."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from flower.cli.output import print_json

KIND_LABELS = {
    "session_stores": "session stores",
    "lineage_stores": "lineage stores",
    "probers": "probers",
    "pruning_policies": "pruning policies",
    "commands": "commands",
}


def describe_plugins(ctx: typer.Context) -> list[dict[str, Any]]:
    """Every plugin the registry knows, with what it registered, as plain data."""
    from flower.cli.group import FlowerGroup
    from flower.core.plugins import KINDS, get_registry

    registry = get_registry()
    root = ctx.find_root().command
    commands: dict[str, str] = {}
    if isinstance(root, FlowerGroup):
        root.load_plugin_commands()
        commands = root.plugin_commands
    rows = []
    for info in registry.plugins:
        registered: dict[str, list[str]] = {}
        for kind in KINDS:
            names = [n for n in registry.names(kind) if registry.get(kind, n).plugin == info.name]
            if names:
                registered[kind] = names
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


def plugins(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """List loaded plugins: distribution, version, hooks, what each registered, errors."""
    rows = describe_plugins(ctx)
    if as_json:
        print_json(rows)
        return
    for row in rows:
        dist = row["distribution"] or "-"
        version = f" {row['version']}" if row["version"] else ""
        status = "FAILED" if row["error"] else "ok"
        typer.echo(f"{row['name']}  ({dist}{version}, {row['module']})  {status}")
        if row["hooks"]:
            typer.echo(f"    hooks: {', '.join(row['hooks'])}")
        for kind, names in row["registered"].items():
            typer.echo(f"    {KIND_LABELS.get(kind, kind)}: {', '.join(names)}")
        if row["error"]:
            typer.echo(f"    error: {row['error']}")
    failed = sum(1 for row in rows if row["error"])
    typer.echo(f"{len(rows)} plugins, {failed} failed")
