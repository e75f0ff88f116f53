"""A step whose session store goes away under it waits the outage out and carries on in
the same session; a worker cut off longer than the takeover drops its task when it is
back, and the worker that took the task over finishes it."""

from __future__ import annotations

from pathlib import Path

import pytest
from cut_proxy import CutProxy
from fleet_helpers import (
    HoldingModel,
    Workers,
    run,
    states,
    submit,
    transcript,
    wait_for,
    work_session,
)
from own_postgres import OwnPostgres

from flower.core.i18n import language
from flower.workflow.clarify import clarifier, goal_setter

ONE_WAKE = [0, 1, 1, 2, 3, 4]
"""The tool calls each work-step request had made, sorted, when one request of the work
step was answered but its answer could not be stored: that request, and it only, is
sent again. Each other answer was stored and is never asked for again."""


def _asked_once_each(model: HoldingModel) -> None:
    """The brief and the goals were asked for once: their steps were not run again."""
    with language("en"):
        assert model.requests_of(clarifier().instructions) == 1
        assert model.requests_of(goal_setter().instructions) == 1


def _one_chain(ws: Path, sid: str, env: dict[str, str]) -> None:
    chain = transcript(ws, sid, env)
    parents = [e.get("parentUuid") for e in chain if e.get("uuid")]
    assert parents and len(parents) == len(set(parents))  # no entry beside another


def test_a_step_whose_session_store_is_cut_waits_and_carries_on(
    root: Path,
    env: dict[str, str],
    workers: Workers,
    model: HoldingModel,
    own_postgres: OwnPostgres,
) -> None:
    """The fleet's database stays up (SQLite); the conversations are on a Postgres that
    stops while the work step waits for a reply, so the step cannot store it."""
    env["FLOWER_SESSIONS_URL"] = own_postgres.url
    model.quick = False
    model.hold_worker = True
    ws = root / "ws"
    workers.start("a")
    submit(root, env, ws, "o", model.script.request)
    wait_for(lambda: model.held >= 1, 90, "the wake never reached its work")
    sid = work_session(ws)
    own_postgres.stop()
    model.release()  # the reply comes while the store is down
    waiting = "task o: a database cannot be reached"
    wait_for(lambda: waiting in workers.output("a"), 60, "the step did not wait")
    own_postgres.start()
    found = wait_for(
        lambda: (got := states(root)).get("o") in ("done", "failed") and got, 120, "no end"
    )
    assert found == {"o": "done"}, workers.output("a")
    said = workers.output("a")
    assert said.count(waiting) == 1  # one status line for the outage, naming the store
    assert f"{waiting} (cannot reach PostgreSQL at 127.0.0.1:{own_postgres.port}" in said
    assert work_session(ws) == sid  # the same conversation, carried on
    _one_chain(ws, sid, env)
    _asked_once_each(model)
    assert model.worker_requests() == ONE_WAKE


def test_a_wake_whose_session_store_is_gone_before_its_steps_is_queued_again(
    root: Path,
    env: dict[str, str],
    workers: Workers,
    model: HoldingModel,
    own_postgres: OwnPostgres,
) -> None:
    """The store goes away after the worker took the lease and before the wake starts
    (it waited for a ``flower`` of the test's own to leave the workspace): the wake
    cannot open it, outside any step. DBOS keeps nothing of that run; the task is
    queued again, runs once the store is back, and finishes."""
    from flower.core.run_lock import run_lock

    env["FLOWER_SESSIONS_URL"] = own_postgres.url
    ws = root / "ws"
    ws.mkdir()
    workers.start("a")
    with run_lock(ws / "runs"):  # a plain flower working there
        done = run(root, env, "fleet", "submit", str(ws), model.script.request, "--id", "q")
        assert done.returncode == 0, done.stderr
        wait_for(lambda: "waiting for it" in workers.output("a"), 60, "no wait for the run")
        own_postgres.stop()
    waiting = "task q: a database cannot be reached"
    wait_for(lambda: waiting in workers.output("a"), 60, "the wake did not meet the outage")
    own_postgres.start()
    found = wait_for(
        lambda: (got := states(root)).get("q") in ("done", "failed") and got, 120, "no end"
    )
    assert found == {"q": "done"}, workers.output("a")
    assert "task q: its run here was lost; queued again" in workers.output("a")
    _asked_once_each(model)


@pytest.mark.parametrize("database", ["postgres"], indirect=True)
def test_a_worker_cut_off_past_the_takeover_drops_its_task_when_it_is_back(
    root: Path, env: dict[str, str], workers: Workers, model: HoldingModel, database: str
) -> None:
    """Worker a reaches the database (the fleet's and the sessions', one Postgres) through
    a proxy that the test cuts: a partition, a stays alive and waits. Worker b takes the
    task over; when a is back, its lease is gone: it drops the task, writes nothing, and
    b finishes it in the same session."""
    import sqlalchemy as sa

    url = sa.make_url(database)
    assert url.port is not None
    proxy = CutProxy(url.port)
    try:
        through = url.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False)
        env_a = {**env, "FLOWER_FLEET_DATABASE": through, "FLOWER_SESSIONS_URL": through}
        model.quick = False
        model.hold_worker = True
        ws = root / "ws"
        workers.start("a", env_a)
        submit(root, env, ws, "p", model.script.request)
        wait_for(lambda: model.held >= 1, 90, "the wake never reached its work")
        sid = work_session(ws)
        workers.start("b")
        proxy.cut()
        model.release()  # a's wake gets its reply and cannot store it
        wait_for(lambda: "task p: a database cannot be reached" in workers.output("a"), 60, "a")
        wait_for(lambda: "took over the tasks of a" in workers.output("b"), 60, "no takeover")
        # b holds the lease now, and waits for a's wake (alive, holding the run lock)
        wait_for(lambda: "waiting for it" in workers.output("b"), 60, "b never took the lease")
        proxy.restore()
        assert workers.procs["a"].wait(timeout=60) == 75, workers.output("a")
        log = (ws / "runs" / "fleet" / "p.log").read_text(encoding="utf-8")
        assert "lost the fleet lease" in log
        found = wait_for(
            lambda: (got := states(root)).get("p") in ("done", "failed") and got, 120, "no end"
        )
        assert found == {"p": "done"}, workers.output("b")
    finally:
        proxy.close()
    assert work_session(ws) == sid
    _one_chain(ws, sid, env)
    _asked_once_each(model)
    assert model.worker_requests() == ONE_WAKE
