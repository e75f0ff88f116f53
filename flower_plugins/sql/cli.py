"""``flower db upgrade`` and ``flower db current``: the SQL schema from the command line."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from flower_plugins.sql.engine import Database

from flower.core.errors import FlowerError
from flower.core.i18n import N_, _

UrlOption = Annotated[
    str | None,
    typer.Option("--url", help=N_("Database URL; default: the configured sessions URL.")),
]


STATUS_NAMES = {
    "up to date": N_("up to date"),
    "behind": N_("behind"),
    "ahead": N_("ahead"),
    "empty": N_("empty"),
}
"""How ``flower db current`` shows a schema status (``--json`` keeps the status as it is)."""


class NotSqlError(FlowerError):
    """The configured store has no SQL schema to manage."""

    exit_code = 2


def resolve_url(ctx: typer.Context, url: str | None) -> str:
    """``--url``, else the session store the configuration (global options included:
    ``flower --sessions-url URL db upgrade``) names."""
    if url:
        return url
    from flower.core.config import default_store_url
    from flower.plugin import command_settings

    settings = command_settings(ctx)
    configured = default_store_url(settings)
    if configured is None or not configured.startswith(("sqlite", "postgres")):
        raise NotSqlError(
            _(
                "the sessions backend {backend} has no SQL schema; "
                "pass --url sqlite:///... or --url postgresql+psycopg://..."
            ).format(backend=repr(settings.sessions.backend))
        )
    return configured


def _open(url: str) -> Database:
    from flower_plugins.sql.engine import open_database

    return open_database(url)


def build_db_app() -> typer.Typer:
    app = typer.Typer(
        help=N_("Schema of the SQL session stores (SQLite, PostgreSQL)."), no_args_is_help=True
    )

    @app.command(
        help=N_("Upgrade the schema to this flower's newest revision (safe to run concurrently).")
    )
    def upgrade(ctx: typer.Context, url: UrlOption = None) -> None:
        from flower_plugins.sql.migrate import upgrade as run_upgrade

        db = _open(resolve_url(ctx, url))
        try:
            before, after = run_upgrade(db)
        finally:
            db.close()
        if before.current == after.current:
            typer.echo(
                _("{url}: already at {revision}").format(url=db.safe_url, revision=after.current)
            )
        elif before.current is None:
            typer.echo(
                _("{url}: upgraded empty -> {revision}").format(
                    url=db.safe_url, revision=after.current
                )
            )
        else:
            typer.echo(
                _("{url}: upgraded {before} -> {revision}").format(
                    url=db.safe_url, before=before.current, revision=after.current
                )
            )

    @app.command(
        help=N_(
            "Show the database's schema revision and whether it is up to date (a SQLite "
            "file that does not exist yet is reported empty, not created)."
        )
    )
    def current(
        ctx: typer.Context,
        url: UrlOption = None,
        as_json: Annotated[bool, typer.Option("--json", help=N_("Print JSON."))] = False,
    ) -> None:
        from flower.core.config import sqlite_file
        from flower_plugins.sql.engine import redact
        from flower_plugins.sql.migrate import SchemaState, read_state
        from flower_plugins.sql.schema import HEAD_REVISION

        target = resolve_url(ctx, url)
        database = sqlite_file(target)
        if database is not None and not database.exists():
            state, shown = SchemaState(None, HEAD_REVISION, "empty"), redact(target)
        else:
            db = _open(target)
            try:
                state = read_state(db)
            finally:
                db.close()
            shown = db.safe_url
        if as_json:
            import json

            report = {
                "url": shown,
                "current": state.current,
                "head": state.head,
                "status": state.status,
            }
            typer.echo(json.dumps(report))
        else:
            if state.current is None:
                typer.echo(
                    _("{url}: empty, no schema yet (head {head})").format(
                        url=shown, head=state.head
                    )
                )
            else:
                status = STATUS_NAMES.get(state.status)
                typer.echo(
                    _("{url}: {revision} ({status}; head {head})").format(
                        url=shown,
                        revision=state.current,
                        status=_(status) if status else state.status,
                        head=state.head,
                    )
                )

    return app
