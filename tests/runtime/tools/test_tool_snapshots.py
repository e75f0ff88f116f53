"""Write and Edit keep what a file held before they change it (for a rewind)."""

from __future__ import annotations

import stat
from pathlib import Path

from tool_helpers import run_tool

from flower.core.snapshots import Snapshots, digest, file_changes
from flower.runtime.tools import TOOL_NAMES, ToolBox


def test_write_and_edit_keep_the_previous_content(ws: Path, tmp_path: Path) -> None:
    root = tmp_path / "runs" / "snapshots"
    box = ToolBox(ws, list(TOOL_NAMES), snapshots=root)
    created = run_tool(box, "Write", {"file_path": "a.txt", "content": "one\n"})
    assert created.result["snapshot"] == {"before": None, "after": digest(b"one\n")}
    updated = run_tool(box, "Write", {"file_path": "a.txt", "content": "two\n"})
    assert updated.result["snapshot"] == {"before": digest(b"one\n"), "after": digest(b"two\n")}
    edited = run_tool(box, "Edit", {"file_path": "a.txt", "old_string": "two", "new_string": "3"})
    assert edited.result["snapshot"] == {"before": digest(b"two\n"), "after": digest(b"3\n")}
    again = run_tool(box, "Write", {"file_path": "a.txt", "content": "one\n"})
    run_tool(box, "Write", {"file_path": "a.txt", "content": "two\n"})  # "one" a second time
    assert again.result["snapshot"]["before"] == digest(b"3\n")

    snaps = Snapshots(root)
    assert snaps.kept() == {digest(b"one\n"), digest(b"two\n"), digest(b"3\n")}  # once each
    assert snaps.read(digest(b"two\n")) == b"two\n"
    for sha in snaps.kept():
        assert stat.S_IMODE(snaps.path(sha).stat().st_mode) == 0o600
    assert stat.S_IMODE(root.stat().st_mode) == 0o700
    entries = [{"type": "user", "uuid": "r1", "toolUseResult": updated.result}]
    assert file_changes(entries)[0].path == str(ws / "a.txt")


def test_a_damaged_snapshot_reads_as_missing_and_is_kept_again(tmp_path: Path) -> None:
    snaps = Snapshots(tmp_path / "snapshots")
    sha = snaps.keep(b"content")
    snaps.path(sha).write_bytes(b"tampered")
    assert snaps.read(sha) is None
    assert snaps.keep(b"content") == sha and snaps.read(sha) == b"content"


def test_without_a_snapshot_folder_nothing_is_kept(ws: Path) -> None:
    box = ToolBox(ws, list(TOOL_NAMES))
    outcome = run_tool(box, "Write", {"file_path": "a.txt", "content": "x"})
    assert "snapshot" not in outcome.result
