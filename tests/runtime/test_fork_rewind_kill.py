"""kill -9 in the middle of a fork or a rewind: the old state or the new one, never half.

The child is forked from the test process (warm imports) and killed with SIGKILL at a
moment spread over twice the time the whole operation takes on this machine (so most
kills land while it runs, a few after it ended). A loaded machine can take far more or
less time than it did when timed, and leave a window with no kill: then more kills
follow, narrowed toward the outcome not seen yet (:func:`_kill_until_seen`).
"""

from __future__ import annotations

import os
import random
import signal
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple

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
MOST = 10 * TRIALS
"""Kills at most: an outcome still not seen after that many is taken to be impossible."""
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


class Kill(NamedTuple):
    moment: float
    outcome: str
    finished: bool
    """The work had ended before the kill came."""


def _toward(
    missing: str, order: Sequence[str], kills: Sequence[Kill], longest: float, rng: random.Random
) -> float:
    """A moment for a kill that could end in ``missing``: between the latest kill that
    ended in an outcome ``order`` puts before it and the earliest that ended in one after
    it or came after the work ended (when none did, up to twice as far as the latest)."""
    at = order.index(missing)
    before = [k.moment for k in kills if order.index(k.outcome) < at]
    after = [k.moment for k in kills if order.index(k.outcome) > at or k.finished]
    low = max(before, default=0.0)
    high = min(after) if after else max(2 * low, longest)
    low, high = sorted((low, high))  # under load a later kill can end earlier
    return rng.uniform(low, high)


def _kill_until_seen(
    order: Sequence[str],
    expected: set[str],
    longest: float,
    rng: random.Random,
    trial: Callable[[int, float], tuple[str, bool]],
) -> None:
    """Run ``trial(n, moment)`` (which kills ``moment`` seconds in and says the outcome
    and whether the work had ended) at the TRIALS moments of :func:`_moment`, then, while
    an ``expected`` outcome was never seen, at moments narrowed toward it (MOST kills in
    all at most); fails naming the outcome no kill reached. ``order``: every outcome, in
    the order time brings them."""
    kills: list[Kill] = []
    while len(kills) < MOST:
        missing = [o for o in order if o in expected - {k.outcome for k in kills}]
        if len(kills) >= TRIALS and not missing:
            break
        if len(kills) < TRIALS:
            moment = _moment(len(kills), longest, rng)
        else:
            moment = _toward(missing[0], order, kills, longest, rng)
        kills.append(Kill(moment, *trial(len(kills), moment)))
    seen = {k.outcome for k in kills}
    assert expected <= seen, (
        f"no kill of {len(kills)} ended in {sorted(expected - seen)} (seen: {sorted(seen)};"
        f" the operation took {longest:.3f}s when timed)"
    )


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

    def trial(n: int, moment: float) -> tuple[str, bool]:
        target = SessionKey(key.project_key, f"fork-{n}")
        finished = _child(forking(target.session_id), moment)
        with open_session_store(url) as store:
            got = store.load(target)
            listed = {i.session_id for i in store.list_sessions(key.project_key)}
            if got is None:  # no fork at all: not even an empty transcript is listed
                assert target.session_id not in listed
                return "none", finished
            assert target.session_id in listed
            assert len(got) == expected, f"half a fork: {len(got)} of {expected} entries"
            assert len(active_chain(got)) == len(entries)
            assert fork(store, key, session_id=target.session_id) == target  # idempotent
            assert len(store.load(target) or []) == expected
            assert store.load(key) == entries
            return "whole", finished

    _kill_until_seen(["none", "whole"], {"none", "whole"}, longest, random.Random(7), trial)


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

    def trial(n: int, moment: float) -> tuple[str, bool]:
        settings, ws, old, at_point, at_end = _worked(in_tmp / f"t{n}")
        finished = _child(rewinding(settings, ws), moment)
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
                outcome = "old"
            else:
                new = lineage.steps[STEP]
                assert files == at_point and sessions == {old, new}
                chain = active_chain(store.load(SessionKey(project, new)) or [])
                assert len(chain) == 2 + 2 * FILES  # the first turn, whole
                outcome = "recovered" if plan_left else "new"
        assert not (Path(settings.run_dir) / PLAN_FILE).exists()
        return outcome, finished

    _kill_until_seen(
        ["old", "recovered", "new"], {"old", "recovered"}, longest, random.Random(11), trial
    )
