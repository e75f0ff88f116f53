"""Lineage in SQL, keyed by workspace id (the absolute path unless configured)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flower.core.config import LineageConfig, SessionsConfig, Settings
from flower.core.records import LineageRecord
from flower.stores.open import open_lineage_store
from flower_plugins.sql.engine import open_database
from flower_plugins.sql.lineage import SqlLineageStore


def record(workspace: str, **steps: str) -> LineageRecord:
    return LineageRecord(workspace=workspace, woke=2, steps=steps or {"需求": "sess-1"})


def test_save_then_load_by_absolute_path(db_url: str, tmp_path: Path) -> None:
    store = SqlLineageStore(open_database(db_url))
    try:
        ws = str(tmp_path / "proj")
        assert store.load(ws) is None
        store.save(record(ws, plan="s1", 干活="s2"))
        assert store.load(ws) == record(ws, plan="s1", 干活="s2")
        store.save(LineageRecord(workspace=ws, woke=3, steps={"plan": "s9"}, extra={"v": 2}))
        assert store.load(ws) == LineageRecord(ws, 3, {"plan": "s9"}, {"v": 2})
        # A moved workspace (another path) finds nothing: the seed's guard.
        assert store.load(str(tmp_path / "copied-proj")) is None
    finally:
        store.close()


def test_two_paths_sharing_one_workspace_id_share_one_lineage(db_url: str) -> None:
    host_a = SqlLineageStore(open_database(db_url), workspace_id="team/proj")
    host_b = SqlLineageStore(open_database(db_url), workspace_id="team/proj")
    other = SqlLineageStore(open_database(db_url), workspace_id="team/other")
    try:
        host_a.save(record("/home/alice/proj", plan="s1"))
        loaded = host_b.load("/srv/worker-7/proj")
        assert loaded == record("/srv/worker-7/proj", plan="s1")  # the reader's own path
        assert other.load("/home/alice/proj") is None
    finally:
        for s in (host_a, host_b, other):
            s.close()


def test_archive_writes_the_record_moves_files_and_resets(db_url: str, tmp_path: Path) -> None:
    store = SqlLineageStore(open_database(db_url))
    try:
        ws = str(tmp_path)
        store.save(record(ws, plan="s1"))
        brief = tmp_path / "需求.md"
        brief.write_text("# 需求\n", encoding="utf-8")
        into = tmp_path / "notes" / "archive" / "20261130-021531"
        assert store.archive(into, extra=[brief, tmp_path / "missing.md"]) == into
        assert json.loads((into / "lineage.json").read_text(encoding="utf-8")) == {
            "workspace": ws,
            "woke": 2,
            "steps": {"plan": "s1"},
        }
        assert (into / "需求.md").read_text(encoding="utf-8") == "# 需求\n"
        assert not brief.exists()
        assert store.load(ws) == LineageRecord(ws, 0, {})
    finally:
        store.close()


def test_open_lineage_store_defaults_to_the_sessions_database(in_tmp: Path) -> None:
    settings = Settings(lineage=LineageConfig(backend="sqlite", workspace_id="shared-id"))
    store = open_lineage_store(settings=settings)
    try:
        assert isinstance(store, SqlLineageStore)
        store.save(record(str(in_tmp)))
    finally:
        store.close()  # type: ignore[attr-defined]
    assert (in_tmp / "runs" / "sessions.db").is_file()


def test_postgres_lineage_through_the_configured_url(pg_url: str) -> None:
    settings = Settings(
        sessions=SessionsConfig(backend="postgres", url=pg_url, auto_migrate=True),
        lineage=LineageConfig(backend="postgres"),
    )
    store = open_lineage_store(settings=settings)
    try:
        store.save(record("/a/b"))
        assert store.load("/a/b") == record("/a/b")
    finally:
        store.close()  # type: ignore[attr-defined]


def test_an_invalid_record_is_rejected_and_the_old_one_kept(db_url: str) -> None:
    from flower.core.errors import FlowerError

    store = SqlLineageStore(open_database(db_url))
    try:
        store.save(record("/w"))
        with pytest.raises(FlowerError):
            store.save(LineageRecord(workspace="/w", woke=-1))
        assert store.load("/w") == record("/w")
    finally:
        store.close()


@pytest.mark.usefixtures("english")
def test_every_session_id_covers_every_workspace_and_refuses_a_damaged_record(
    db_url: str,
) -> None:
    import sqlalchemy as sa

    from flower_plugins.sql.schema import lineage

    store = SqlLineageStore(open_database(db_url))
    try:
        assert store.every_session_id() == set()
        store.save(record("/home/a/proj", plan="s1", 干活="s2"))
        store.save(record("/home/b/other", plan="s3"))
        assert store.every_session_id() == {"s1", "s2", "s3"}
        store.database.write(
            lambda conn: conn.execute(
                sa.update(lineage)
                .where(lineage.c.workspace_id == "/home/b/other")
                .values(steps='{"plan": "s3"')
            )
        )
        with pytest.raises(ValueError, match="'/home/b/other' cannot be read"):
            store.every_session_id()
    finally:
        store.close()


def _record_steps(url: str, workspace: str, who: int, steps: int, start: object) -> None:
    from flower.stores.lineage import load_lineage

    store = SqlLineageStore(open_database(url))
    try:
        lineage = load_lineage(workspace, store=store)
        start.wait()  # type: ignore[attr-defined]
        lineage.bump_woke()
        for n in range(steps):
            lineage.record_session(f"p{who}-step{n}", f"session-{who}-{n}")
    finally:
        store.close()


def test_processes_sharing_the_lineage_keep_every_step(db_url: str, tmp_path: Path) -> None:
    import multiprocessing

    processes, steps = 4, 6
    forking = multiprocessing.get_context("fork")
    start = forking.Event()
    workers = [
        forking.Process(target=_record_steps, args=(db_url, str(tmp_path), n, steps, start))
        for n in range(processes)
    ]
    for worker in workers:
        worker.start()
    start.set()
    for worker in workers:
        worker.join(60)
        assert worker.exitcode == 0
    store = SqlLineageStore(open_database(db_url))
    try:
        found = store.load(str(tmp_path))
    finally:
        store.close()
    assert found is not None
    assert found.steps == {
        f"p{who}-step{n}": f"session-{who}-{n}" for who in range(processes) for n in range(steps)
    }
    assert found.woke == processes


def test_adopt_takes_an_old_paths_lineage_and_sessions_in_both_dialects(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from flower.core.config import load_settings
    from flower.core.keys import project_key
    from flower.core.records import SessionKey
    from flower.stores.open import open_session_store
    from flower.workflow.adopt import adopt

    old, new = tmp_path / "old", tmp_path / "new"
    new.mkdir()
    monkeypatch.chdir(new)
    for var in ("FLOWER_LINEAGE_WORKSPACE_ID", "FLOWER_SESSIONS_URL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("FLOWER_LINEAGE_BACKEND", "postgres" if "postgres" in db_url else "sqlite")
    monkeypatch.setenv("FLOWER_LINEAGE_URL", db_url)
    entry = {"type": "user", "uuid": "u1", "message": {"role": "user", "content": "hi"}}
    sessions = open_session_store(f"sqlite:///{new}/runs/sessions.db")
    try:
        sessions.append(SessionKey(project_key(old), "s-1"), [entry])
        lineages = SqlLineageStore(open_database(db_url))
        try:
            lineages.save(LineageRecord(workspace=str(old), woke=4, steps={"干活": "s-1"}))
            # a server holds every workspace's lineage: another row there is no move
            moved = lineages.mismatch(str(new))
            assert (moved is None) == ("postgres" in db_url)
            if moved is not None:
                assert moved.reason == "moved" and moved.moved_from == str(old)
        finally:
            lineages.close()
        done = adopt(new, str(old), settings=load_settings().settings, store=sessions)
        assert done.copied == ["s-1"] and done.woke == 4
        assert sessions.load(SessionKey(project_key(new), "s-1")) == [entry]
        assert sessions.load(SessionKey(project_key(old), "s-1")) == [entry]  # kept
    finally:
        sessions.close()
    lineages = SqlLineageStore(open_database(db_url))
    try:
        assert lineages.load(str(new)) == LineageRecord(str(new), 4, {"干活": "s-1"})
        assert lineages.load(str(old)) == LineageRecord(str(old), 4, {"干活": "s-1"})
    finally:
        lineages.close()
