"""Processes sharing one run directory keep every step in lineage (merged under a lock)."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

import pytest

from flower.core.config import Settings
from flower.core.lineage import Lineage, merge_records
from flower.core.records import LineageRecord
from flower.stores.lineage import load_lineage
from flower.stores.open import open_lineage_store


def lineage_at(path: Path, workspace: Path) -> Lineage:
    store = open_lineage_store(f"file://{path}", settings=Settings())
    return load_lineage(workspace, store=store)


def test_two_lineages_of_one_workspace_keep_each_others_steps(tmp_path: Path) -> None:
    path = tmp_path / "runs" / "lineage.json"
    first, second = lineage_at(path, tmp_path), lineage_at(path, tmp_path)
    first.bump_woke()
    second.bump_woke()
    first.record_session("甲", "s-a")
    second.record_session("乙", "s-b")
    first.forget("甲")
    first.record_session("丙", "s-c")
    on_disk = json.loads(path.read_text(encoding="utf-8"))
    assert on_disk["steps"] == {"乙": "s-b", "丙": "s-c"}
    assert on_disk["woke"] == 2
    # each process's view is the merged record as of its own last save
    assert second.steps == {"甲": "s-a", "乙": "s-b"} and first.steps == on_disk["steps"]


def test_fields_beside_steps_merge_by_key(tmp_path: Path) -> None:
    path = tmp_path / "runs" / "lineage.json"
    first, second = lineage_at(path, tmp_path), lineage_at(path, tmp_path)
    first.record.extra["request"] = "写个脚本"
    first.save()
    held = second.record.extra  # a caller keeping a reference sees the merged fields
    held["goals_stale"] = True
    second.save()
    assert held == {"request": "写个脚本", "goals_stale": True}
    del first.record.extra["request"]
    first.save()
    assert json.loads(path.read_text(encoding="utf-8"))["goals_stale"] is True
    assert "request" not in json.loads(path.read_text(encoding="utf-8"))


def test_merge_records_applies_only_what_changed() -> None:
    base = LineageRecord("/w", 1, {"a": "s1", "b": "s2"}, {"x": 1})
    mine = LineageRecord("/w", 2, {"a": "s1", "c": "s3"}, {"x": 1})
    current = LineageRecord("/w", 4, {"a": "s9", "b": "s2", "d": "s4"}, {"x": 5})
    merged = merge_records(current, base, mine)
    # "a" untouched here keeps the other process's s9; "b" dropped here; "c" added
    assert merged == LineageRecord("/w", 5, {"a": "s9", "d": "s4", "c": "s3"}, {"x": 5})


def _record_steps(path: str, workspace: str, who: int, steps: int, start: object) -> None:
    lineage = lineage_at(Path(path), Path(workspace))
    start.wait()  # type: ignore[attr-defined]
    lineage.bump_woke()
    for n in range(steps):
        lineage.record_session(f"p{who}-step{n}", f"session-{who}-{n}")


@pytest.mark.parametrize("processes, steps", [(2, 5), (6, 8)])
def test_processes_sharing_a_run_dir_keep_every_step(
    tmp_path: Path, processes: int, steps: int
) -> None:
    path = tmp_path / "runs" / "lineage.json"
    forking = multiprocessing.get_context("fork")
    start = forking.Event()
    workers = [
        forking.Process(target=_record_steps, args=(str(path), str(tmp_path), n, steps, start))
        for n in range(processes)
    ]
    for worker in workers:
        worker.start()
    start.set()
    for worker in workers:
        worker.join(30)
        assert worker.exitcode == 0
    on_disk = json.loads(path.read_text(encoding="utf-8"))
    expected = {
        f"p{who}-step{n}": f"session-{who}-{n}" for who in range(processes) for n in range(steps)
    }
    assert on_disk["steps"] == expected
    assert on_disk["woke"] == processes


def _say(path: str, workspace: str, field: str, loaded: object) -> None:
    """One process's wake words: loaded with the others, saved once they all loaded."""
    from flower.workflow.said import SaidWords

    words = SaidWords(lineage_at(Path(path), Path(workspace)))
    loaded.wait()  # type: ignore[attr-defined]
    if field == "request":
        words.record.request = "写个脚本"
    elif field == "goals":
        words.record.goals_stale, words.record.goals_seen = True, "digest"
    else:
        words.record.unheard = ["also support tables"]
    assert words.save()


def test_processes_saving_the_said_record_at_once_keep_each_others_fields(
    tmp_path: Path,
) -> None:
    """Three processes that read lineage before any of them saved, each changing other
    fields of the words' record (no run lock between them: a Python caller, a fleet
    task): every field is kept, not the last saver's whole record."""
    from flower.workflow.said import said_record

    path = tmp_path / "runs" / "lineage.json"
    fields = ("request", "goals", "unheard")
    forking = multiprocessing.get_context("fork")
    loaded = forking.Barrier(len(fields))  # each saves once all read it: nothing said yet
    workers = [
        forking.Process(target=_say, args=(str(path), str(tmp_path), field, loaded))
        for field in fields
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(30)
        assert worker.exitcode == 0
    record = said_record(lineage_at(path, tmp_path).record.extra)
    assert record.request == "写个脚本"
    assert (record.goals_stale, record.goals_seen) == (True, "digest")
    assert record.unheard == ["also support tables"]


def test_the_said_record_reads_back_what_another_process_saved(tmp_path: Path) -> None:
    """After a save the record holds the other process's fields too, so its next save
    does not take them back."""
    from flower.workflow.said import SaidWords, said_record

    path = tmp_path / "runs" / "lineage.json"
    first = SaidWords(lineage_at(path, tmp_path))
    second = SaidWords(lineage_at(path, tmp_path))
    first.record.request = "写个脚本"
    assert first.save()
    second.record.goals_stale = True
    assert second.save()
    assert second.record.request == "写个脚本"
    second.record.unheard = ["also support tables"]
    assert second.save()
    record = said_record(lineage_at(path, tmp_path).record.extra)
    assert (record.request, record.goals_stale, record.unheard) == (
        "写个脚本",
        True,
        ["also support tables"],
    )
