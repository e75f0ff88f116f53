"""kill -9 in the middle of a fork or a rewind: the old state or the new one, never half.

The child is forked from the test process (warm imports) and killed with SIGKILL at a
moment spread over twice the time the whole operation takes on this machine (so most
kills land while it runs, a few after it ended).
"""

from __future__ import annotations

import os
import random
import signal
import time
from collections.abc import Callable
from pathlib import Path

import msgspec
import pytest
from runtime_helpers import sqlite_settings

from flower.core.config import Settings
from flower.core.fork import fork
from flower.core.records import SessionKey
from flower.core.rewind import PLAN_FILE, finish_pending
from flower.core.transcript import active_chain
from flower.runtime.persist import TranscriptWriter
from flower.runtime.tools import TOOL_NAMES, ToolBox
from flower.stores.lineage import load_lineage
from flower.stores.open import open_session_store

TRIALS = 12
STEP = "干活"
FILES = 24


def _child(work: Callable[[], None], kill_after: float | None) -> bool:
    """Run ``work`` in a forked child; SIGKILL it ``kill_after`` seconds after it starts
    (``None``: let it end). Whether the work finished."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read_end)
            os.write(write_end, b"r")
            work()
            os.write(write_end, b"d")
        finally:
            os._exit(0)
    os.close(write_end)
    assert os.read(read_end, 1) == b"r"
    if kill_after is not None:
        time.sleep(kill_after)
        os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    finished = os.read(read_end, 1) == b"d"
    os.close(read_end)
    return finished


def _moment(trial: int, longest: float, rng: random.Random) -> float:
    """When trial ``trial`` kills: spread over twice the operation's time (jittered), so
    the early kills land inside it whatever the machine's speed; the last comes late."""
    if trial == TRIALS - 1:
        return 3 * longest
    return (trial + rng.random()) / TRIALS * 2 * longest


def _timed(work: Callable[[], None]) -> float:
    """How long ``work`` takes in a child, on this machine now."""
    start = time.perf_counter()
    assert _child(work, None)
    return time.perf_counter() - start


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["sqlite", "jsonfs"])
def test_kill_9_mid_fork_leaves_no_fork_or_the_whole_fork(in_tmp: Path, backend: str) -> None:
    url = f"sqlite:///{in_tmp}/s.db" if backend == "sqlite" else f"jsonfs://{in_tmp}/t"
    key = SessionKey("-work-kill", "5f1c1e4a-0000-4000-8000-00000000c001")
    entries = []
    parent = None
    for i in range(3000):
        kind = "user" if i % 2 == 0 else "assistant"
        entries.append(
            {
                "type": kind,
                "uuid": f"e-{i}",
                "parentUuid": parent,
                "sessionId": key.session_id,
                "message": {"role": kind, "content": f"turn {i} " + "x" * 200},
            }
        )
        parent = f"e-{i}"
    with open_session_store(url) as store:
        store.append(key, entries)
        calibrate = fork(store, key, session_id="calibrate")
        expected = len(store.load(calibrate) or [])

    def forking(target: str) -> Callable[[], None]:
        def work() -> None:
            with open_session_store(url) as child_store:
                fork(child_store, key, session_id=target)

        return work

    longest = _timed(forking("timing"))
    rng = random.Random(7)
    outcomes: set[str] = set()
    for trial in range(TRIALS):
        target = SessionKey(key.project_key, f"fork-{trial}")
        _child(forking(target.session_id), _moment(trial, longest, rng))
        with open_session_store(url) as store:
            got = store.load(target)
            listed = {i.session_id for i in store.list_sessions(key.project_key)}
            if got is None:  # no fork at all: not even an empty transcript is listed
                assert target.session_id not in listed
                outcomes.add("none")
                continue
            assert target.session_id in listed
            assert len(got) == expected, f"half a fork: {len(got)} of {expected} entries"
            assert len(active_chain(got)) == len(entries)
            assert fork(store, key, session_id=target.session_id) == target  # idempotent
            assert len(store.load(target) or []) == expected
            outcomes.add("whole")
            assert store.load(key) == entries
    assert "none" in outcomes and "whole" in outcomes


def _worked(root: Path) -> tuple[Settings, Path, str, dict[str, bytes], dict[str, bytes]]:
    """A step whose second user turn rewrote FILES files through flower's Write tool."""
    ws = root / "ws"
    ws.mkdir(parents=True)
    settings = msgspec.structs.replace(sqlite_settings(root), run_dir=str(root / "runs"))
    box = ToolBox(ws, list(TOOL_NAMES), snapshots=root / "runs" / "snapshots")
    from flower.core.keys import project_key

    sid = "5f1c1e4a-0000-4000-8000-00000000d001"
    with open_session_store(settings=settings) as store:
        writer = TranscriptWriter(store, SessionKey(project_key(ws), sid), str(ws))
        for turn, words in enumerate(["first", "second"]):
            writer.user_prompt(f"{words} turn")
            for n in range(FILES):
                import asyncio

                call = {
                    "type": "tool_use",
                    "id": f"toolu_{turn}_{n}",
                    "name": "Write",
                    "input": {"file_path": f"f{n}.txt", "content": f"{words} {n}\n"},
                }
                asked = writer.assistant(
                    {"id": f"msg_{turn}_{n}", "role": "assistant", "content": [call]}, None
                )
                outcome = asyncio.run(box.run("Write", call["input"]))
                block = {"type": "tool_result", "tool_use_id": call["id"], "content": "ok"}
                writer.tool_results(asked["uuid"], [block], [outcome.result])
            if turn == 0:
                at_point = {p.name: p.read_bytes() for p in ws.iterdir()}
            writer.assistant({"id": f"msg_{turn}", "role": "assistant", "content": "done"}, None)
    lineage = load_lineage(ws, settings=settings)
    lineage.record_session(STEP, sid)
    at_end = {p.name: p.read_bytes() for p in ws.iterdir()}
    return settings, ws, sid, at_point, at_end


@pytest.mark.slow
def test_kill_9_mid_rewind_leaves_the_old_state_or_the_new_one(in_tmp: Path) -> None:
    def rewinding(settings: Settings, ws: Path) -> Callable[[], None]:
        def work() -> None:
            with open_session_store(settings=settings) as store:
                load_lineage(ws, settings=settings).rewind(
                    STEP, workspace=ws, store=store, settings=settings
                )

        return work

    settings, ws, _, _, _ = _worked(in_tmp / "timing")
    longest = _timed(rewinding(settings, ws))
    rng = random.Random(11)
    outcomes: set[str] = set()
    for trial in range(TRIALS):
        settings, ws, old, at_point, at_end = _worked(in_tmp / f"t{trial}")
        _child(rewinding(settings, ws), _moment(trial, longest, rng))
        plan_left = (Path(settings.run_dir) / PLAN_FILE).exists()
        with open_session_store(settings=settings) as store:
            from flower.core.keys import project_key

            project = project_key(ws)
            # whatever the moment, no half fork is ever in the store
            for info in store.list_sessions(project):
                if info.session_id != old:
                    got = store.load(SessionKey(project, info.session_id)) or []
                    assert len([e for e in got if "forkedFrom" in e]) in (0, 2 + 2 * FILES)
            finish_pending(load_lineage(ws, settings=settings), store, Path(settings.run_dir))
            lineage = load_lineage(ws, settings=settings)
            files = {p.name: p.read_bytes() for p in ws.iterdir()}
            sessions = {i.session_id for i in store.list_sessions(project)}
            if lineage.steps[STEP] == old:
                assert not plan_left
                assert files == at_end and sessions == {old}
                outcomes.add("old")
            else:
                new = lineage.steps[STEP]
                assert files == at_point and sessions == {old, new}
                chain = active_chain(store.load(SessionKey(project, new)) or [])
                assert len(chain) == 2 + 2 * FILES  # the first turn, whole
                outcomes.add("recovered" if plan_left else "new")
        assert not (Path(settings.run_dir) / PLAN_FILE).exists()
    assert outcomes >= {"old", "recovered"}, outcomes
