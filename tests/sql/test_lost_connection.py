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


# Reads while another connection terminates the store's connections every 50-250 ms:
# a load or a streamed read that loses its connection reads again on a new one.
READS_UNDER_TERMINATIONS = """
import os, random, threading, time, psycopg
from flower.core.records import SessionKey
from flower_plugins.sql.engine import open_database
from flower_plugins.sql.store import STREAM_CHUNK, SqlSessionStore

url, admin, app = os.environ["STORE_URL"], os.environ["ADMIN_DSN"], os.environ["APP"]

def terminate(conn):
    return len(conn.execute(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
        "WHERE pid <> pg_backend_pid() AND application_name = %s", (app,)
    ).fetchall())

store = SqlSessionStore(open_database(url))
key = SessionKey("p", "s")
count = 2 * STREAM_CHUNK + 500
store.append(key, [{"type": "user", "uuid": str(n), "text": "x" * 200} for n in range(count)])
wanted = [str(n) for n in range(count)]

# one termination between two pages of a stream, at a known place
with psycopg.connect(admin, autocommit=True) as conn:
    stream = store.iter_entries(key)
    got = [next(stream)["uuid"]]
    assert terminate(conn)
    got += [e["uuid"] for e in stream]
    assert got == wanted, len(got)

stop, kills, failed = threading.Event(), [0], {"load": 0, "iter_entries": 0}

def terminator():
    with psycopg.connect(admin, autocommit=True) as conn:
        while not stop.is_set():
            time.sleep(random.uniform(0.05, 0.25))
            kills[0] += terminate(conn)

thread = threading.Thread(target=terminator)
thread.start()
try:
    # at least CALLS rounds, and on until 20 connections were terminated under them (a
    # fast machine reads 150 rounds between fewer terminations); two minutes at most
    calls, deadline = 0, time.monotonic() + 120
    while (calls < int(os.environ["CALLS"]) or kills[0] < 20) and time.monotonic() < deadline:
        calls += 1
        for name, read in (("load", store.load), ("iter_entries", store.iter_entries)):
            try:
                assert [e["uuid"] for e in read(key)] == wanted
            except Exception:
                failed[name] += 1
finally:
    stop.set()
    thread.join()
store.close()
print(f"terminations {kills[0]} failed {failed}")
"""


def test_reads_survive_terminated_connections_without_a_traceback(pg_url: str) -> None:
    schema = pg_url.rsplit("search_path%3D", 1)[1]
    url = migrated(pg_url) + f"&application_name={schema}"
    admin = url.split("?", 1)[0].replace("postgresql+psycopg://", "postgresql://", 1)
    env = {**os.environ, "STORE_URL": url, "ADMIN_DSN": admin, "APP": schema, "CALLS": "150"}
    done = subprocess.run(
        [sys.executable, "-c", READS_UNDER_TERMINATIONS],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    terminations = int(done.stdout.split()[1])
    assert terminations > 10, done.stdout
    assert done.stdout.endswith("failed {'load': 0, 'iter_entries': 0}\n"), done.stdout
    assert "Traceback" not in done.stderr and "psycopg" not in done.stderr, done.stderr
    assert done.stderr.count(": ConnectionLostWarning:") == 1, done.stderr
