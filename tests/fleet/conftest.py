from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from fleet_helpers import HoldingModel, Workers, fleet_env, fleet_root
from own_postgres import OwnPostgres

from flower.testing.fake_api import FakeMessagesAPI


@pytest.fixture
def model() -> Iterator[HoldingModel]:
    m = HoldingModel()
    yield m
    m.release()


@pytest.fixture
def api(model: HoldingModel) -> Iterator[FakeMessagesAPI]:
    with FakeMessagesAPI(model) as fake:
        yield fake


@pytest.fixture
def database(request: pytest.FixtureRequest) -> Iterator[str | None]:
    """The fleet's database: SQLite under runs/ (the default), or a new Postgres database
    for a test marked ``fleet_helpers.BOTH``."""
    if getattr(request, "param", "sqlite") == "sqlite":
        yield None
        return
    import sqlalchemy as sa

    from flower.testing.postgres import require_postgres, server_url

    base = sa.make_url(server_url())
    admin = sa.create_engine(base, isolation_level="AUTOCOMMIT")
    name = f"fleet_{uuid.uuid4().hex[:10]}"
    try:
        with admin.connect() as conn:
            conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    except sa.exc.OperationalError as exc:  # the suite's rule: a missing server fails in CI
        if require_postgres():
            pytest.fail(f"Postgres is required: {exc}")
        pytest.skip(f"no Postgres at 127.0.0.1:5432: {exc}")
    yield base.set(database=name).render_as_string(hide_password=False)
    with admin.connect() as conn:
        conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


@pytest.fixture
def root(in_tmp: Path, database: str | None) -> Path:
    """The fleet's directory: its pyproject (short takeover for tests) and workspaces."""
    return fleet_root(in_tmp / "fleet", database)


@pytest.fixture
def env(api: FakeMessagesAPI, tmp_path: Path, database: str | None) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    found = fleet_env(api.env(), home)
    if database:  # many hosts: the sessions in the same (empty) Postgres database too
        found["FLOWER_SESSIONS_URL"] = database
    return found


@pytest.fixture
def workers(root: Path, env: dict[str, str]) -> Iterator[Workers]:
    found = Workers(root, env)
    yield found
    found.close()


@pytest.fixture
def own_postgres() -> Iterator[OwnPostgres]:
    """A PostgreSQL server of the test's own, which it may stop, start and restart."""
    # not under tmp_path: its parents are private to root, and the server runs as nobody
    base = Path(tempfile.mkdtemp(prefix="flower-fleet-pg-"))
    try:
        server = OwnPostgres(base)
        yield server
        server.stop()
    finally:
        shutil.rmtree(base, ignore_errors=True)
