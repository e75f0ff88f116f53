"""The sql plugin registers through the same path as third-party plugins, cheaply."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from flower.core.config import Settings
from flower.core.errors import ConfigError
from flower.core.plugins import get_registry
from flower.stores.open import open_session_store
from flower_plugins.sql.store import SqlSessionStore


def test_backends_and_schemes_are_registered() -> None:
    registry = get_registry()
    for kind in ("session_stores", "lineage_stores"):
        assert registry.get(kind, "sqlite").schemes == ("sqlite",)
        assert registry.get(kind, "postgres").schemes == ("postgresql", "postgres")
        assert registry.by_scheme(kind, "postgresql+psycopg").name == "postgres"


def test_opening_by_url_gives_the_sql_store(tmp_path: Path) -> None:
    with open_session_store(f"sqlite:///{tmp_path}/s.db", settings=Settings()) as store:
        assert isinstance(store, SqlSessionStore)


def test_postgres_backend_without_a_postgres_url_says_what_to_set(in_tmp: Path) -> None:
    from flower.core.config import SessionsConfig

    settings = Settings(sessions=SessionsConfig(backend="postgres"))
    with pytest.raises(ConfigError, match="FLOWER_SESSIONS_URL"):  # a setting to fix: exit 2
        open_session_store(settings=settings)


def test_importing_the_plugin_does_not_import_sqlalchemy() -> None:
    code = (
        "import sys, flower_plugins.sql; "
        "print(sorted(m for m in ('sqlalchemy', 'alembic', 'psycopg') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
