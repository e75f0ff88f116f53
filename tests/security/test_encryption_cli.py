"""Encryption at rest through the CLI: a project with ``encrypt = true``, real stores."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from flower.cli.main import build_app
from flower.core.config import Settings
from flower.core.records import SessionKey
from flower.stores.encrypt import CHECK_KEY, EncryptedSessionStore
from flower.stores.keyring import generate_key, parse_keys
from flower.stores.open import open_session_store

# the expected text below is flower's English output (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("english")

KEY = SessionKey("-work-project", "s001")
ENTRIES = [
    {"type": "user", "uuid": "u1", "message": {"role": "user", "content": "the plan"}},
    {"type": "assistant", "uuid": "a1", "parentUuid": "u1", "message": {"content": "ok"}},
]


def flower(*args: str, key: str | None = None) -> Result:
    env = {"FLOWER_ENCRYPTION_KEY": key} if key else {}
    return CliRunner().invoke(build_app(), list(args), env=env)


@pytest.fixture
def project(in_tmp: Path) -> Path:
    (in_tmp / "pyproject.toml").write_text(
        "[tool.flower.sessions]\nencrypt = true\n", encoding="utf-8"
    )
    return in_tmp


def seal_elsewhere(path: Path, key: str) -> str:
    """Another encrypted store holding ``ENTRIES`` under ``key``; its URL."""
    url = f"sqlite:///{path}"
    inner = open_session_store(url, settings=Settings())
    with EncryptedSessionStore(inner, parse_keys(key, "key")) as store:
        store.append(KEY, ENTRIES)
    return url


def raw_load(url: str, key: SessionKey) -> list[dict] | None:
    with open_session_store(url, settings=Settings()) as raw:
        return raw.load(key)


def test_a_wrong_key_reading_does_not_lock_out_the_right_one(project: Path) -> None:
    right = generate_key()
    source = seal_elsewhere(project / "other.db", right)
    target = f"sqlite:///{project}/runs/sessions.db"
    with (
        open_session_store(source, settings=Settings()) as raw,
        open_session_store(target, settings=Settings()) as copy,
    ):
        copy.append(KEY, raw.load(KEY) or [])  # one session copied raw: no key-check record
    wrong = flower("sessions", "show", "s001", key=generate_key())
    assert wrong.exit_code == 2 and wrong.stdout == ""  # no title over an unreadable session
    assert raw_load(target, CHECK_KEY) is None
    shown = flower("sessions", "show", "s001", key=right)
    assert shown.exit_code == 0, shown.output
    assert "the plan" in shown.stdout


def test_sessions_rm_under_a_wrong_key_deletes_nothing(project: Path) -> None:
    right = generate_key()
    url = seal_elsewhere(project / "runs" / "sessions.db", right)
    removed = flower("sessions", "rm", "-y", "s001", key=generate_key())
    assert removed.exit_code == 2
    assert "wrong encryption key" in removed.stderr
    assert len(raw_load(url, KEY) or []) == 2
    assert flower("sessions", "rm", "-y", "s001", key=right).exit_code == 0
    assert raw_load(url, KEY) is None


def copy_into_project(source: str, target: str, key: str) -> tuple[int, dict, str]:
    result = flower(
        "sessions", "copy", "--from", source, "--to", target, "--verify", "--json", key=key
    )
    return result.exit_code, json.loads(result.stdout or "{}"), result.stderr


@pytest.mark.parametrize(
    "spelling", ["sqlite:///runs/sessions.db", "sqlite:///{cwd}/runs/sessions.db"]
)
def test_copy_into_the_configured_store_keeps_sealed_entries_as_they_are(
    project: Path, spelling: str
) -> None:
    right = generate_key()
    source = seal_elsewhere(project / "other.db", right)
    target = spelling.format(cwd=project)
    code, report, err = copy_into_project(source, target, right)
    assert (code, report["entries_written"], report["verified"]) == (0, 2, True), err
    assert raw_load(target, KEY) == raw_load(source, KEY)  # sealed once, as they came
    code, report, err = copy_into_project(source, target, right)
    assert (code, report["entries_present"], report["conflicts"]) == (0, 2, []), err
    shown = flower("sessions", "show", "s001", key=right)
    assert "the plan" in shown.stdout and "_flower_enc" not in shown.stdout


def test_copy_of_entries_sealed_under_a_key_the_project_lacks_is_refused(
    project: Path,
) -> None:
    source = seal_elsewhere(project / "other.db", generate_key())
    target = f"sqlite:///{project}/runs/sessions.db"
    code, _, err = copy_into_project(source, target, generate_key())
    assert code == 2 and "already encrypted" in err
    assert raw_load(target, KEY) is None
