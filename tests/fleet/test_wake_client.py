"""A fleet wake's steps share one API client (bench/fleet.py found making one per step,
its SSL context above all, the largest share of a step's CPU in a busy worker)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import anthropic
import pytest

from flower.core.keys import project_key
from flower.demo.scripted_api import RecordedRequest, Reply, reply
from flower.fleet import worker
from flower.fleet.places import workspace_settings
from flower.fleet.wake import Wake, run_wake
from flower.testing.fake_api import FakeMessagesAPI

FLOWS = """
from flower import AgentSpec, Step, Workflow

agent = AgentSpec(name="three", instructions="three steps", max_turns=1)


def make():
    return Workflow([Step(f"s{i}", agent, f"step {i}") for i in (1, 2, 3)], retries=0)
"""


def test_a_wakes_steps_share_one_client_closed_when_it_ends(
    in_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[Any] = []
    closed: list[Any] = []

    class Counted(anthropic.AsyncAnthropic):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            made.append(self)

        async def close(self) -> None:
            closed.append(self)
            await super().close()

    monkeypatch.setattr(anthropic, "AsyncAnthropic", Counted)

    def model(req: RecordedRequest) -> Reply:
        return reply("ok")

    ws = in_tmp / "ws"
    ws.mkdir()
    (ws / "flows3.py").write_text(FLOWS, encoding="utf-8")
    with FakeMessagesAPI(model) as api:
        for name, value in api.env().items():
            monkeypatch.setenv(name, value)
        settings = workspace_settings(ws)
        store = worker._lease_store(settings)
        project = project_key(ws)
        got = store.take_lease(project, "test", 30.0)
        assert isinstance(got, tuple)
        wake = Wake("t1", ws, store, project, int(got[0]), 30.0)
        ran: list[str] = []

        async def through(name: str, live: Any, woke: int | None) -> Any:
            ran.append(name)
            return await live()

        try:
            result = run_wake(
                wake,
                {"workspace": str(ws), "workflow": "flows3:make"},
                said=None,
                settings=settings,
                database=f"sqlite:///{in_tmp / 'fleet.sqlite'}",
                log=io.StringIO(),
                through=through,
            )
        finally:
            store.close()
        assert len(api.requests) == 3
    assert result["ok"] and ran == ["s1", "s2", "s3"]
    assert len(made) == 1 and closed == made
