"""A throwaway PostgreSQL schema per test, on the server at ``FLOWER_TEST_PG``.

Default server: ``postgresql+psycopg://postgres@127.0.0.1:5432/test``. When it is
unreachable the test is skipped, unless ``FLOWER_REQUIRE_POSTGRES=1`` (CI), where it
fails: a missing server must never pass silently.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import quote

DEFAULT_SERVER = "postgresql+psycopg://postgres@127.0.0.1:5432/test"


def server_url() -> str:
    return os.environ.get("FLOWER_TEST_PG", DEFAULT_SERVER)


def _libpq_dsn(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://", 1)


class PostgresUnavailable(RuntimeError):
    pass


@contextmanager
def temporary_schema(prefix: str = "flower_test") -> Iterator[str]:
    """Create a fresh schema, yield a SQLAlchemy URL whose search_path is that schema."""
    import psycopg

    base = server_url()
    schema = f"{prefix}_{uuid.uuid4().hex[:12]}"
    try:
        with psycopg.connect(_libpq_dsn(base), autocommit=True, connect_timeout=5) as conn:
            conn.execute(f'CREATE SCHEMA "{schema}"')
    except psycopg.OperationalError as exc:
        raise PostgresUnavailable(f"PostgreSQL at {base} is unreachable: {exc}") from exc
    sep = "&" if "?" in base else "?"
    url = f"{base}{sep}options={quote(f'-csearch_path={schema}')}"
    try:
        yield url
    finally:
        with psycopg.connect(_libpq_dsn(base), autocommit=True) as conn:
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE pid <> pg_backend_pid() AND query LIKE %s",
                (f"%{schema}%",),
            )
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def require_postgres() -> bool:
    return os.environ.get("FLOWER_REQUIRE_POSTGRES") == "1"
