from __future__ import annotations

import os
import unicodedata
from pathlib import Path

import pytest

from flower.core.errors import InvalidKeyError
from flower.core.keys import MAX_PROJECT_KEY, project_key, sanitize_path
from flower.core.records import SessionKey


def test_non_alphanumerics_become_dashes(tmp_path: Path) -> None:
    ws = tmp_path / "my_proj.v2"
    ws.mkdir()
    key = project_key(ws)
    assert key == str(ws.resolve()).replace("/", "-").replace("_", "-").replace(".", "-")
    assert key.endswith("-my-proj-v2")


def test_realpath_is_used(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    assert project_key(link) == project_key(real)


def test_nfc_normalisation(tmp_path: Path) -> None:
    nfd = unicodedata.normalize("NFD", "café")
    nfc = unicodedata.normalize("NFC", "café")
    assert sanitize_path(unicodedata.normalize("NFC", nfd)) == sanitize_path(nfc)
    # Non-ASCII letters are outside [A-Za-z0-9] and become dashes, one per code point.
    assert sanitize_path("/a/" + nfc) == "-a-caf-"


def test_cjk_paths_become_dashes() -> None:
    assert sanitize_path("/root/需求") == "-root---"


def test_long_paths_get_a_base36_hash_suffix() -> None:
    long = "/" + "x" * 300
    key = sanitize_path(long)
    head, _, suffix = key.rpartition("-")
    assert len(head) == MAX_PROJECT_KEY
    assert suffix and all(c in "0123456789abcdefghijklmnopqrstuvwxyz" for c in suffix)
    assert sanitize_path("/" + "x" * 299 + "y") != key


def test_known_hash_value() -> None:
    # h = h*31 + code unit over UTF-16, 32-bit signed, abs, base36 (Claude Code's scheme).
    text = "/" + "a" * 250
    h = 0
    for ch in text:
        h = (h * 31 + ord(ch)) & 0xFFFFFFFF
    h = abs(h - 2**32 if h >= 2**31 else h)
    digits = ""
    while h:
        h, r = divmod(h, 36)
        digits = "0123456789abcdefghijklmnopqrstuvwxyz"[r] + digits
    assert sanitize_path(text).endswith("-" + digits)


@pytest.mark.parametrize(
    ("project", "session", "subpath"),
    [
        ("", "s", None),
        ("p", "", None),
        ("..", "s", None),
        ("p", "..", None),
        ("a/b", "s", None),
        ("p", "s/../x", None),
        ("p", "nul\x00", None),
        ("p", "back\\slash", None),
        ("p", "s", ""),
        ("p", "s", "/abs"),
        ("p", "s", "a/../../b"),
        ("p", "s", "a//b"),
        ("p", "s", "nul\x00"),
    ],
)
def test_hostile_keys_are_rejected(project: str, session: str, subpath: str | None) -> None:
    with pytest.raises(InvalidKeyError):
        SessionKey(project, session, subpath)


def test_valid_keys() -> None:
    key = SessionKey("-home-me", "取词-session", "subagents/agent-1")
    assert key.main == SessionKey("-home-me", "取词-session")
    assert key.main.child("x") == SessionKey("-home-me", "取词-session", "x")


def test_project_key_of_cwd_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert project_key(".") == project_key(os.getcwd())


def test_matches_the_claude_agent_sdk_when_installed(tmp_path: Path) -> None:
    sessions = pytest.importorskip("claude_agent_sdk._internal.sessions")
    deep = tmp_path.joinpath(*(["nested_dir.x"] * 20), "需求 ok")
    deep.mkdir(parents=True)
    for path in (tmp_path, deep, tmp_path / "missing/x"):
        assert project_key(path) == sessions.project_key_for_directory(path)
