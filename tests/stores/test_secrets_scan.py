"""The secrets scan and a session's transcripts, called from Python."""

from __future__ import annotations

from pathlib import Path

from flower.core.config import Settings
from flower.core.records import SessionKey
from flower.stores.open import open_session_store
from flower.stores.secrets import Finding, scan_session
from flower.stores.transcripts import transcripts

SECRET = "AKIAIOSFODNN7EXAMPLE"


def _entry(uuid: str, text: str) -> dict[str, object]:
    return {"type": "user", "uuid": uuid, "message": {"role": "user", "content": text}}


def test_a_session_is_scanned_with_its_subagents_and_the_secret_is_never_said(
    tmp_path: Path,
) -> None:
    key = SessionKey("p", "s1")
    with open_session_store(f"sqlite:///{tmp_path}/s.db", settings=Settings()) as store:
        store.append(key, [_entry("u1", "nothing here")])
        store.append(key.child("subagents/agent-b"), [_entry("b1", f"key {SECRET}")])
        store.append(key.child("subagents/agent-a"), [_entry("a1", "plain")])
        assert [k.subpath for k in transcripts(store, key)] == [
            None,
            "subagents/agent-a",
            "subagents/agent-b",
        ]
        found = list(scan_session(store, key))
    assert found == [
        Finding("p", "s1", "subagents/agent-b", "b1", "aws-access-key", "message.content")
    ]
    assert SECRET not in repr(found)
