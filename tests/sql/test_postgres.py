"""PostgreSQL failures users meet: unreachable, refused, missing, restarted."""

from __future__ import annotations

import psycopg
import pytest

from flower.core.config import Settings
from flower.core.errors import SchemaOutOfDateError, StoreUnavailableError
from flower.core.records import SessionKey
from flower.stores.open import open_session_store
from flower.testing.postgres import server_url
from flower_plugins.sql.engine import ConnectionLostWarning, open_database, redact
from flower_plugins.sql.store import SqlSessionStore
from tests.sql.conftest import migrated

KEY = SessionKey("p", "s")
SECRET = "s3cr3t-Pa55"


def open_url(url: str) -> None:
    open_session_store(url, settings=Settings()).close()


@pytest.mark.usefixtures("english")
def test_unreachable_server_names_host_and_port_never_the_password() -> None:
    url = f"postgresql+psycopg://flower:{SECRET}@127.0.0.1:1/flowerdb"
    with pytest.raises(StoreUnavailableError) as info:
        open_url(url)
    message = str(info.value)
    assert "127.0.0.1:1" in message and "cannot reach PostgreSQL" in message
    assert SECRET not in message and SECRET not in repr(info.value.__cause__ or "")


def test_plain_postgres_scheme_is_accepted_and_redacted() -> None:
    url = f"postgres://flower:{SECRET}@127.0.0.1:1/flowerdb"
    assert SECRET not in redact(url)
    with pytest.raises(StoreUnavailableError, match=r"127\.0\.0\.1:1") as info:
        open_url(url)
    assert SECRET not in str(info.value)


@pytest.mark.usefixtures("english")
def test_wrong_credentials_are_a_clear_error(pg_url: str) -> None:
    url = pg_url.replace("postgres@", f"no_such_role_flower:{SECRET}@", 1)
    with pytest.raises(StoreUnavailableError, match="rejected the credentials") as info:
        open_url(url)
    assert SECRET not in str(info.value)


@pytest.mark.usefixtures("english")
def test_a_missing_database_is_a_clear_error(pg_url: str) -> None:
    url = server_url().rsplit("/", 1)[0] + "/no_such_database_flower"
    with pytest.raises(StoreUnavailableError, match="has no database 'no_such_database_flower'"):
        open_url(url)


@pytest.mark.parametrize("query", ["sslmode=bogus", "no_such_option=1"])
@pytest.mark.usefixtures("english")
def test_a_wrong_connection_option_is_not_called_unreachable(query: str) -> None:
    url = f"{server_url().rsplit('?', 1)[0]}?{query}"
    with pytest.raises(StoreUnavailableError, match="a connection option is wrong") as info:
        open_url(url)
    assert "cannot reach" not in str(info.value)


@pytest.mark.usefixtures("english")
def test_a_host_that_does_not_resolve_is_unreachable() -> None:
    with pytest.raises(StoreUnavailableError, match=r"cannot reach PostgreSQL at nohost\.invalid"):
        open_url(f"postgresql+psycopg://flower:{SECRET}@nohost.invalid/flowerdb")


@pytest.mark.usefixtures("english")
def test_a_port_that_is_not_a_number_is_a_clear_error() -> None:
    url = f"postgresql+psycopg://flower:{SECRET}@127.0.0.1:54x2/flowerdb"
    with pytest.raises(StoreUnavailableError, match="port") as info:
        open_url(url)
    assert "not a valid database URL" in str(info.value)
    assert SECRET not in str(info.value)


def test_an_at_sign_left_unencoded_in_the_password_is_refused_unshown() -> None:
    # Parsed as password 'flower' and host 'SECRET@127.0.0.1': the driver's message
    # would name that host, and with it the rest of the password.
    url = f"postgresql+psycopg://flower:pw@{SECRET}@127.0.0.1:1/flowerdb"
    with pytest.raises(StoreUnavailableError, match="%40") as info:
        open_url(url)
    assert SECRET not in str(info.value)
    assert SECRET not in redact(url)


def test_a_password_given_as_a_query_parameter_is_masked(pg_url: str) -> None:
    url = f"{pg_url}&password={SECRET}&sslpassword={SECRET}"  # libpq reads both
    assert SECRET not in redact(url)
    with pytest.raises(SchemaOutOfDateError, match="flower db upgrade") as info:
        open_url(url)  # the schema is empty: the error names the database
    assert SECRET not in str(info.value)
    db = open_database(url)
    try:
        assert SECRET not in db.safe_url
    finally:
        db.close()


def test_only_psycopg3_is_accepted() -> None:
    with pytest.raises(StoreUnavailableError, match="psycopg 3"):
        open_url("postgresql+psycopg2://u@127.0.0.1/db")


def _terminate_others(application_name: str) -> int:
    """Kill the store's backends, as a server restart or a failover would."""
    dsn = server_url().replace("postgresql+psycopg://", "postgresql://", 1)
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE pid <> pg_backend_pid() AND datname = current_database() "
            "AND application_name = %s",
            (application_name,),
        ).fetchall()
    return len(rows)


def test_a_dropped_connection_reconnects_and_doubles_nothing(pg_url: str) -> None:
    schema = pg_url.rsplit("search_path%3D", 1)[1]
    url = migrated(pg_url) + f"&application_name={schema}"
    store = SqlSessionStore(open_database(url))
    try:
        store.append(KEY, [{"type": "user", "uuid": "1"}])
        assert store.load(KEY) == [{"type": "user", "uuid": "1"}]
        assert _terminate_others(schema) >= 1
        # The hot connection is dead: the append notices, reconnects, retries once,
        # and says so (once per process outside pytest, which records every one).
        with pytest.warns(ConnectionLostWarning, match="reconnected and retried"):
            store.append(KEY, [{"type": "user", "uuid": "2"}])
            assert _terminate_others(schema) >= 1
            store.append(KEY, [{"type": "user", "uuid": "2"}, {"type": "user", "uuid": "3"}])
            assert _terminate_others(schema) >= 1
            # Pooled read connections are pinged before use.
            assert [e["uuid"] for e in store.load(KEY) or []] == ["1", "2", "3"]
            assert store.exists(KEY)
    finally:
        store.close()


def test_listings_are_in_code_point_order_whatever_the_server_collation(pg_url: str) -> None:
    from flower.testing.postgres import _libpq_dsn

    url = migrated(pg_url)
    schema = url.rsplit("search_path%3D", 1)[-1]
    with psycopg.connect(_libpq_dsn(server_url()), autocommit=True) as conn:
        for column in ("project_key", "session_id", "subpath"):
            # a server whose collation ignores case and punctuation, as en-US does
            conn.execute(
                f'ALTER TABLE "{schema}".flower_sessions ALTER COLUMN {column} '
                'TYPE text COLLATE "en-US-x-icu"'
            )
    names = ["b-two", "B_one", "a", "Zed", "_under", "-dash", "b.x", "ba"]
    store = open_session_store(url, settings=Settings())
    try:
        store.append(SessionKey("p", "s"), [{"type": "system", "uuid": "main"}])
        for name in names:
            store.append(SessionKey(name, "s"), [{"type": "system", "uuid": f"u-{name}"}])
            store.set_modified(SessionKey(name, "s"), 1_000)
            store.append(SessionKey("p", name), [{"type": "system", "uuid": f"v-{name}"}])
            store.set_modified(SessionKey("p", name), 1_000)
            store.append(
                SessionKey("p", "s", subpath=f"agents/{name}"),
                [{"type": "system", "uuid": f"w-{name}"}],
            )
        assert store.list_projects() == sorted([*names, "p"])
        assert [i.session_id for i in store.list_sessions("p")] == ["s", *sorted(names)]
        assert store.list_subkeys(SessionKey("p", "s")) == sorted(f"agents/{n}" for n in names)
        # the same session id in several projects, all equally new: the first by code point
        assert store.find_session("s") == SessionKey("p", "s")  # the newest: written last
        store.set_modified(SessionKey("p", "s"), 1_000)
        assert store.find_session("s") == SessionKey(sorted([*names, "p"])[0], "s")
    finally:
        store.close()
