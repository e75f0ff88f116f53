"""Lineage against a LineageStore: written at once, silent fresh start on mismatch."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

import msgspec
import pytest

from flower.core.lineage import archive_dir, workspace_identity
from flower.core.records import LineageRecord
from flower.stores.lineage import load_lineage


class FileLineageStore:
    """A minimal JSON-file LineageStore, in the seed's shape, for these unit tests."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.saves = 0

    def load(self, workspace: str) -> LineageRecord | None:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            record = msgspec.convert(data, LineageRecord)
        except (OSError, ValueError, msgspec.ValidationError):
            return None
        return record if record.workspace == workspace else None

    def save(self, record: LineageRecord) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(msgspec.to_builtins(record), ensure_ascii=False))
        os.replace(tmp, self.path)
        self.saves += 1

    def archive(self, into: Path, extra: Sequence[Path] = ()) -> Path | None:
        into.mkdir(parents=True, exist_ok=True)
        for path in [self.path, *extra]:
            if path.exists():
                os.replace(path, into / path.name)
        return into


class BrokenStore(FileLineageStore):
    def save(self, record: LineageRecord) -> None:
        raise OSError(28, "No space left on device")


class ExplodingStore(FileLineageStore):
    def load(self, workspace: str) -> LineageRecord | None:
        raise RuntimeError("backend fell over")


@pytest.fixture
def store(in_tmp: Path) -> FileLineageStore:
    return FileLineageStore(in_tmp / "runs" / "lineage.json")


def test_first_load_is_fresh_and_records_at_once(in_tmp: Path, store: FileLineageStore) -> None:
    lin = load_lineage(in_tmp, store=store)
    assert not lin.found and lin.woke == 0 and lin.steps == {}
    assert lin.bump_woke() == 1
    lin.record_session("干活", "sid-1")
    on_disk = json.loads(store.path.read_text())
    assert on_disk["steps"] == {"干活": "sid-1"}
    assert on_disk["woke"] == 1
    assert on_disk["workspace"] == os.path.realpath(in_tmp)


def test_second_load_continues(in_tmp: Path, store: FileLineageStore) -> None:
    first = load_lineage(in_tmp, store=store)
    first.bump_woke()
    first.record_session("取词", "abc")
    again = load_lineage(in_tmp, store=store)
    assert again.found and again.woke == 1 and again.steps == {"取词": "abc"}
    assert again.bump_woke() == 2


def test_same_session_is_not_rewritten(in_tmp: Path, store: FileLineageStore) -> None:
    lin = load_lineage(in_tmp, store=store)
    lin.record_session("a", "x")
    lin.record_session("a", "x")
    assert store.saves == 1


def test_moved_workspace_starts_fresh(in_tmp: Path, store: FileLineageStore) -> None:
    lin = load_lineage(in_tmp, store=store)
    lin.record_session("a", "x")
    other = in_tmp / "copy"
    other.mkdir()
    moved = load_lineage(other, store=store)
    assert not moved.found and moved.steps == {} and moved.woke == 0


@pytest.mark.parametrize(
    "content",
    [
        "{not json",
        "",
        "[]",
        '{"workspace": 3}',
        '{"workspace": "%s", "woke": -1}',
        '{"workspace": "%s", "steps": {"a": 5}}',
    ],
)
def test_corrupt_record_starts_fresh(in_tmp: Path, store: FileLineageStore, content: str) -> None:
    store.path.parent.mkdir(parents=True)
    store.path.write_text(content.replace("%s", os.path.realpath(in_tmp)))
    lin = load_lineage(in_tmp, store=store)
    assert not lin.found and lin.steps == {}


def test_store_that_raises_on_load_starts_fresh(in_tmp: Path) -> None:
    lin = load_lineage(in_tmp, store=ExplodingStore(in_tmp / "l.json"))
    assert not lin.found


def test_oserror_on_write_is_swallowed(in_tmp: Path) -> None:
    lin = load_lineage(in_tmp, store=BrokenStore(in_tmp / "l.json"))
    lin.record_session("a", "x")  # must not raise
    assert lin.bump_woke() == 1
    assert lin.steps == {"a": "x"}
    assert lin.save() is False


def test_live_steps_filters_missing_sessions(in_tmp: Path, store: FileLineageStore) -> None:
    lin = load_lineage(in_tmp, store=store)
    lin.record_session("a", "alive")
    lin.record_session("b", "gone")
    lin.record_session("c", "boom")

    def has(sid: str) -> bool:
        if sid == "boom":
            raise RuntimeError("store down")
        return sid == "alive"

    assert lin.live_steps(has) == {"a": "alive"}


def test_archive_moves_all_three_and_resets(in_tmp: Path, store: FileLineageStore) -> None:
    (in_tmp / "需求.md").write_text("brief")
    (in_tmp / "目标.md").write_text("goals")
    lin = load_lineage(in_tmp, store=store)
    lin.bump_woke()
    lin.record_session("干活", "s1")
    into = archive_dir(in_tmp, now=0)
    lin.archive(into, extra=[in_tmp / "需求.md", in_tmp / "目标.md"])
    assert sorted(p.name for p in into.iterdir()) == ["lineage.json", "目标.md", "需求.md"]
    assert not (in_tmp / "需求.md").exists()
    assert lin.woke == 0 and lin.steps == {}
    assert not load_lineage(in_tmp, store=store).found


def test_unknown_fields_survive_a_save(in_tmp: Path, store: FileLineageStore) -> None:
    record = LineageRecord(
        workspace=os.path.realpath(in_tmp), woke=2, steps={"a": "x"}, extra={"future": {"k": 1}}
    )
    store.save(record)
    lin = load_lineage(in_tmp, store=store)
    lin.record_session("b", "y")
    assert lin.record.extra == {"future": {"k": 1}}


def test_workspace_identity_prefers_configured_id(in_tmp: Path) -> None:
    from flower.core.config import LineageConfig, Settings

    settings = Settings(lineage=LineageConfig(workspace_id="proj-42"))
    assert workspace_identity(in_tmp, settings) == "proj-42"
    assert workspace_identity(in_tmp) == os.path.realpath(in_tmp)


def test_archive_dir_shape(in_tmp: Path) -> None:
    path = archive_dir(in_tmp)
    assert path.parent == in_tmp / "notes" / "archive"
    assert len(path.name) == 15 and path.name[8] == "-"


# -- the configured store: the built-in `json` backend writing runs/lineage.json -------


def test_real_json_store_writes_the_seed_shape(in_tmp: Path) -> None:
    lin = load_lineage(in_tmp)
    lin.bump_woke()
    lin.record_session("干活", "47395075-bec7-466e-80cd-f4d60b360235")
    data = json.loads((in_tmp / "runs" / "lineage.json").read_text(encoding="utf-8"))
    assert data == {
        "workspace": os.path.realpath(in_tmp),
        "woke": 1,
        "steps": {"干活": "47395075-bec7-466e-80cd-f4d60b360235"},
    }
    assert load_lineage(in_tmp).steps == {"干活": "47395075-bec7-466e-80cd-f4d60b360235"}


def test_real_json_store_run_dir_and_corruption(in_tmp: Path) -> None:
    lin = load_lineage(in_tmp, run_dir="elsewhere")
    lin.record_session("a", "x")
    assert (in_tmp / "elsewhere" / "lineage.json").is_file()
    assert not load_lineage(in_tmp).found  # another run_dir: another lineage
    (in_tmp / "elsewhere" / "lineage.json").write_text('{"workspace": "/x", "wo')
    assert not load_lineage(in_tmp, run_dir="elsewhere").found


def test_real_json_store_keeps_newer_fields(in_tmp: Path) -> None:
    path = in_tmp / "runs" / "lineage.json"
    path.parent.mkdir()
    path.write_text(
        json.dumps({"workspace": os.path.realpath(in_tmp), "woke": 4, "steps": {}, "v2": [1]})
    )
    lin = load_lineage(in_tmp)
    assert lin.found and lin.woke == 4
    lin.record_session("b", "y")
    assert json.loads(path.read_text())["v2"] == [1]


def test_real_json_store_unwritable_dir_is_swallowed(in_tmp: Path) -> None:
    (in_tmp / "runs").write_text("a file where the run dir should be")
    lin = load_lineage(in_tmp)
    lin.record_session("a", "x")  # OSError (NotADirectory) swallowed
    assert lin.steps == {"a": "x"}
