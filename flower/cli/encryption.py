"""``flower sessions keygen`` and ``flower sessions rekey``: keys for encryption at rest."""

from __future__ import annotations

from contextlib import nullcontext
from pathlib import Path
from typing import Annotated

import typer

from flower.cli.lazy import command_help
from flower.core.i18n import N_, _, language, ngettext


@command_help(N_("Print a new random encryption key (for FLOWER_ENCRYPTION_KEY or a key file)."))
def keygen() -> None:
    from flower.stores.keyring import generate_key

    typer.echo(generate_key())


@command_help(
    N_(
        "Re-encrypt every session under a new key; resumable, nothing lost.\n"
        "\n"
        "Without a new key, re-encrypts under the current key whatever is not yet under "
        "it\n"
        "(entries written before encryption was on, or under an older key of the "
        "keyring).\n"
        "Run it while no flower run writes to the store."
    )
)
def rekey(
    ctx: typer.Context,
    new_key_file: Annotated[
        Path | None,
        typer.Option(
            "--new-key-file",
            metavar="FILE",
            help=N_("The new key (default: FLOWER_NEW_ENCRYPTION_KEY, else the current key)."),
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help=N_("Machine-readable output."))] = False,
) -> None:
    from flower.cli.context import open_store
    from flower.cli.output import print_json
    from flower.core.display import n_entries, n_sessions
    from flower.stores.keyring import load_new_keyring
    from flower.stores.rekey import rekey as run_rekey

    new = load_new_keyring(new_key_file)
    store = open_store(ctx)
    try:
        # --json is read by scripts: its failure messages are English in every language
        with language("en") if as_json else nullcontext():
            report = run_rekey(store, new)
    finally:
        store.close()
    if as_json:
        print_json(report.as_dict())
    else:
        done = ngettext(
            "re-encrypted {sessions} ({entries}, {resumed} resumed) under key id {key_id}; "
            "{skipped} was already under it",
            "re-encrypted {sessions} ({entries}, {resumed} resumed) under key id {key_id}; "
            "{skipped} were already under it",
            report.skipped,
        )
        typer.echo(
            done.format(
                sessions=n_sessions(report.sessions),
                entries=n_entries(report.entries),
                resumed=report.resumed,
                key_id=report.new_key_id,
                skipped=report.skipped,
            )
        )
        for failure in report.failed:
            typer.echo(_("not re-encrypted: {failure}").format(failure=failure), err=True)
        if new is not None and not report.failed:
            now = _("now set {variable} (or the key file) to the new key")
            typer.echo(now.format(variable="FLOWER_ENCRYPTION_KEY"), err=True)
    if report.failed:
        raise typer.Exit(1)


def attach(app: typer.Typer) -> None:
    app.command("keygen")(keygen)
    app.command("rekey")(rekey)
