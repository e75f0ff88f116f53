"""Every command that takes a session id takes a unique prefix of it, through one resolver."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from cli_helpers import Cli, transcript

from flower.core.records import SessionKey
from flower.stores.open import open_session_store

# the expected text below is flower's English output (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("english")

FIRST = SessionKey("-work-alpha", "71a21bd9-0d7e-4c6b-9b1e-2f0c1e1f3a10")
SECOND = SessionKey("-work-beta", "71a2ffff-1111-4c6b-9b1e-2f0c1e1f3a10")
OTHER = SessionKey("-work-alpha", "8d0f6d8e-2222-4c6b-9b1e-2f0c1e1f3a10")


@pytest.fixture
def ids(store_url: str) -> None:
    now = int(time.time() * 1000)
    with open_session_store(store_url) as store:
        for age, key in enumerate((FIRST, SECOND, OTHER)):
            store.append(key, transcript(key.session_id, "/work", 1, prefix=key.session_id[:4]))
            store.set_modified(key, now - age * 60_000)


@pytest.mark.usefixtures("ids")
def test_a_unique_prefix_is_the_whole_id_in_every_reading_command(cli: Cli) -> None:
    shown = cli("sessions", "show", "71a21bd9", "--json")
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["session_id"] == FIRST.session_id
    exported = cli("sessions", "export", "8d0f")
    assert exported.exit_code == 0, exported.output
    assert {json.loads(line)["sessionId"] for line in exported.stdout.splitlines()} == {
        OTHER.session_id
    }
    stats = cli("sessions", "stats", "71a2f", "--json")
    assert stats.exit_code == 0, stats.output
    assert f"session {SECOND.session_id}" in cli("sessions", "stats", "71a2f").stdout
    assert cli("sessions", "scan", "71a21").exit_code == 0
    pruned = cli("prune", "71a2ff", "--json")
    assert pruned.exit_code == 0, pruned.output
    assert json.loads(pruned.stdout)["session_id"] == SECOND.session_id
    in_project = cli("sessions", "show", "71a2", "--project", "-work-beta", "--json")
    assert json.loads(in_project.stdout)["session_id"] == SECOND.session_id


@pytest.mark.usefixtures("ids")
def test_an_ambiguous_prefix_lists_the_candidates(cli: Cli, store_url: str) -> None:
    for argv in (
        ["sessions", "show", "71a2"],
        ["sessions", "export", "71a2"],
        ["sessions", "rm", "--yes", "71a2"],
        ["prune", "71a2"],
    ):
        done = cli(*argv)
        assert done.exit_code == 2, (argv, done.output)
        lines = done.stderr.splitlines()
        assert lines[0] == (
            f"flower: error: session id prefix 71a2 is ambiguous in {store_url}: it starts 2 "
            "session ids; give more of the id. The candidates, newest first:"
        )
        assert lines[1].startswith(f"  {FIRST.session_id}  ") and lines[1].endswith("-work-alpha")
        assert lines[2].startswith(f"  {SECOND.session_id}  ") and lines[2].endswith("-work-beta")
    with open_session_store(store_url) as store:
        assert store.exists(FIRST) and store.exists(SECOND)  # rm deleted nothing


@pytest.mark.usefixtures("ids")
def test_an_id_in_two_projects_is_one_candidate(cli: Cli, store_url: str) -> None:
    elsewhere = SessionKey("-work-gamma", FIRST.session_id)  # copied there, long ago
    with open_session_store(store_url) as store:
        store.append(elsewhere, transcript(FIRST.session_id, "/work", 1, prefix="71a2"))
        store.set_modified(elsewhere, int(time.time() * 1000) - 3_600_000)
    lines = cli("sessions", "show", "71a2").stderr.splitlines()
    assert "it starts 2 session ids" in lines[0]
    assert len(lines) == 3  # as many candidates as ids
    assert lines[1].startswith(f"  {FIRST.session_id}  ")
    assert lines[1].endswith("-work-alpha, -work-gamma")  # where it was written last first
    assert lines[2].startswith(f"  {SECOND.session_id}  ")


@pytest.mark.usefixtures("ids")
def test_rm_takes_a_prefix_and_a_short_or_unknown_one_is_no_session(
    cli: Cli, store_url: str
) -> None:
    short = cli("sessions", "show", "8d0")  # shorter than 4: never a prefix
    assert short.exit_code == 1 and "no session 8d0 in" in short.stderr
    assert cli("sessions", "show", "8d0x").exit_code == 1
    done = cli("sessions", "rm", "--yes", "8d0f6d")
    assert done.exit_code == 0, done.output
    assert f"deleted session {OTHER.session_id}" in done.stdout
    with open_session_store(store_url) as store:
        assert not store.exists(OTHER) and store.exists(FIRST)


@pytest.mark.usefixtures("ids")
def test_copy_session_takes_a_prefix(cli: Cli, store_url: str, in_tmp: Path) -> None:
    target = f"sqlite:///{in_tmp / 'copy.db'}"
    done = cli("sessions", "copy", "--from", store_url, "--to", target, "--session", "71a21")
    assert done.exit_code == 0, done.output
    with open_session_store(target) as store:
        assert store.list_projects() == ["-work-alpha"]
        assert [i.session_id for i in store.list_sessions("-work-alpha")] == [FIRST.session_id]
    ambiguous = cli("sessions", "copy", "--from", store_url, "--to", target, "--session", "71a2")
    assert ambiguous.exit_code == 2 and "is ambiguous" in ambiguous.stderr
