"""``flower sessions fork``, and forks as ``sessions list`` and ``sessions show`` show them."""

from __future__ import annotations

import json

import pytest
from cli_helpers import Cli

from flower.core.records import SessionKey
from flower.stores.open import open_session_store

# the expected text below is flower's English output (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("english")


def _load(url: str, key: SessionKey) -> list[dict] | None:
    with open_session_store(url) as store:
        return store.load(key)


def test_fork_prints_the_new_id_and_leaves_the_source(
    cli: Cli, seeded: dict[str, SessionKey], store_url: str
) -> None:
    before = _load(store_url, seeded["s3"])
    result = cli("sessions", "fork", "s3", "--at", "s3a0")
    assert result.exit_code == 0, result.output
    new_id = result.stdout.strip()
    copied = _load(store_url, SessionKey("-work-beta", new_id)) or []
    origins = [e["forkedFrom"]["messageUuid"] for e in copied if "forkedFrom" in e]
    assert origins == ["s3u0", "s3a0"]
    assert _load(store_url, seeded["s3"]) == before


def test_fork_turns_back_and_json(cli: Cli, seeded: dict[str, SessionKey], store_url: str) -> None:
    result = cli("sessions", "fork", "s3", "--turns-back", "1", "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["forked_from"] == {"session_id": "s3", "message_uuid": "s3r0"}
    copied = _load(store_url, SessionKey("-work-beta", out["session_id"])) or []
    assert [e["forkedFrom"]["messageUuid"] for e in copied if "forkedFrom" in e] == [
        "s3u0",
        "s3a0",
        "s3r0",
    ]
    leaf = json.loads(cli("sessions", "fork", "s3", "--json").stdout)
    assert leaf["forked_from"]["message_uuid"] == "s3r1"


def test_fork_bad_input_is_a_usage_error_writing_nothing(
    cli: Cli, seeded: dict[str, SessionKey]
) -> None:
    for args, said in [
        (("--at", "s1a0"), "is not on the active chain of session s3"),
        (("--turns-back", "2"), "session s3 has 2 user turn(s): it can go back at most 1"),
        (("--at", "s3a0", "--turns-back", "1"), "pick one"),
    ]:
        result = cli("sessions", "fork", "s3", *args)
        assert result.exit_code == 2, result.output
        assert said in result.stderr
    rows = json.loads(cli("sessions", "list", "--json").stdout)
    assert len(rows) == 3


def test_list_and_show_say_where_forks_are(cli: Cli, seeded: dict[str, SessionKey]) -> None:
    new_id = cli("sessions", "fork", "s3", "--at", "s3a0").stdout.strip()
    listed = json.loads(cli("sessions", "list", "--forks", "--json").stdout)
    rows = {r["session_id"]: r for r in listed}
    assert rows[new_id]["forked_from"] == {"session_id": "s3", "message_uuid": "s3a0"}
    assert rows["s3"]["forked_from"] is None
    table = cli("sessions", "list", "--forks").stdout
    assert "FORKED FROM" in table
    assert any(new_id in line and "s3" in line.replace(new_id, "") for line in table.splitlines())
    plain = cli("sessions", "list")  # reads no transcript: no FORKED FROM
    assert "FORKED FROM" not in plain.stdout and new_id in plain.stdout
    assert all("forked_from" not in r for r in json.loads(cli("sessions", "list", "--json").stdout))
    shown = cli("sessions", "show", "s3").stdout.splitlines()
    mark = shown.index(f"fork: session {new_id} was forked here")
    assert shown[mark - 2 : mark] == [
        "assistant: looking 0",
        'tool call: Bash {"command":"ls -la"}',
    ]
    forked = cli("sessions", "show", new_id).stdout
    assert "forked from s3 at s3a0" in forked
