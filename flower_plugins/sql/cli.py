"""``flower db upgrade`` and ``flower db current``: the SQL schema from the command line."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from flower_plugins.sql.engine import Database

from flower.core.errors import FlowerError

UrlOption = Annotated[
    str | None,
    typer.Option("--url", help="Database URL; default: the configured sessions URL."),
]


class NotSqlError(FlowerError):
    """The configured store has no SQL schema to manage."""

    exit_code = 2


def resolve_url(ctx: typer.Context, url: str | None) -> str:
    """``--url``, else the session store the configuration (global options included:
    ``flower --sessions-url URL db upgrade``) names."""
    if url:
        return url
    from flower.cli.context import get_settings
    from flower.core.config import default_store_url

    settings = get_settings(ctx)
    configured = default_store_url(settings)
    if configured is None or not configured.startswith(("sqlite", "postgres")):
        raise NotSqlError(
            f"the sessions backend {settings.sessions.backend!r} has no SQL schema; "
            "pass --url sqlite:///... or --url postgresql+psycopg://..."
        )
    return configured


def _open(url: str) -> Database:
    from flower_plugins.sql.engine import open_database

    return open_database(url)


def build_db_app() -> typer.Typer:
    app = typer.Typer(
        help="Schema of the SQL session stores (SQLite, PostgreSQL).", no_args_is_help=True
    )

    @app.command()
    def upgrade(ctx: typer.Context, url: UrlOption = None) -> None:
        """Upgrade the schema to this flower's newest revision (safe to run concurrently)."""
        from flower_plugins.sql.migrate import upgrade as run_upgrade

        db = _open(resolve_url(ctx, url))
        try:
            before, after = run_upgrade(db)
        finally:
            db.close()
        if before.current == after.current:
            typer.echo(f"{db.safe_url}: already at {after.current}")
        else:
            typer.echo(f"{db.safe_url}: upgraded {before.current or 'empty'} -> {after.current}")

    @app.command()
    def current(
        ctx: typer.Context,
        url: UrlOption = None,
        as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    ) -> None:
        """Show the database's schema revision and whether it is up to date (a SQLite
        file that does not exist yet is reported empty, not created)."""
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
                typer.echo(f"{shown}: empty, no schema yet (head {state.head})")
            else:
                typer.echo(f"{shown}: {state.current} ({state.status}; head {state.head})")

    return app
