"""``flower sessions scan``: where secrets appear in stored transcripts.

Reports the session, the entry uuid, the kind of secret and the field it is in;
never the secret itself (the scan is :mod:`flower.stores.secrets`'s). Exit code 1 when
anything is found, so it can gate CI.
"""

from __future__ import annotations

from typing import Annotated

import typer

from flower.cli.lazy import command_help
from flower.core.i18n import N_


@command_help(N_("Report where secrets (API keys, tokens, private keys, URL passwords) appear."))
def scan(
    ctx: typer.Context,
    session_id: Annotated[
        str | None, typer.Argument(metavar="[ID]", help=N_("One session (default: all)."))
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help=N_("Machine-readable output."))] = False,
) -> None:
    from flower.cli.context import opened_store
    from flower.cli.output import print_json, print_table
    from flower.cli.session_ids import find_key
    from flower.core.display import n_sessions
    from flower.core.i18n import _
    from flower.stores.copy import select_sessions
    from flower.stores.secrets import scan_session

    with opened_store(ctx, read_only=True) as (store, where):
        keys = [find_key(store, session_id, where)] if session_id else select_sessions(store)
        findings = [f for key in keys for f in scan_session(store, key)]
    if as_json:
        print_json([f.__dict__ for f in findings])
    elif findings:
        print_table(
            [_("SESSION"), _("ENTRY UUID"), _("KIND"), _("FIELD")],
            [
                (
                    f.session_id + (f"/{f.subpath}" if f.subpath else ""),
                    f.uuid or "-",
                    f.kind,
                    f.field,
                )
                for f in findings
            ],
        )
    else:
        nothing = _("no secrets found in {sessions} of {store}")
        typer.echo(nothing.format(sessions=n_sessions(len(keys)), store=where), err=True)
    if findings:
        raise typer.Exit(1)


def attach(app: typer.Typer) -> None:
    app.command("scan")(scan)
