"""``flower db upgrade`` and ``flower db current``: the SQL schema from the command line."""

from __future__ import annotations

import json
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


def resolve_url(url: str | None) -> str:
    if url:
        return url
    from flower.core.config import load_settings

    settings = load_settings().settings
    configured = settings.sessions_url()
    if not configured.startswith(("sqlite", "postgres")):
        raise NotSqlError(
            f"the sessions backend {settings.sessions.backend!r} has no SQL schema; "
            "pass --url sqlite:///... or --url postgresql+psycopg://..."
        )
    return configured


def _open(url: str | None) -> Database:
    from flower_plugins.sql.engine import open_database

    return open_database(resolve_url(url))


def build_db_app() -> typer.Typer:
    app = typer.Typer(
        help="Schema of the SQL session stores (SQLite, PostgreSQL).", no_args_is_help=True
    )

    @app.command()
    def upgrade(url: UrlOption = None) -> None:
        """Upgrade the schema to this flower's newest revision (safe to run concurrently)."""
        from flower_plugins.sql.migrate import upgrade as run_upgrade

        db = _open(url)
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
        url: UrlOption = None,
        as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    ) -> None:
        """Show the database's schema revision and whether it is up to date."""
        from flower_plugins.sql.migrate import read_state

        db = _open(url)
        try:
            state = read_state(db)
        finally:
            db.close()
        if as_json:
            report = {
                "url": db.safe_url,
                "current": state.current,
                "head": state.head,
                "status": state.status,
            }
            typer.echo(json.dumps(report))
        else:
            typer.echo(
                f"{db.safe_url}: {state.current or 'empty'} ({state.status}; head {state.head})"
            )

    return app
