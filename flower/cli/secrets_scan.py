"""``flower sessions scan``: where secrets appear in stored transcripts.

Reports the session, the entry uuid, the kind of secret and the field it is in;
never the secret itself. Exit code 1 when anything is found, so it can gate CI.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

import typer

from flower.cli.lazy import command_help
from flower.core.i18n import N_

if TYPE_CHECKING:
    from flower.core.protocols import SessionStoreBase
    from flower.core.records import SessionKey


@dataclass(frozen=True)
class Finding:
    project_key: str
    session_id: str
    subpath: str | None
    uuid: str | None
    kind: str
    field: str


def _strings(value: Any, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(v, f"{path}.{k}" if path else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _strings(v, f"{path}[{i}]")


def scan_transcript(store: SessionStoreBase, key: SessionKey) -> Iterator[Finding]:
    from flower_plugins.secret_shapes import find_secrets

    for entry in store.iter_entries(key):
        for path, text in _strings(entry, ""):
            for kind in dict.fromkeys(kind for kind, _, _ in find_secrets(text)):
                yield Finding(
                    key.project_key, key.session_id, key.subpath, entry.get("uuid"), kind, path
                )


def scan_session(store: SessionStoreBase, key: SessionKey) -> Iterator[Finding]:
    yield from scan_transcript(store, key)
    try:
        subpaths = store.list_subkeys(key)
    except NotImplementedError:
        subpaths = []
    for sub in subpaths:
        yield from scan_transcript(store, key.child(sub))


def _all_sessions(store: SessionStoreBase) -> Iterator[SessionKey]:
    from flower.core.records import SessionKey

    for project in store.list_projects():
        for info in store.list_sessions(project):
            yield SessionKey(project, info.session_id)


@command_help(N_("Report where secrets (API keys, tokens, private keys, URL passwords) appear."))
def scan(
    ctx: typer.Context,
    session_id: Annotated[
        str | None, typer.Argument(metavar="[ID]", help=N_("One session (default: all)."))
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help=N_("Machine-readable output."))] = False,
) -> None:
    from flower.cli.context import opened_store
    from flower.cli.output import n_sessions, print_json, print_table
    from flower.cli.session_ids import find_key
    from flower.core.i18n import _

    with opened_store(ctx, read_only=True) as (store, where):
        keys = [find_key(store, session_id, where)] if session_id else list(_all_sessions(store))
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
