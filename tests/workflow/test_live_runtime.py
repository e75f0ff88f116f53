"""The runtime a wake and ``flower once`` run on, built from Python."""

from __future__ import annotations

import asyncio
import io
import os
from pathlib import Path

from flower.core.config import Settings
from flower.core.records import SessionKey
from flower.runtime.live import LiveRuntime
from flower.stores.open import open_session_store
from flower.testing.fake_api import FakeMessagesAPI, text
from flower.workflow.live import Live
from flower.workflow.run_wake import live_runtime, run_once


def test_a_live_runtime_runs_in_the_workspace_on_the_store_and_gate_it_is_given(
    tmp_path: Path,
) -> None:
    settings = Settings(run_dir=str(tmp_path / "runs"))
    live = Live(io.StringIO(), rounds=1, work_step="once")
    with open_session_store(settings=settings) as store:
        rt = live_runtime(live, settings, tmp_path, trim=False, store=store)
        try:
            assert isinstance(rt, LiveRuntime) and rt.live is live
            assert rt.workspace == Path(os.path.realpath(tmp_path))
            assert rt.run_dir == tmp_path / "runs" and not rt.trim and rt.gate is None
            assert rt.store is store
        finally:
            rt.close()
        store.append(SessionKey("-p", "s"), [{"type": "user", "uuid": "u1"}])  # still open


def test_run_once_runs_one_agent_and_carries_on_a_session_by_its_prefix(
    fake: FakeMessagesAPI, in_tmp: Path, english: None
) -> None:
    settings = Settings()
    out = io.StringIO()
    live = Live(out, rich=False, rounds=1, work_step="once")
    live.woke = None
    fake.add(text("first answer"), text("second answer"))
    first = run_once(settings, "say one thing", live=live, drive=asyncio.run)
    assert first.ok and first.session_id and first.step == "once"
    carry_on = f'carry on by hand: flower once --resume {first.session_id} "..."'
    assert carry_on in out.getvalue()
    assert f"flower sessions show {first.session_id}" in out.getvalue()
    again = run_once(
        settings, "and another", live=live, drive=asyncio.run, resume=first.session_id[:8]
    )
    assert again.session_id == first.session_id
    assert fake.last_request.texts()[-1] == "and another"
    assert "say one thing" in fake.last_request.texts()
