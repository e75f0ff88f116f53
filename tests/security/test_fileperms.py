"""Every kind of file flower creates is owner-only; existing open files are warned about."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from flower.core.config import Settings
from flower.core.fileperms import (
    PermissionWarning,
    check_private,
    forget_checks,
    private_dir,
    replaced_atomically,
)
from flower.core.manifest import Manifest
from flower.core.records import LineageRecord, SessionKey
from flower.runtime.spec import StepResult
from flower.stores.open import open_lineage_store, open_session_store
from flower.workflow.relay import handoff_path, write_handoff
from flower_plugins.pruning.policies import save_once

KEY = SessionKey("-w", "s1")
ENTRY = {"type": "user", "uuid": "u1", "message": {"role": "user", "content": "hi"}}


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture(autouse=True)
def wide_umask() -> object:
    """A permissive umask, so only flower's own modes can make files private."""
    forget_checks()
    old = os.umask(0o002)
    yield
    os.umask(old)
    forget_checks()


def test_sqlite_database_and_wal_files(tmp_path: Path) -> None:
    db = tmp_path / "runs" / "sessions.db"
    with open_session_store(f"sqlite:///{db}", settings=Settings()) as store:
        store.append(KEY, [ENTRY])
        files = [p for p in db.parent.iterdir() if p.name.startswith("sessions.db")]
        assert {p.name for p in files} >= {"sessions.db", "sessions.db-wal", "sessions.db-shm"}
        for path in files:
            assert mode(path) == 0o600, path
    assert mode(db.parent) == 0o700


def test_jsonfs_transcripts_and_folders(tmp_path: Path) -> None:
    root = tmp_path / "transcripts"
    with open_session_store(f"jsonfs://{root}", settings=Settings()) as store:
        store.append(KEY, [ENTRY])
        store.append(KEY.child("subagents/a"), [ENTRY])
    for path in [root, *root.rglob("*")]:
        assert mode(path) == (0o700 if path.is_dir() else 0o600), path


def test_lineage_json_and_its_archive(tmp_path: Path) -> None:
    path = tmp_path / "runs" / "lineage.json"
    store = open_lineage_store(f"file://{path}", settings=Settings())
    store.save(LineageRecord(workspace="/w", woke=1, steps={"a": "s1"}))
    assert mode(path) == 0o600 and mode(path.parent) == 0o700
    into = tmp_path / "notes" / "archive" / "20261130-000000"
    store.archive(into)
    assert mode(into) == 0o700 and mode(into.parent) == 0o700
    assert mode(into / "lineage.json") == 0o600


def test_manifest(tmp_path: Path) -> None:
    Manifest(tmp_path / "runs").record(StepResult(step="a", session_id="s1", ok=True))
    assert mode(tmp_path / "runs" / "manifest.json") == 0o600
    assert mode(tmp_path / "runs") == 0o700


def test_trim_files(tmp_path: Path) -> None:
    saved = save_once(tmp_path / "runs" / "trimmed" / "s1" / "toolu_1.txt", b"big output")
    assert mode(saved) == 0o600 and mode(saved.parent) == 0o700


def test_relay_documents(tmp_path: Path) -> None:
    path = handoff_path(tmp_path, "step")
    write_handoff(path, "step", "old-session", "what was done")
    assert mode(path) == 0o600 and mode(path.parent) == 0o700


def test_an_existing_world_readable_file_is_warned_about_once(tmp_path: Path) -> None:
    db = tmp_path / "sessions.db"
    with open_session_store(f"sqlite:///{db}", settings=Settings()):
        pass
    db.chmod(0o644)
    forget_checks()
    with pytest.warns(PermissionWarning, match=r"sessions\.db .*0644.*chmod 600"):
        open_session_store(f"sqlite:///{db}", settings=Settings()).close()
    assert check_private(db) is True  # once per file: no second warning
    assert mode(db) == 0o644  # warned about, never changed behind the user's back


@pytest.mark.usefixtures("english")  # the warning is read in English
def test_private_dir_leaves_existing_folders_alone(tmp_path: Path) -> None:
    (tmp_path / "shared").mkdir(mode=0o755)
    with pytest.warns(PermissionWarning, match="folder"):
        private_dir(tmp_path / "shared")
    assert mode(tmp_path / "shared") == 0o755


def test_replaced_atomically_swaps_whole_files_and_leaves_nothing_on_failure(
    tmp_path: Path,
) -> None:
    target = tmp_path / "record.json"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError), replaced_atomically(target) as out:
        out.write(b"half of the new")
        raise RuntimeError("crash mid-write")
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["record.json"]

    with replaced_atomically(target) as out:
        out.write(b"new")
    assert target.read_bytes() == b"new"
    assert oct(target.stat().st_mode & 0o777) == "0o600"
    assert [p.name for p in tmp_path.iterdir()] == ["record.json"]


@pytest.mark.parametrize("umask", [0o000, 0o002, 0o022])
def test_brief_and_goals_are_0644_whatever_the_umask(tmp_path: Path, umask: int) -> None:
    from flower.workflow.clarify import append_to_brief, write_atomic

    os.umask(umask)
    brief, goals = tmp_path / "需求.md", tmp_path / "目标.md"
    write_atomic(brief, "# 需求\n")
    write_atomic(goals, "- [ ] 一条\n")
    assert mode(brief) == 0o644 and mode(goals) == 0o644
    append_to_brief(brief, "顺便支持代码块高亮", "2026-12-01")
    assert mode(brief) == 0o644


def test_a_rewritten_brief_keeps_its_mode_but_never_group_or_other_write(tmp_path: Path) -> None:
    from flower.workflow.clarify import write_atomic

    os.umask(0o077)
    brief = tmp_path / "需求.md"
    brief.write_text("# 需求\n", encoding="utf-8")
    os.chmod(brief, 0o640)
    write_atomic(brief, "# 需求\n- a\n")
    assert mode(brief) == 0o640  # the user's choice, not narrowed by the umask
    os.chmod(brief, 0o666)
    write_atomic(brief, "# 需求\n- b\n")
    assert mode(brief) == 0o644


def test_a_sql_lineage_archive_is_owner_only(tmp_path: Path) -> None:
    os.umask(0o000)
    store = open_lineage_store(f"sqlite:///{tmp_path}/runs/sessions.db", settings=Settings())
    try:
        store.load(str(tmp_path))
        store.save(LineageRecord(workspace=str(tmp_path), woke=1, steps={"a": "s1"}))
        into = tmp_path / "notes" / "archive" / "20261201-000000"
        store.archive(into)
    finally:
        store.close()  # type: ignore[attr-defined]
    assert mode(into / "lineage.json") == 0o600
