"""The json lineage store: the seed's file shape, silent fresh starts, atomic saves, archive."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from flower.core.config import Settings
from flower.core.errors import FlowerError, LocalFaultError
from flower.core.records import LineageRecord
from flower.stores.open import open_lineage_store
from flower_plugins.jsonfs import JsonLineageStore, lineage_path_from_url
from flower_plugins.jsonfs.lineage import ArchiveConflictError

WS = "/Users/you/proj"
SID = "47395075-bec7-466e-80cd-f4d60b360235"


def test_default_path_is_run_dir_lineage_json_in_the_seeds_shape(in_tmp: Path) -> None:
    store = open_lineage_store(settings=Settings())
    assert isinstance(store, JsonLineageStore)
    store.save(LineageRecord(workspace=WS, woke=3, steps={"干活": SID}))
    path = in_tmp / "runs" / "lineage.json"
    text = path.read_text(encoding="utf-8")
    assert json.loads(text) == {"workspace": WS, "woke": 3, "steps": {"干活": SID}}
    assert list(json.loads(text)) == ["workspace", "woke", "steps"]
    assert "干活" in text, "CJK step names are written readable, not \\u-escaped"
    assert [p.name for p in path.parent.iterdir()] == ["lineage.json"], "no .tmp left behind"


def test_run_dir_is_relative_to_the_working_directory(in_tmp: Path) -> None:
    store = open_lineage_store(settings=Settings(run_dir="elsewhere/runs"))
    assert isinstance(store, JsonLineageStore)
    assert store.path == in_tmp / "elsewhere" / "runs" / "lineage.json"


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"not json",
        b'{"workspace": "/Users/you/proj", "woke": 3, "steps": {"\xe5\xb9',  # truncated
        b"[]",
        b"null",
        b'"a string"',
        b'{"woke": 1, "steps": {}}',
        b'{"workspace": 7, "woke": 1, "steps": {}}',
        b'{"workspace": "/Users/you/proj", "woke": "3", "steps": {}}',
        b'{"workspace": "/Users/you/proj", "woke": true, "steps": {}}',
        b'{"workspace": "/Users/you/proj", "woke": -1, "steps": {}}',
        b'{"workspace": "/Users/you/proj", "woke": 1, "steps": []}',
        b'{"workspace": "/Users/you/proj", "woke": 1, "steps": {"x": 5}}',
        b"\xff\xfe garbage",
    ],
)
def test_corrupt_or_foreign_files_read_as_absent(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "lineage.json"
    path.write_bytes(content)
    assert JsonLineageStore(path).load(WS) is None
    assert path.read_bytes() == content, "a corrupt file is left for a human to look at"


def test_a_folder_in_place_of_the_file_reads_as_absent(tmp_path: Path) -> None:
    (tmp_path / "lineage.json").mkdir()
    assert JsonLineageStore(tmp_path / "lineage.json").load(WS) is None


def test_workspace_guard(tmp_path: Path) -> None:
    store = JsonLineageStore(tmp_path / "lineage.json")
    store.save(LineageRecord(workspace=WS, woke=1, steps={"干活": SID}))
    assert store.load("/Users/you/proj-copy") is None
    assert store.load(WS) is not None


def test_unknown_fields_are_kept_at_top_level(tmp_path: Path) -> None:
    path = tmp_path / "lineage.json"
    path.write_text(
        json.dumps({"workspace": WS, "woke": 2, "steps": {}, "relay": {"from": "s0"}, "v": 9})
    )
    store = JsonLineageStore(path)
    record = store.load(WS)
    assert record is not None and record.extra == {"relay": {"from": "s0"}, "v": 9}
    record.woke += 1
    store.save(record)
    assert json.loads(path.read_text()) == {
        "workspace": WS,
        "woke": 3,
        "steps": {},
        "relay": {"from": "s0"},
        "v": 9,
    }


def test_extra_cannot_override_the_core_fields(tmp_path: Path) -> None:
    store = JsonLineageStore(tmp_path / "lineage.json")
    store.save(LineageRecord(workspace=WS, woke=1, extra={"workspace": "/evil", "woke": 99}))
    assert json.loads((tmp_path / "lineage.json").read_text())["workspace"] == WS
    assert store.load(WS) == LineageRecord(workspace=WS, woke=1)


def test_failed_replace_keeps_the_old_file_and_no_tmp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = JsonLineageStore(tmp_path / "lineage.json")
    old = LineageRecord(workspace=WS, woke=1, steps={"干活": SID})
    store.save(old)

    def broken_replace(src: object, dst: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(LocalFaultError, match=r"lineage\.json"):  # a full disk: names the file
        store.save(LineageRecord(workspace=WS, woke=2))
    monkeypatch.undo()
    assert store.load(WS) == old
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lineage.json"]


def test_bad_record_is_a_clear_error_and_writes_nothing(tmp_path: Path) -> None:
    store = JsonLineageStore(tmp_path / "lineage.json")
    with pytest.raises(FlowerError, match="woke"):
        store.save(LineageRecord(workspace=WS, woke=True))
    with pytest.raises(FlowerError, match="JSON-safe"):
        store.save(LineageRecord(workspace=WS, extra={"nan": float("nan")}))
    assert not tmp_path.joinpath("lineage.json").exists()


def test_archive_moves_lineage_and_extras_together(in_tmp: Path) -> None:
    store = open_lineage_store(settings=Settings())
    store.save(LineageRecord(workspace=WS, woke=4, steps={"干活": SID}))
    brief, goals = in_tmp / "需求.md", in_tmp / "目标.md"
    brief.write_text("# 需求\n", encoding="utf-8")
    goals.write_text("# 目标\n", encoding="utf-8")
    into = in_tmp / "notes" / "archive" / "20261130-021531"
    assert store.archive(into, extra=[brief, goals, in_tmp / "absent.md"]) == into
    assert sorted(p.name for p in into.iterdir()) == ["lineage.json", "目标.md", "需求.md"]
    assert json.loads((into / "lineage.json").read_text())["woke"] == 4
    assert not brief.exists() and not goals.exists()
    assert store.load(WS) is None


@pytest.mark.usefixtures("english")
def test_archive_refuses_to_overwrite_and_moves_nothing(in_tmp: Path) -> None:
    store = JsonLineageStore(in_tmp / "runs" / "lineage.json")
    store.save(LineageRecord(workspace=WS, woke=1))
    brief = in_tmp / "需求.md"
    brief.write_text("new", encoding="utf-8")
    into = in_tmp / "archive"
    into.mkdir()
    (into / "需求.md").write_text("older archive", encoding="utf-8")
    with pytest.raises(ArchiveConflictError, match="nothing moved"):
        store.archive(into, extra=[brief])
    assert brief.read_text(encoding="utf-8") == "new"
    assert store.load(WS) is not None
    assert (into / "需求.md").read_text(encoding="utf-8") == "older archive"


def test_url_forms(in_tmp: Path) -> None:
    (in_tmp / "dir").mkdir()
    assert lineage_path_from_url("file:///abs/lineage.json") == Path("/abs/lineage.json")
    assert lineage_path_from_url(f"file://{in_tmp}/dir") == in_tmp / "dir" / "lineage.json"
    assert lineage_path_from_url("file:///abs/new/") == Path("/abs/new/lineage.json")
    assert lineage_path_from_url("runs/other.json") == in_tmp / "runs" / "other.json"
    store = open_lineage_store(f"file://{in_tmp}/x/lineage.json", settings=Settings())
    assert isinstance(store, JsonLineageStore) and store.path == in_tmp / "x" / "lineage.json"
