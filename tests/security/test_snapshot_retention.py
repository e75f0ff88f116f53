"""``flower sessions gc`` covers the file snapshots kept for rewind: only unused ones go."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from flower.cli.main import build_app
from flower.core.config import Settings
from flower.core.records import SessionKey
from flower.core.snapshots import Snapshots
from flower.stores.open import open_session_store

pytestmark = pytest.mark.usefixtures("english")  # expects flower's English output


def _changed(session: str, n: int, before: str) -> dict[str, Any]:
    return {
        "type": "user",
        "uuid": f"{session}-{n}",
        "sessionId": session,
        "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t"}]},
        "toolUseResult": {
            "type": "update",
            "filePath": "/w/a.txt",
            "snapshot": {"before": before, "after": "f" * 64},
        },
    }


def _age(path: Path, days: float) -> None:
    old = time.time() - days * 86400
    os.utime(path, (old, old))


def test_gc_removes_only_the_snapshots_no_kept_session_names(in_tmp: Path) -> None:
    (in_tmp / "pyproject.toml").write_text(
        '[tool.flower]\nrun_dir = "runs"\n[tool.flower.sessions]\nbackend = "jsonfs"\n',
        encoding="utf-8",
    )
    url = f"jsonfs://{in_tmp}/runs/transcripts"
    snaps = Snapshots(in_tmp / "runs" / "snapshots")
    only_old, shared, only_kept, fresh = (snaps.keep(w) for w in (b"a", b"b", b"c", b"d"))
    with open_session_store(url, settings=Settings()) as store:
        store.append(
            SessionKey("-p", "old"), [_changed("old", 1, only_old), _changed("old", 2, shared)]
        )
        store.append(
            SessionKey("-p", "kept"), [_changed("kept", 1, shared), _changed("kept", 2, only_kept)]
        )
    _age(next((in_tmp / "runs" / "transcripts").rglob("old.jsonl")), 40)
    (in_tmp / "runs" / "lineage.json").write_text(
        json.dumps({"workspace": os.path.realpath(in_tmp), "_woke": 1, "steps": {"a": "kept"}})
    )
    for sha in (only_old, shared, only_kept):
        _age(snaps.path(sha), 40)  # `fresh` names no session but was just written

    runner = CliRunner()
    dry = runner.invoke(build_app(), ["sessions", "gc", "--older-than", "30d", "--dry-run"])
    assert dry.exit_code == 0 and len(snaps.kept()) == 4
    done = runner.invoke(build_app(), ["sessions", "gc", "--older-than", "30d", "--yes"])
    assert done.exit_code == 0, done.output
    assert "removed 1 file snapshot no session names" in done.output
    assert snaps.kept() == {shared, only_kept, fresh}
    assert snaps.read(shared) == b"b"
