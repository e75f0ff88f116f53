"""``flower sessions import --claude-code``: keys, subagents, idempotency, damaged lines."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from claude_code_home import (
    AGENT,
    OTHER_PROJECT,
    OTHER_SESSION,
    PROJECT,
    SESSION,
    agent_entries,
    make_claude_home,
)
from typer.testing import CliRunner, Result

from flower.cli.main import build_app
from flower.core.records import SessionKey
from flower.stores.open import open_session_store

# the expected text below is flower's English output (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("english")


def flower(*args: str) -> Result:
    return CliRunner().invoke(build_app(), list(args))


@pytest.fixture
def claude_home(in_tmp: Path) -> dict[str, Any]:
    return make_claude_home(in_tmp / "home" / ".claude" / "projects")


def _load(url: str, key: SessionKey) -> list[dict[str, Any]] | None:
    with open_session_store(url) as store:
        return store.load(key)


@pytest.mark.parametrize("backend", ["sqlite", "jsonfs"])
def test_import_keys_subagents_and_damage(
    backend: str, claude_home: dict[str, Any], in_tmp: Path
) -> None:
    url = f"sqlite:///{in_tmp}/s.db" if backend == "sqlite" else f"jsonfs://{in_tmp}/copy"
    src = str(in_tmp / "home" / ".claude" / "projects")
    done = flower("sessions", "import", "--claude-code", src, "--to", url)
    assert done.exit_code == 0, done.output

    # Everything but the damaged lines, in order, deep-equal; bookkeeping lines too.
    assert _load(url, SessionKey(PROJECT, SESSION)) == claude_home["main"]
    assert _load(url, SessionKey(PROJECT, SESSION, f"subagents/{AGENT}")) == agent_entries()
    assert len(_load(url, SessionKey(OTHER_PROJECT, OTHER_SESSION)) or []) == 2

    # Each skipped line is named with its file and line number.
    for number in claude_home["skipped_lines"]:
        assert f"{claude_home['main_file']}:{number}:" in done.output
    assert "torn last line" in done.output and "not JSON" in done.output
    assert "not an entry" in done.output  # the JSON array line
    assert "imported 2 Claude Code sessions (3 transcripts)" in done.output
    assert "3 lines skipped" in done.output

    again = flower("sessions", "import", "--claude-code", src, "--to", url)
    assert again.exit_code == 0, again.output
    assert ", 0 new," in again.output
    assert _load(url, SessionKey(PROJECT, SESSION)) == claude_home["main"]


def test_default_folder_is_home_claude_projects(
    claude_home: dict[str, Any], in_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(in_tmp / "home"))
    url = f"sqlite:///{in_tmp}/s.db"
    done = flower("--sessions-url", url, "sessions", "import", "--claude-code")
    assert done.exit_code == 0, done.output
    assert str(in_tmp / "home" / ".claude" / "projects") in done.output
    listed = flower("--sessions-url", url, "sessions", "list", "--json")
    assert {s["session_id"] for s in json.loads(listed.stdout)} == {SESSION, OTHER_SESSION}


def test_show_renders_an_imported_transcript(claude_home: dict[str, Any], in_tmp: Path) -> None:
    url = f"sqlite:///{in_tmp}/s.db"
    src = str(in_tmp / "home" / ".claude" / "projects")
    assert flower("sessions", "import", "--claude-code", src, "--to", url).exit_code == 0
    shown = flower("--sessions-url", url, "sessions", "show", SESSION)
    assert shown.exit_code == 0, shown.output
    text = shown.stdout
    for expected in (
        "summary: Convert md to html",
        "user: list the files",
        "assistant: Let me look.",
        'tool call: Bash {"command":"ls"}',
        "tool result: a.md",
        "api error: API Error: 529 Overloaded",
        "assistant: There are two markdown files.",
    ):
        assert expected in text
    raw = flower("--sessions-url", url, "sessions", "show", SESSION, "--raw").stdout
    assert [json.loads(line) for line in raw.splitlines()] == claude_home["main"]


def test_pruning_applies_to_an_imported_transcript(
    claude_home: dict[str, Any], in_tmp: Path
) -> None:
    url = f"sqlite:///{in_tmp}/s.db"
    src = str(in_tmp / "home" / ".claude" / "projects")
    assert flower("sessions", "import", "--claude-code", src, "--to", url).exit_code == 0
    pruned = flower("--sessions-url", url, "sessions", "show", SESSION, "--pruned", "--json")
    assert pruned.exit_code == 0, pruned.output
    kept = [e.get("uuid") for e in json.loads(pruned.stdout)["entries"]]
    assert "c-error" not in kept  # the synthetic API error is pruned...
    assert {"c-user", "c-call", "c-result", "c-final"} <= set(kept)
    # ...and re-linked around: the final reply now hangs off the tool result.
    final = next(e for e in json.loads(pruned.stdout)["entries"] if e.get("uuid") == "c-final")
    assert final["parentUuid"] == "c-result"
    assert _load(url, SessionKey(PROJECT, SESSION)) == claude_home["main"]  # storage intact


def test_missing_folder_is_a_clear_error(in_tmp: Path) -> None:
    done = flower(
        "sessions",
        "import",
        "--claude-code",
        str(in_tmp / "nope"),
        "--to",
        f"sqlite:///{in_tmp}/s.db",
    )
    assert done.exit_code == 1
    assert "no Claude Code projects folder" in done.output
    assert not (in_tmp / "s.db").exists()  # said before the target store is created


def test_a_source_opened_first_is_imported_from_python(in_tmp: Path) -> None:
    from flower.compat.claude_code import ClaudeCodeSource, import_claude_code
    from flower.core.errors import FlowerError

    with pytest.raises(FlowerError, match="no Claude Code projects folder"):
        ClaudeCodeSource(in_tmp / "nope")
    make_claude_home(in_tmp / "cc")
    source = ClaudeCodeSource(in_tmp / "cc")
    with open_session_store(f"sqlite:///{in_tmp}/s.db") as store:
        done = import_claude_code(source, store)
        assert done.source == source.root and done.report.sessions >= 1
        assert store.exists(SessionKey(PROJECT, SESSION))


def test_file_or_flag_is_required(in_tmp: Path) -> None:
    done = flower("--sessions-url", f"sqlite:///{in_tmp}/s.db", "sessions", "import")
    assert done.exit_code == 2
    assert "--claude-code" in done.output
