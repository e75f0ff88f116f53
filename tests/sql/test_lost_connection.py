"""Terminated Postgres connections are retried quietly: no driver noise, one warning."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.sql.conftest import migrated

# Every store operation after a pg_terminate_backend of the store's own connections,
# in a fresh interpreter so that stderr is exactly what a user would see.
KILLED_BETWEEN_CALLS = """
import os, psycopg
from flower.core.records import SessionKey
from flower_plugins.sql.engine import open_database
from flower_plugins.sql.store import SqlSessionStore

url, admin, app = os.environ["STORE_URL"], os.environ["ADMIN_DSN"], os.environ["APP"]

def terminate():
    with psycopg.connect(admin, autocommit=True) as conn:
        killed = conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE pid <> pg_backend_pid() AND application_name = %s", (app,)
        ).fetchall()
    assert killed, "nothing to terminate"

store = SqlSessionStore(open_database(url))
key = SessionKey("p", "s")
uuids = []
for n in range(4):
    uuids.append(str(n))
    store.append(key, [{"type": "user", "uuid": str(n)}])
    terminate()
    assert [e["uuid"] for e in store.load(key)] == uuids
    terminate()
    assert store.exists(key) and store.last_usage(key) is None
    terminate()
    assert [i.session_id for i in store.list_sessions("p")] == ["s"]
    terminate()
store.close()
print("all kept")
"""


def test_terminated_connections_leave_one_warning_line_and_no_driver_noise(pg_url: str) -> None:
    schema = pg_url.rsplit("search_path%3D", 1)[1]
    url = migrated(pg_url) + f"&application_name={schema}"
    admin = url.split("?", 1)[0].replace("postgresql+psycopg://", "postgresql://", 1)
    env = {**os.environ, "STORE_URL": url, "ADMIN_DSN": admin, "APP": schema}
    done = subprocess.run(
        [sys.executable, "-c", KILLED_BETWEEN_CALLS],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "all kept\n"
    assert "psycopg" not in done.stderr and "Pipeline" not in done.stderr
    assert "Traceback" not in done.stderr
    # Python's own warning display: the message line, then the source line.
    assert done.stderr.count(": ConnectionLostWarning:") == 1, done.stderr
    assert "the connection to PostgreSQL was lost" in done.stderr
