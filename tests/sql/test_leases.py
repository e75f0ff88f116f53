"""The fleet's lease: an append that carries a fencing token writes only while the token
is the project's current one, checked in the append's own transaction (both dialects).
The lease itself (take, renew, release, under_lease) is the contract's: LEASE_CASES in
tests/contract."""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from pathlib import Path

import msgspec
import pytest

from flower.core.config import Settings
from flower.core.lease import LeaseLostError, holding
from flower.core.lineage import Lineage
from flower.core.records import LineageRecord, SessionKey
from flower.stores.open import open_lineage_store
from flower.testing.contract import check_lineage_store
from flower.workflow.said import SaidJournal
from flower_plugins.sql.engine import open_database
from flower_plugins.sql.migrate import upgrade
from flower_plugins.sql.store import SqlSessionStore

KEY = SessionKey("proj", "s1")


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/s.db"
    return str(request.getfixturevalue("pg_url"))


def _store(url: str, lease: int | None = None) -> SqlSessionStore:
    db = open_database(url)
    upgrade(db)
    return SqlSessionStore(db, lease=lease)


def entry(n: int) -> dict[str, object]:
    return {"type": "user", "uuid": f"u{n}", "n": n}


def test_a_taken_over_writer_writes_nothing_and_the_chain_stays_one(url: str) -> None:
    boss = _store(url)
    first = boss.take_lease("proj", "host-a", 30)
    assert first == (1, None)
    zombie = _store(url, lease=1)
    zombie.append(KEY, [entry(1)])
    # host-a stops renewing; host-b may only take the lease once it has expired
    assert isinstance(boss.take_lease("proj", "host-b", 30), float)
    boss.release_lease("proj", 1)  # (as if it had expired)
    assert boss.take_lease("proj", "host-b", 30) == (2, "host-a")
    taker = _store(url, lease=2)
    taker.append(KEY, [entry(2)])
    with pytest.raises(LeaseLostError) as lost:
        zombie.append(KEY, [entry(3)])
    assert "proj" in str(lost.value) and lost.value.exit_code == 75
    taker.append(KEY, [entry(4)])
    assert [e["n"] for e in boss.load(KEY) or []] == [1, 2, 4]
    assert not boss.renew_lease("proj", 1, 30)
    assert boss.renew_lease("proj", 2, 30)


def test_the_same_holder_takes_its_lease_again_with_a_new_token(url: str) -> None:
    """The SQL store's tokens count from 1 (the contract, lease_same_holder_again, asks
    only for a higher one)."""
    store = _store(url)
    assert store.take_lease("proj", "host-a", 30) == (1, None)
    assert store.take_lease("proj", "host-a", 30) == (2, None)


def test_a_wake_that_lost_its_lease_writes_no_words_before_any_store_of_its_own(
    url: str, tmp_path: Path
) -> None:
    """A fleet wake's lease comes with the store the worker took it in: its first write
    to the run directory (said.json, before the wake opens a store of its own) is
    checked like every later one."""
    worker = _store(url)
    assert worker.take_lease("proj", "host-a", 0.0) == (1, None)
    assert worker.take_lease("proj", "host-b", 30) == (2, "host-a")  # a takeover
    journal = SaidJournal(tmp_path / "runs")
    lineage_file = tmp_path / "runs" / "lineage.json"
    lineage = Lineage(open_lineage_store(f"file://{lineage_file}", settings=Settings()), "/ws")
    with holding(1, "proj", worker):
        with pytest.raises(LeaseLostError):
            journal.add("do it", "/ws", "fleet-1")
        with pytest.raises(LeaseLostError):  # lineage: the same fence
            lineage.bump_woke()
    assert not journal.path.exists() and not lineage_file.exists()
    with holding(2, "proj", worker):  # the wake that holds the task now
        journal.add("do it", "/ws", "fleet-1")
    assert [said.text for said in journal.entries()] == ["do it"]


class PluginLineageStore:
    """A third-party lineage store: the three required methods, records in a JSON file
    of its own, no fencing of its own."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self, workspace: str) -> LineageRecord | None:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        return LineageRecord(**data) if data["workspace"] == workspace else None

    def save(self, record: LineageRecord) -> None:
        self.path.write_text(json.dumps(msgspec.to_builtins(record)), encoding="utf-8")

    def archive(self, into: Path, extra: Sequence[Path] = ()) -> Path | None:
        self.path.unlink(missing_ok=True)
        return None


def test_a_plugins_lineage_store_is_fenced_for_it(url: str, tmp_path: Path) -> None:
    worker = _store(url)
    assert worker.take_lease("proj", "host-a", 0.0) == (1, None)
    assert worker.take_lease("proj", "host-b", 30) == (2, "host-a")
    store = PluginLineageStore(tmp_path / "lineage.json")
    store.save(LineageRecord(workspace="/ws", woke=1, steps={"work": "s-1"}))
    before = store.path.read_bytes()
    zombie = Lineage(store, "/ws", store.load("/ws"))
    with holding(1, "proj", worker), pytest.raises(LeaseLostError):
        zombie.record_session("judge", "s-2")
    assert store.path.read_bytes() == before
    holder = Lineage(store, "/ws", store.load("/ws"))
    with holding(2, "proj", worker):
        holder.record_session("judge", "s-3")
    assert store.load("/ws") == LineageRecord("/ws", 1, {"work": "s-1", "judge": "s-3"})

    def fresh() -> PluginLineageStore:
        return PluginLineageStore(tmp_path / f"{uuid.uuid4()}.json")

    report = check_lineage_store(fresh, only="lost_lease_writes_nothing")
    assert "lost_lease_writes_nothing" in report.passed
