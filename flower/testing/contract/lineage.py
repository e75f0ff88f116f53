"""The lineage store contract: load/save/archive as the seed's continuity needs them."""

from __future__ import annotations

import tempfile
import threading
from functools import partial
from pathlib import Path

from flower.core.errors import FlowerError
from flower.core.protocols import LineageStore
from flower.core.records import LineageRecord
from flower.testing.contract.runner import Case, CaseContext
from flower.testing.contract.sessions import expect_equal, expect_raises

Ctx = CaseContext[LineageStore]

WORKSPACE = "/home/user/proj"
SESSION = "47395075-bec7-466e-80cd-f4d60b360235"


def record(woke: int = 1, **steps: str) -> LineageRecord:
    return LineageRecord(workspace=WORKSPACE, woke=woke, steps=steps or {"干活": SESSION})


def is_fresh(found: LineageRecord | None) -> bool:
    """After archive a store may hold nothing or a reset record; both mean 'start fresh'
    (nothing of the archived record left: no steps, and nothing kept beside them)."""
    return found is None or (found.woke == 0 and not found.steps and not found.extra)


def load_missing(ctx: Ctx) -> None:
    store = ctx.store()
    expect_equal(store.load(WORKSPACE), None, "load before any save")


def save_then_load(ctx: Ctx) -> None:
    store = ctx.store()
    saved = LineageRecord(
        workspace=WORKSPACE,
        woke=3,
        steps={"确认需求": "s-1", "干活": SESSION, "干活#round2": "s-3", "干活·判定#1": "s-4"},
    )
    store.save(saved)
    expect_equal(store.load(WORKSPACE), saved, "load after save (CJK step names)")


def other_workspace_is_none(ctx: Ctx) -> None:
    store = ctx.store()
    store.save(record())
    expect_equal(store.load("/somewhere/else"), None, "load for another workspace")


def save_replaces(ctx: Ctx) -> None:
    store = ctx.store()
    store.save(record(1))
    newer = record(2, 干活=SESSION, 设定目标="s-9")
    store.save(newer)
    expect_equal(store.load(WORKSPACE), newer, "load after a second save")


def unknown_fields_kept(ctx: Ctx) -> None:
    store = ctx.store()
    saved = LineageRecord(
        workspace=WORKSPACE, woke=1, steps={}, extra={"relay": {"from": "s-0"}, "v": 2}
    )
    store.save(saved)
    expect_equal(store.load(WORKSPACE), saved, "fields a newer flower wrote")


def invalid_record_rejected(ctx: Ctx) -> None:
    store = ctx.store()
    good = record()
    store.save(good)
    bad_records = [
        ("an empty workspace", LineageRecord(workspace="", woke=1)),
        ("a negative woke", LineageRecord(workspace=WORKSPACE, woke=-1)),
        ("a non-string session id", LineageRecord(workspace=WORKSPACE, steps={"a": 1})),  # type: ignore[dict-item]
        ("an unencodable extra", LineageRecord(workspace=WORKSPACE, extra={"x": object()})),
    ]
    for what, bad in bad_records:
        expect_raises(FlowerError, partial(store.save, bad), f"save with {what}")
        expect_equal(store.load(WORKSPACE), good, f"record after rejecting {what}")


def archive_moves_and_resets(ctx: Ctx) -> None:
    store = ctx.store()
    saved = record(4)
    saved.extra = {"unheard": ["words the archived conversation never heard"]}
    store.save(saved)
    with tempfile.TemporaryDirectory() as tmp:
        brief, goals = Path(tmp, "需求.md"), Path(tmp, "目标.md")
        brief.write_text("# 需求\n", encoding="utf-8")
        goals.write_text("# 目标\n", encoding="utf-8")
        into = Path(tmp, "notes", "archive", "20261130-021531")
        returned = store.archive(into, extra=[brief, goals, Path(tmp, "missing.md")])
        expect_equal(Path(returned) if returned else None, into, "archive's return value")
        if not into.is_dir():
            raise AssertionError(f"archive did not create {into}")
        for moved in (brief, goals):
            if moved.exists():
                raise AssertionError(f"{moved.name} is still in place after archive")
        expect_equal((into / "需求.md").read_text(encoding="utf-8"), "# 需求\n", "archived brief")
        expect_equal((into / "目标.md").read_text(encoding="utf-8"), "# 目标\n", "archived goals")
        if not is_fresh(store.load(WORKSPACE)):
            raise AssertionError(f"after archive load gave {store.load(WORKSPACE)!r}")


def archive_without_record(ctx: Ctx) -> None:
    store = ctx.store()
    with tempfile.TemporaryDirectory() as tmp:
        into = Path(tmp, "notes", "archive", "20261130-000000")
        returned = store.archive(into)
        if returned is not None:  # the protocol allows None when there was nothing to move
            expect_equal(Path(returned), into, "archive's return value")
    expect_equal(store.load(WORKSPACE), None, "load after archiving nothing")


def atomic_under_reads(ctx: Ctx) -> None:
    store = ctx.store()
    first, second = record(1, 干活="a" * 2000), record(2, 干活="b" * 2000, 设定目标="c" * 2000)
    store.save(first)
    seen: list[LineageRecord | None] = []
    done = threading.Event()

    def read() -> None:
        while not done.is_set():
            seen.append(store.load(WORKSPACE))

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for i in range(60):
            store.save(second if i % 2 == 0 else first)
    finally:
        done.set()
        reader.join(30)
    torn = [found for found in seen if found not in (first, second)]
    if torn:
        raise AssertionError(f"{len(torn)} of {len(seen)} reads saw neither record: {torn[0]!r}")


LINEAGE_CASES: list[Case[LineageStore]] = [
    Case("load_missing", "load before any save is None", load_missing),
    Case("save_then_load", "a saved record loads equal, CJK step names too", save_then_load),
    Case(
        "other_workspace_is_none", "a record for another workspace is None", other_workspace_is_none
    ),
    Case("save_replaces", "a second save replaces the first", save_replaces),
    Case("unknown_fields_kept", "LineageRecord.extra survives save and load", unknown_fields_kept),
    Case(
        "invalid_record_rejected",
        "a bad record is refused, the old one kept",
        invalid_record_rejected,
    ),
    Case("archive_moves_and_resets", "archive moves files and resets", archive_moves_and_resets),
    Case("archive_without_record", "archive with nothing saved is fine", archive_without_record),
    Case(
        "atomic_under_reads",
        "readers see the old or the new record, never half",
        atomic_under_reads,
    ),
]
