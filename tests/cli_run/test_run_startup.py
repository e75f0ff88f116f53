"""Start-up stays light: ``--help`` and ``status`` do not load the engine's libraries.

What typer loads to run any command (pydantic, with typer >= 0.28) is left out of the count.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_run_helpers import REQUEST, Flower

from tests.cli.import_probe import imported_modules, typer_own_modules

ENGINE = ("anthropic", "httpx", "pydantic", "rich")
DIALECTS = "sqlalchemy.dialects"


def heavy(modules: set[str], prefixes: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in prefixes or m.startswith(DIALECTS))


@pytest.mark.parametrize("args", [["--help"], ["status"], ["status", "--json"], ["run", "--help"]])
def test_help_and_status_in_a_fresh_directory_load_nothing_heavy(
    args: list[str], in_tmp: Path
) -> None:
    modules = imported_modules(args, in_tmp) - typer_own_modules()
    assert heavy(modules, (*ENGINE, "sqlalchemy")) == []
    assert "flower.runtime.engine" not in modules and "flower.workflow.live" not in modules
    assert {"http.client", "ssl", "alembic"}.isdisjoint(modules)


def test_status_in_a_used_directory_loads_the_store_but_not_the_engine(
    flower: Flower, ws: Path
) -> None:
    assert flower("--yes", REQUEST).returncode == 0
    modules = imported_modules(["status"], ws) - typer_own_modules()
    assert [m for m in modules if m.split(".")[0] in ENGINE] == []
    assert "flower.runtime.engine" not in modules
    # the default SQLite store: its dialect only, never PostgreSQL's or psycopg
    assert "sqlalchemy.dialects.sqlite" in modules
    assert [m for m in modules if "postgresql" in m or m.split(".")[0] == "psycopg"] == []
