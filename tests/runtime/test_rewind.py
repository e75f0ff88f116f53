"""``Lineage.rewind``: fork a step's session turns back, files flower changed come back."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest
from runtime_helpers import sqlite_settings

from flower.core.fork import ForkError, forked_from
from flower.core.lineage import Lineage
from flower.core.rewind import PLAN_FILE, RewindError, rewound_turns, turns_of
from flower.core.transcript import active_chain, prompt_texts
from flower.runtime.engine import Runtime
from flower.runtime.spec import AgentSpec
from flower.stores.lineage import load_lineage
from flower.testing.fake_api import FakeMessagesAPI, reply, text, tool_use

STEP = "干活"
WORKER = AgentSpec(
    "worker", "Work.", allowed_tools=["Write", "Edit", "Bash"], max_turns=8, model="m-1"
)


def _write(path: str, content: str) -> dict[str, object]:
    return tool_use("Write", {"file_path": path, "content": content})


@pytest.fixture
def worked(
    make_runtime: Callable[..., Runtime], fake_api: FakeMessagesAPI, workspace: Path, in_tmp: Path
) -> tuple[Runtime, Lineage, str]:
    """Two user turns of a step: the first writes a.txt, the second changes it, writes
    b.txt and runs a command."""
    (workspace / "keep.txt").write_text("mine\n")
    fake_api.add(
        reply(_write("a.txt", "v1\n")),
        text("first done"),
        reply(_write("a.txt", "v2\n"), _write("b.txt", "new\n")),
        reply(tool_use("Bash", {"command": "echo hi > c.txt"})),
        reply(tool_use("Edit", {"file_path": "keep.txt", "old_string": "mine", "new_string": "x"})),
        text("second done"),
    )
    rt = make_runtime()
    first = asyncio.run(rt.run(WORKER, "write a"))
    asyncio.run(rt.run(WORKER, "now change it", resume=first.session_id))
    lineage = load_lineage(workspace, settings=sqlite_settings(in_tmp), run_dir=in_tmp / "runs")
    lineage.record_session(STEP, first.session_id)
    return (
        rt,
        load_lineage(workspace, settings=rt.settings, run_dir=in_tmp / "runs"),
        first.session_id,
    )


def _rewind(rt: Runtime, lineage: Lineage, workspace: Path, **kw: object) -> object:
    return lineage.rewind(STEP, workspace=workspace, store=rt.store, settings=rt.settings, **kw)


def test_rewind_one_turn_forks_and_puts_flowers_files_back(
    worked: tuple[Runtime, Lineage, str], workspace: Path
) -> None:
    rt, lineage, old = worked
    old_entries = rt.store.load(rt.key(old))
    (workspace / "keep.txt").write_text("user again\n")  # changed by the user after flower
    plan = _rewind(rt, lineage, workspace)

    assert rt.store.load(rt.key(old)) == old_entries  # the old session is untouched
    assert plan.old_session == old and plan.turns == 1
    assert (workspace / "a.txt").read_text() == "v1\n"
    assert not (workspace / "b.txt").exists()
    assert sorted(r.path for r in plan.restore) == [
        str(workspace / "a.txt"),
        str(workspace / "b.txt"),
    ]
    assert [f.path for f in plan.left] == [str(workspace / "keep.txt")]
    assert (workspace / "keep.txt").read_text() == "user again\n"
    assert plan.bash == ["echo hi > c.txt"]

    again = load_lineage(workspace, settings=rt.settings)
    assert again.steps[STEP] == plan.new_session
    assert rewound_turns(again.record.extra, again.woke) == 1
    forked = rt.store.load(rt.key(plan.new_session))
    assert forked_from(forked).session_id == old
    said = [t for e in active_chain(forked) for t in prompt_texts(e)]
    assert said == ["write a"]
    assert not (Path(rt.settings.run_dir) / PLAN_FILE).exists()
    listed = {i.session_id for i in rt.store.list_sessions(rt.project_key)}
    assert listed == {old, plan.new_session}


@pytest.mark.usefixtures("english")  # the expected text is flower's English output
def test_force_and_keep_files(worked: tuple[Runtime, Lineage, str], workspace: Path) -> None:
    rt, lineage, _ = worked
    (workspace / "keep.txt").write_text("user again\n")
    plan = _rewind(rt, lineage, workspace, force=True)
    assert (workspace / "keep.txt").read_text() == "mine\n" and plan.left == []
    # the fork has one turn: nothing more to go back to
    with pytest.raises(ForkError, match="has 1 user turn"):
        _rewind(rt, load_lineage(workspace, settings=rt.settings), workspace)


def test_keep_files_rewinds_only_the_conversation(
    worked: tuple[Runtime, Lineage, str], workspace: Path
) -> None:
    rt, lineage, _ = worked
    plan = _rewind(rt, lineage, workspace, keep_files=True)
    assert plan.restore == [] and (workspace / "a.txt").read_text() == "v2\n"
    assert (workspace / "b.txt").exists()
    assert load_lineage(workspace, settings=rt.settings).steps[STEP] == plan.new_session


def test_turns_of_lists_what_was_said(worked: tuple[Runtime, Lineage, str]) -> None:
    rt, _, old = worked
    turns = turns_of(rt.store, rt.key(old))
    assert [t.text for t in turns] == ["write a", "now change it"]
    assert turns[0].context is None and turns[1].context is not None


@pytest.mark.usefixtures("english")  # the expected text is flower's English output
def test_bad_rewinds_are_clear_and_write_nothing(
    worked: tuple[Runtime, Lineage, str], workspace: Path, in_tmp: Path
) -> None:
    rt, lineage, old = worked
    before = rt.store.list_sessions(rt.project_key)
    with pytest.raises(ForkError, match="can go back at most 1 turn"):
        _rewind(rt, lineage, workspace, turns=2)
    with pytest.raises(RewindError, match="no step 'nope'; its steps: work"):
        lineage.rewind("nope", workspace=workspace, store=rt.store, settings=rt.settings)
    empty = load_lineage(in_tmp / "elsewhere", settings=rt.settings, run_dir=in_tmp / "other")
    with pytest.raises(RewindError, match="nothing to rewind: no lineage"):
        empty.rewind(STEP, workspace=workspace, store=rt.store, settings=rt.settings)
    assert rt.store.list_sessions(rt.project_key) == before
    assert (workspace / "a.txt").read_text() == "v2\n"
    assert load_lineage(workspace, settings=rt.settings).steps[STEP] == old


def test_a_rewind_a_crash_cut_short_is_finished_before_the_next_wake(
    worked: tuple[Runtime, Lineage, str], workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The plan file is the commit point: written, then killed (nothing else done yet)."""
    import msgspec

    from flower.core.rewind import plan_rewind
    from flower.core.snapshots import Snapshots
    from flower.workflow.rewind import finish_pending_rewind

    rt, lineage, old = worked
    run_dir = Path(rt.settings.run_dir)
    plan = plan_rewind(
        rt.store,
        rt.key(old),
        STEP,
        1,
        woke=lineage.woke,
        snapshots=Snapshots.of_run_dir(run_dir),
    )
    (run_dir / PLAN_FILE).write_bytes(msgspec.json.encode(plan))
    (workspace / ".a.txt.123-abcd.tmp").write_text("half a restore")
    monkeypatch.chdir(workspace)
    assert finish_pending_rewind(rt.settings, workspace) == plan
    assert load_lineage(workspace, settings=rt.settings).steps[STEP] == plan.new_session
    assert (workspace / "a.txt").read_text() == "v1\n" and not (workspace / "b.txt").exists()
    assert not (workspace / ".a.txt.123-abcd.tmp").exists()
    assert not (run_dir / PLAN_FILE).exists()
    assert finish_pending_rewind(rt.settings, workspace) is None  # nothing pending any more


def test_two_rewinds_before_a_wake_are_announced_together(
    make_runtime: Callable[..., Runtime], fake_api: FakeMessagesAPI, workspace: Path, in_tmp: Path
) -> None:
    fake_api.add(text("one"), text("two"), text("three"))
    rt = make_runtime()
    sid = asyncio.run(rt.run(WORKER, "first")).session_id
    asyncio.run(rt.run(WORKER, "second", resume=sid))
    asyncio.run(rt.run(WORKER, "third", resume=sid))
    load_lineage(workspace, settings=rt.settings).record_session(STEP, sid)
    _rewind(rt, load_lineage(workspace, settings=rt.settings), workspace)
    lineage = load_lineage(workspace, settings=rt.settings)
    plan = _rewind(rt, lineage, workspace)
    again = load_lineage(workspace, settings=rt.settings)
    assert rewound_turns(again.record.extra, again.woke) == 2
    from flower.core.rewind import carry_out

    carry_out(plan, rt.store, again, Path(rt.settings.run_dir))  # done twice: counted once
    again = load_lineage(workspace, settings=rt.settings)
    assert rewound_turns(again.record.extra, again.woke) == 2
    again.bump_woke()  # the wake that announced it
    assert rewound_turns(again.record.extra, again.woke) is None


def test_workflow_run_finishes_a_pending_rewind_before_it_loads_lineage(
    worked: tuple[Runtime, Lineage, str], workspace: Path, fake_api: FakeMessagesAPI
) -> None:
    """``flower once`` and a Python ``Workflow.run`` resume the fork a crashed rewind chose."""
    import msgspec

    from flower.core.rewind import plan_rewind
    from flower.core.snapshots import Snapshots
    from flower.workflow.base import Step, Workflow

    rt, lineage, old = worked
    run_dir = Path(rt.settings.run_dir)
    plan = plan_rewind(
        rt.store, rt.key(old), STEP, 1, woke=lineage.woke, snapshots=Snapshots.of_run_dir(run_dir)
    )
    (run_dir / PLAN_FILE).write_bytes(msgspec.json.encode(plan))  # then killed
    fake_api.add(text("carried on"))
    ctx = asyncio.run(Workflow([Step(STEP, WORKER, "go on", resume_prompt="go on")]).run(rt))
    assert ctx["_sessions"][STEP] == plan.new_session and ctx["_resumed"] == {STEP: True}
    assert (workspace / "a.txt").read_text() == "v1\n" and not (workspace / "b.txt").exists()
    assert not (run_dir / PLAN_FILE).exists()


@pytest.mark.usefixtures("english")  # the expected text is flower's English output
def test_lineage_rewind_from_python_takes_the_run_lock(
    worked: tuple[Runtime, Lineage, str], workspace: Path
) -> None:
    """While another flower holds the run directory, a Python rewind changes nothing."""
    import fcntl
    import os

    from flower.core.run_lock import BusyError

    rt, lineage, old = worked
    run_dir = Path(rt.settings.run_dir)
    before = rt.store.list_sessions(rt.project_key)
    other = os.open(run_dir / "flower.lock", os.O_RDWR | os.O_CREAT)  # its own open file
    try:
        fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(BusyError, match="another flower"):
            _rewind(rt, lineage, workspace)
    finally:
        os.close(other)
    assert rt.store.list_sessions(rt.project_key) == before
    assert load_lineage(workspace, settings=rt.settings).steps[STEP] == old
    assert (workspace / "a.txt").read_text() == "v2\n" and not (run_dir / PLAN_FILE).exists()
    assert _rewind(rt, lineage, workspace).old_session == old  # once it is free


def test_step_turns_and_rewind_step_do_what_flower_rewind_does(
    worked: tuple[Runtime, Lineage, str], workspace: Path
) -> None:
    from flower.workflow.rewind import rewind_step, step_turns

    rt, _lineage, first = worked
    listed = step_turns(rt.settings, workspace, STEP)
    assert listed.step == STEP and listed.key.session_id == first
    assert [t.text for t in listed.turns] == ["write a", "now change it"]
    done = rewind_step(rt.settings, workspace, 1, step=STEP)
    assert not done.cut_short and done.plan.old_session == first and done.plan.turns == 1
    assert step_turns(rt.settings, workspace, STEP).key.session_id == done.plan.new_session


@pytest.mark.usefixtures("english")  # the expected text is flower's English output
def test_what_flower_rewind_says_from_python(
    worked: tuple[Runtime, Lineage, str], workspace: Path
) -> None:
    from flower.workflow.rewind import rewind_said, rewind_step, step_turns

    rt, _lineage, first = worked
    listed = step_turns(rt.settings, workspace, STEP)
    assert [back for back, _turn in listed.listed()] == [None, 1]  # the first turn stays
    shown = listed.as_json()
    assert shown["session_id"] == first
    assert shown["turns"] == [
        {
            "turns_back": back,
            "uuid": t.uuid,
            "timestamp": t.timestamp,
            "text": t.text,
            "context": t.context,
        }
        for back, t in zip([None, 1], listed.turns, strict=True)
    ]
    plan = rewind_step(rt.settings, workspace, 1, step=STEP).plan
    said = rewind_said(plan, workspace)
    assert said[0] == (
        f"rewound work 1 turn: now session {plan.new_session}; the old session {first} "
        f"stays (flower sessions show {first})"
    )
    assert sorted(said[1:-2]) == [
        "  file a.txt: put back",
        "  file b.txt: removed (flower created it after that point)",
        "  file keep.txt: put back",
    ]
    assert said[-2:] == [
        "  not undone: these commands ran through Bash after that point:",
        "    $ echo hi > c.txt",
    ]


@pytest.mark.usefixtures("english")
def test_a_rewind_a_crash_cut_short_is_said_finished_and_nothing_more() -> None:
    from flower.core.rewind import RewindPlan
    from flower.workflow.rewind import cut_short_said, finished_said

    plan = RewindPlan(STEP, "p", "old", "new", at="u1", turns=2, woke=3)
    assert cut_short_said(plan, 1) == [
        "finished the rewind of work a crash cut short (2 turns back): now session new; "
        "the old session old stays (flower sessions show old)",
        "nothing more was rewound; to go 1 more turn back, type `flower rewind 1` again",
    ]
    assert finished_said(plan) == (
        "flower: finished the rewind of work a crash cut short (now session new)"
    )
