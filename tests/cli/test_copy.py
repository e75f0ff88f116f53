"""``flower sessions copy`` and flower.stores.copy: any backend to any other."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from cli_helpers import Cli, transcript
from typer.testing import CliRunner

from flower.cli.main import build_app
from flower.core.protocols import SessionStoreBase
from flower.core.records import Entry, SessionInfo, SessionKey
from flower.stores.copy import copy_sessions, select_sessions
from flower.stores.open import open_session_store

# the expected text below is flower's English output (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("english")


def seed(url: str, keys: Sequence[SessionKey], turns: int = 3) -> None:
    with open_session_store(url) as store:
        for key in keys:
            store.append(key, transcript(key.session_id, "/w", turns=turns, prefix=key.session_id))


def load(url: str, key: SessionKey) -> list[Entry] | None:
    with open_session_store(url) as store:
        return store.load(key)


def copy(*args: str) -> tuple[int, dict, str]:
    result = CliRunner().invoke(build_app(), ["sessions", "copy", *args, "--json"])
    data = json.loads(result.stdout) if result.stdout.strip() else {}
    return result.exit_code, data, result.stderr


KEYS = [SessionKey("-p-one", "c1"), SessionKey("-p-one", "c2"), SessionKey("-p-two", "c3")]


@pytest.fixture
def jsonfs_url(in_tmp: Path) -> str:
    return f"jsonfs:///{in_tmp / 'claude-projects'}"


@pytest.fixture
def sqlite_url(in_tmp: Path) -> str:
    return f"sqlite:///{in_tmp / 'copy.db'}"


def test_jsonfs_to_sqlite_everything_then_rerun_adds_nothing(
    jsonfs_url: str, sqlite_url: str
) -> None:
    seed(jsonfs_url, KEYS)
    with open_session_store(jsonfs_url) as store:
        store.append(KEYS[0].child("subagents/agent-1"), transcript("c1", "/w", 1, prefix="sub"))
    code, data, _ = copy("--from", jsonfs_url, "--to", sqlite_url, "--verify")
    assert code == 0
    assert data["sessions"] == 3 and data["transcripts"] == 4
    assert data["entries_written"] == 3 * 9 + 3
    assert data["verified"] is True and data["mismatches"] == []
    for key in [*KEYS, KEYS[0].child("subagents/agent-1")]:
        assert load(sqlite_url, key) == load(jsonfs_url, key)

    code, data, _ = copy("--from", jsonfs_url, "--to", sqlite_url, "--verify")
    assert code == 0
    assert data["entries_written"] == 0 and data["entries_present"] == 30
    assert load(sqlite_url, KEYS[0]) == load(jsonfs_url, KEYS[0])


def test_resumes_an_interrupted_copy(jsonfs_url: str, sqlite_url: str) -> None:
    seed(jsonfs_url, KEYS[:1])
    source = load(jsonfs_url, KEYS[0]) or []
    with open_session_store(sqlite_url) as target:
        target.append(KEYS[0], source[:4])  # as if killed after the first batches
    code, data, _ = copy("--from", jsonfs_url, "--to", sqlite_url, "--verify")
    assert code == 0
    assert data["entries_written"] == len(source) - 4
    assert load(sqlite_url, KEYS[0]) == source


def test_project_and_session_filters(jsonfs_url: str, sqlite_url: str) -> None:
    seed(jsonfs_url, KEYS)
    code, data, _ = copy("--from", jsonfs_url, "--to", sqlite_url, "--project", "-p-one")
    assert code == 0 and data["sessions"] == 2
    assert load(sqlite_url, KEYS[2]) is None
    code, data, _ = copy("--from", jsonfs_url, "--to", sqlite_url, "--session", "c3")
    assert code == 0 and data["sessions"] == 1
    assert load(sqlite_url, KEYS[2]) == load(jsonfs_url, KEYS[2])


def test_unknown_session_is_a_clear_error(jsonfs_url: str, sqlite_url: str) -> None:
    seed(jsonfs_url, KEYS[:1])
    code, _, stderr = copy("--from", jsonfs_url, "--to", sqlite_url, "--session", "nope")
    assert code == 1
    assert stderr == f"flower: error: no session nope in {jsonfs_url}\n"


def test_conflicting_uuid_is_reported_and_not_overwritten(jsonfs_url: str, sqlite_url: str) -> None:
    seed(jsonfs_url, KEYS[:1])
    source = load(jsonfs_url, KEYS[0]) or []
    impostor = {**source[1], "message": {"role": "assistant", "content": "something else"}}
    with open_session_store(sqlite_url) as target:
        target.append(KEYS[0], [source[0], impostor])
    result = CliRunner().invoke(
        build_app(), ["sessions", "copy", "--from", jsonfs_url, "--to", sqlite_url]
    )
    assert result.exit_code == 1
    assert "1 conflict" in result.stdout
    assert f"already holds a different entry {source[1]['uuid']} (kept)" in result.stderr
    stored = load(sqlite_url, KEYS[0]) or []
    assert stored[1] == impostor
    assert stored[2:] == source[2:]  # the rest was still copied


def test_verify_reports_a_difference(jsonfs_url: str, sqlite_url: str) -> None:
    seed(jsonfs_url, KEYS[:1])
    with open_session_store(sqlite_url) as target:
        target.append(
            KEYS[0], [{"type": "user", "uuid": "extra-first", "message": {"content": "x"}}]
        )
    code, data, _ = copy("--from", jsonfs_url, "--to", sqlite_url, "--verify")
    assert code == 1
    assert data["verified"] is False
    assert data["mismatches"][0]["index"] == 0


def test_entries_without_uuid_are_not_doubled(jsonfs_url: str, sqlite_url: str) -> None:
    snapshot = {"type": "file-history-snapshot", "messageId": "m1", "snapshot": {"files": {}}}
    with open_session_store(jsonfs_url) as store:
        store.append(KEYS[0], [*transcript("c1", "/w", 1), snapshot])
    for _ in range(2):
        code, _, _ = copy("--from", jsonfs_url, "--to", sqlite_url)
        assert code == 0
    assert load(sqlite_url, KEYS[0]) == load(jsonfs_url, KEYS[0])


def test_text_output_and_password_masked(jsonfs_url: str, sqlite_url: str) -> None:
    seed(jsonfs_url, KEYS[:1])
    result = CliRunner().invoke(
        build_app(), ["sessions", "copy", "--from", jsonfs_url, "--to", sqlite_url]
    )
    assert result.exit_code == 0
    assert result.stdout.startswith("copied 1 session (1 transcript)")
    bad = "postgresql+psycopg://u:topsecret@127.0.0.1:1/nodb"
    result = CliRunner().invoke(
        build_app(), ["sessions", "copy", "--from", jsonfs_url, "--to", bad]
    )
    assert result.exit_code == 1
    assert "topsecret" not in result.output


@pytest.mark.postgres
def test_sqlite_to_postgres_and_back(sqlite_url: str, pg_url: str, in_tmp: Path) -> None:
    cli = Cli(pg_url)
    upgraded = cli("db", "upgrade", "--url", pg_url)
    assert upgraded.exit_code == 0, upgraded.output
    seed(sqlite_url, KEYS)
    code, data, _ = copy("--from", sqlite_url, "--to", pg_url, "--verify")
    assert code == 0, data
    assert data["entries_written"] == 27 and data["verified"] is True
    listed = json.loads(cli("sessions", "list", "--json").stdout)
    assert sorted(r["session_id"] for r in listed) == ["c1", "c2", "c3"]
    back = f"jsonfs:///{in_tmp / 'back'}"
    code, data, _ = copy("--from", pg_url, "--to", back, "--verify")
    assert code == 0 and data["verified"] is True
    assert load(back, KEYS[1]) == load(sqlite_url, KEYS[1])


# -- streaming: bounded memory whatever the size of the source ------------------


class Generated(SessionStoreBase):
    """A source that makes its entries on the fly and refuses whole-transcript loads."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.key = SessionKey("-big", "big")

    def list_projects(self) -> list[str]:
        return ["-big"]

    def list_sessions(self, project_key: str) -> list[SessionInfo]:
        return [SessionInfo("big", 0)]

    def exists(self, key: SessionKey) -> bool:
        return key == self.key

    def list_subkeys(self, key: SessionKey) -> list[str]:
        return []

    def load(self, key: SessionKey) -> list[Entry] | None:
        raise AssertionError("copy must stream, not load whole transcripts")

    def iter_entries(self, key: SessionKey) -> Iterator[Entry]:
        for i in range(self.count):
            yield {"type": "user", "uuid": f"g{i}", "message": {"content": "x" * 100}}


class Recording(SessionStoreBase):
    def __init__(self) -> None:
        self.batches: list[int] = []
        self.uuids: list[str] = []

    def iter_entries(self, key: SessionKey) -> Iterator[Entry]:
        return iter(())

    def append(self, key: SessionKey, entries: Sequence[Entry]) -> None:
        self.batches.append(len(entries))
        self.uuids.extend(e["uuid"] for e in entries)


def test_copy_streams_in_bounded_batches() -> None:
    source, target = Generated(10_000), Recording()
    reports = []
    report = copy_sessions(
        source, target, select_sessions(source), batch_size=256, progress=reports.append
    )
    assert report.entries_written == 10_000
    assert max(target.batches) == 256 and len(target.batches) == 40
    assert target.uuids == [f"g{i}" for i in range(10_000)]
    assert reports and reports[-1].sessions == 1


def test_progress_bar_on_a_terminal(jsonfs_url: str, sqlite_url: str, in_tmp: Path) -> None:
    import os

    import pexpect

    seed(jsonfs_url, KEYS)
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLOWER_")}
    child = pexpect.spawn(
        sys.executable,
        ["-m", "flower.cli.main", "sessions", "copy", "--from", jsonfs_url, "--to", sqlite_url],
        cwd=str(in_tmp),
        env=env,
        encoding="utf-8",
        timeout=60,
        dimensions=(24, 120),
    )
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, child.before
    assert "copied 3 sessions (3 transcripts)" in child.before
    assert load(sqlite_url, KEYS[2]) == load(jsonfs_url, KEYS[2])


@pytest.mark.parametrize("direction", ["jsonfs->sqlite", "sqlite->jsonfs"])
def test_a_copied_session_keeps_its_age(
    jsonfs_url: str, sqlite_url: str, direction: str, in_tmp: Path
) -> None:
    import time

    source, target = (
        (jsonfs_url, sqlite_url)
        if direction == "jsonfs->sqlite"
        else (
            sqlite_url,
            jsonfs_url,
        )
    )
    seed(source, KEYS)
    month_ago = int(time.time() * 1000) - 30 * 86_400_000
    with open_session_store(source) as store:
        store.set_modified(KEYS[0], month_ago)
    code, _, err = copy("--from", source, "--to", target)
    assert code == 0, err
    with open_session_store(target) as store:
        ages = {info.session_id: info.mtime_ms for info in store.list_sessions("-p-one")}
    assert abs(ages["c1"] - month_ago) <= 1000  # as old as in the source
    assert ages["c2"] > month_ago + 86_400_000
    done = CliRunner().invoke(
        build_app(),
        ["--sessions-url", target, "sessions", "gc", "--older-than", "7d", "--dry-run"],
    )
    assert done.exit_code == 0 and "c1" in done.stdout and "c2" not in done.stdout
