"""``flower rewind`` in a used directory, with the real console script and the demo model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_run_helpers import REQUEST, Flower, lineage

from flower.core.keys import project_key
from flower.core.records import SessionKey
from flower.stores.open import open_session_store


def _sessions(ws: Path) -> set[str]:
    with open_session_store(f"sqlite:///{ws / 'runs' / 'sessions.db'}") as store:
        return {i.session_id for i in store.list_sessions(project_key(ws))}


def _load(ws: Path, sid: str) -> list[dict[str, object]]:
    with open_session_store(f"sqlite:///{ws / 'runs' / 'sessions.db'}") as store:
        return store.load(SessionKey(project_key(ws), sid)) or []


@pytest.mark.slow
def test_rewind_lists_forks_and_the_next_wake_says_so(flower: Flower, ws: Path) -> None:
    assert flower("--yes", REQUEST).returncode == 0
    assert flower().returncode == 0  # a wake: the work step gets a second user turn
    old = lineage(ws)["steps"]["干活"]
    before = _load(ws, old)

    listed = flower("rewind", "--list", "--json")
    assert listed.returncode == 0, listed.stderr
    turns = json.loads(listed.stdout)["turns"]
    assert len(turns) == 2
    assert turns[-1]["turns_back"] == 1 and turns[0]["turns_back"] is None
    assert all(t["timestamp"] for t in turns)
    english = {**flower.env, "FLOWER_LANG": "en"}  # for the checks of rewind's own words
    table = flower("rewind", "--list", env=english).stdout
    assert "N  TIME" in table and "需求.md" in table

    done = flower("rewind", env=english)
    assert done.returncode == 0, done.stderr
    assert f"the old session {old} stays" in done.stdout
    new = lineage(ws)["steps"]["干活"]
    assert new != old and _sessions(ws) >= {old, new}
    assert _load(ws, old) == before

    shown = flower("sessions", "list", "--forks")
    assert any(new in line and old in line for line in shown.stdout.splitlines())
    woke = flower()
    assert woke.returncode == 0, woke.stderr
    assert "退回 1 轮" in woke.stdout.splitlines()[0]
    assert "退回" not in flower().stdout.splitlines()[0]  # said on the wake after it only


@pytest.mark.slow
def test_rewind_bad_input_is_exit_2_and_writes_nothing(flower: Flower, ws: Path) -> None:
    english = {**flower.env, "FLOWER_LANG": "en"}  # for the checks of rewind's own words
    nothing = flower("rewind", env=english)
    assert nothing.returncode == 2
    assert "nothing to rewind: no lineage" in nothing.stderr
    assert not (ws / "runs").exists()  # not even the run directory's lock
    assert flower("--yes", REQUEST).returncode == 0
    record, sessions = lineage(ws), _sessions(ws)
    too_far = flower("rewind", "5", env=english)
    assert too_far.returncode == 2
    assert "1 user turn(s): it can go back at most 0" in too_far.stderr
    assert flower("rewind", "0").returncode == 2
    assert lineage(ws) == record and _sessions(ws) == sessions


@pytest.mark.slow
def test_rewind_typed_again_after_a_kill_finishes_the_cut_short_one_and_stops(
    flower: Flower, ws: Path
) -> None:
    assert flower("--yes", REQUEST).returncode == 0
    assert flower().returncode == 0
    assert flower().returncode == 0  # three user turns in the work step
    before = (ws / "runs" / "lineage.json").read_bytes()
    old = lineage(ws)["steps"]["干活"]
    done = flower("rewind", "1", "--json")
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    assert plan["cut_short"] is False and plan["old_session"] == old
    # killed after the fork, before lineage pointed at it: the plan is still there
    (ws / "runs" / "lineage.json").write_bytes(before)
    del plan["cut_short"]
    (ws / "runs" / "rewind.json").write_text(json.dumps(plan), encoding="utf-8")

    english = {**flower.env, "FLOWER_LANG": "en"}  # for the checks of rewind's own words
    status = flower("status", env=english).stdout.splitlines()
    assert (
        "rewind      work 1 turn back, cut short: the next `flower` or `flower rewind` "
        f"finishes it first (now session {plan['new_session']})"
    ) in status
    again = flower("rewind", "1", env=english)
    assert again.returncode == 0, again.stderr
    assert lineage(ws)["steps"]["干活"] == plan["new_session"]
    assert not (ws / "runs" / "rewind.json").exists()
    assert (
        f"finished the rewind of work a crash cut short (1 turn back): now session "
        f"{plan['new_session']}" in again.stdout
    )
    assert "nothing more was rewound; to go 1 more turn back, type `flower rewind 1` again" in (
        again.stdout
    )
    turns = json.loads(flower("rewind", "--list", "--json").stdout)["turns"]
    assert len(turns) == 2  # three, one undone: not two undone
    assert json.loads(flower("status", "--json").stdout)["checks"]["rewound"] == 1
