"""The lineage store contract: load/save/archive as the seed's continuity needs them,
the optional ``update`` and ``mismatch`` for a store that declares them (a store
without one is skipped for its cases, with that reason), and a fleet wake that lost
its lease writing nothing through the store (fenced by flower around each write, or by
the store itself when it declares ``fences_writes``)."""

from __future__ import annotations

import tempfile
import threading
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TypeVar

from flower.core.errors import FlowerError
from flower.core.lease import LeaseLostError, holding
from flower.core.lineage import Lineage
from flower.core.protocols import (
    FencingLineageStore,
    LineageStore,
    MergingLineageStore,
    MismatchLineageStore,
)
from flower.core.records import LineageMismatch, LineageRecord
from flower.testing.contract.runner import Case, CaseContext, ContractSkip
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


def merging(ctx: Ctx) -> MergingLineageStore:
    store = ctx.store()
    if not isinstance(store, MergingLineageStore):
        raise ContractSkip("no update(): processes sharing this lineage replace each other")
    return store


def update_changes_what_is_stored(ctx: Ctx) -> None:
    store = merging(ctx)
    seen: list[LineageRecord | None] = []

    def change(current: LineageRecord | None) -> LineageRecord:
        seen.append(current)
        steps = dict(current.steps) if current else {}
        return record((current.woke if current else 0) + 1, **steps, 设定目标="s-2")

    first = store.update(WORKSPACE, change)
    expect_equal(seen, [None], "what change() got with nothing stored")
    expect_equal(first, record(1, 设定目标="s-2"), "update's return value")
    expect_equal(store.load(WORKSPACE), first, "load after the first update")
    store.save(record(5, 干活=SESSION))
    second = store.update(WORKSPACE, change)
    expect_equal(seen[1], record(5, 干活=SESSION), "what change() got after a save")
    expect_equal(second, record(6, 干活=SESSION, 设定目标="s-2"), "update's return value")
    expect_equal(store.load(WORKSPACE), second, "load after the second update")


def update_failure_keeps_record(ctx: Ctx) -> None:
    store = merging(ctx)
    kept = record(2)
    store.save(kept)

    def change(current: LineageRecord | None) -> LineageRecord:
        raise RuntimeError("the change failed")

    expect_raises(RuntimeError, partial(store.update, WORKSPACE, change), "a failing change")
    expect_equal(store.load(WORKSPACE), kept, "record after a failing change")


def update_merges_concurrent_writers(ctx: Ctx) -> None:
    store = merging(ctx)
    writers, rounds = 4, 10

    def add_steps(writer: int) -> None:
        for i in range(rounds):

            def change(
                current: LineageRecord | None, name: str = f"w{writer}#{i}"
            ) -> LineageRecord:
                base = current or LineageRecord(workspace=WORKSPACE)
                return LineageRecord(
                    workspace=WORKSPACE, woke=base.woke + 1, steps={**base.steps, name: SESSION}
                )

            store.update(WORKSPACE, change)

    threads = [threading.Thread(target=add_steps, args=(w,)) for w in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    found = store.load(WORKSPACE)
    want = {f"w{w}#{i}" for w in range(writers) for i in range(rounds)}
    got = set(found.steps) if found else set()
    if got != want or (found and found.woke != writers * rounds):
        raise AssertionError(
            f"{len(want - got)} of {len(want)} steps lost, woke "
            f"{found.woke if found else None} (want {writers * rounds})"
        )


def probing(ctx: Ctx) -> MismatchLineageStore:
    store = ctx.store()
    if not isinstance(store, MismatchLineageStore):
        raise ContractSkip("no mismatch(): a moved or broken record cannot be set aside")
    return store


def mismatch_of_own_record_is_none(ctx: Ctx) -> None:
    store = probing(ctx)
    expect_equal(store.mismatch(WORKSPACE), None, "mismatch with nothing stored")
    store.save(record())
    expect_equal(store.mismatch(WORKSPACE), None, "mismatch of the workspace's own record")


def mismatch_of_moved_record(ctx: Ctx) -> None:
    store = probing(ctx)
    saved = record()
    store.save(saved)
    found = store.mismatch("/somewhere/else")
    if found is None:  # a store shared by many workspaces sees no move in another's record
        return
    if not isinstance(found, LineageMismatch):
        raise AssertionError(f"mismatch returned {found!r}, not a LineageMismatch or None")
    expect_equal((found.reason, found.moved_from), ("moved", WORKSPACE), "mismatch of a move")
    if not found.raw:
        raise AssertionError("a moved record's mismatch holds no raw bytes to set aside")
    expect_equal(store.load(WORKSPACE), saved, "the record after asking for a mismatch")


T = TypeVar("T")


class TakenOver:
    """The session store a fleet wake took its lease in, after another worker took the
    task over: every write checked against that lease is refused."""

    def under_lease(self, project_key: str, token: int, write: Callable[[], T]) -> T:
        raise LeaseLostError(project_key, token)


def lost_lease_writes_nothing(ctx: Ctx) -> None:
    store = ctx.store()
    kept = record(2)
    store.save(kept)
    lineage = Lineage(store, WORKSPACE, store.load(WORKSPACE))
    lineage.record.steps["设定目标"] = "s-2"
    with holding(1, "contract-project", TakenOver()):
        expect_raises(LeaseLostError, lineage.save, "a lineage save after the lease was lost")
        expect_raises(LeaseLostError, lineage.bump_woke, "a wake counted after it was lost")
        if isinstance(store, FencingLineageStore):  # it says it checks the lease itself
            expect_raises(LeaseLostError, partial(store.save, record(3)), "save, lease lost")
            if isinstance(store, MergingLineageStore):
                update = partial(store.update, WORKSPACE, lambda current: record(4))
                expect_raises(LeaseLostError, update, "update after the lease was lost")
    expect_equal(store.load(WORKSPACE), kept, "the record after writes of a lost lease")


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
    Case(
        "update_changes_what_is_stored",
        "update saves change(the stored record) and returns it",
        update_changes_what_is_stored,
    ),
    Case(
        "update_failure_keeps_record",
        "a change that raises leaves the record as it was",
        update_failure_keeps_record,
    ),
    Case(
        "update_merges_concurrent_writers",
        "concurrent updates lose no writer's steps",
        update_merges_concurrent_writers,
    ),
    Case(
        "lost_lease_writes_nothing",
        "a fleet wake that lost its lease writes no lineage (fenced by flower or the store)",
        lost_lease_writes_nothing,
    ),
    Case(
        "mismatch_of_own_record_is_none",
        "mismatch is None with nothing stored or the workspace's own record",
        mismatch_of_own_record_is_none,
    ),
    Case(
        "mismatch_of_moved_record",
        "another path's record is None or a 'moved' mismatch naming it",
        mismatch_of_moved_record,
    ),
]
