"""The runtime a wake and ``flower once`` run on, built from Python."""

from __future__ import annotations

import io
import os
from pathlib import Path

from flower.core.config import Settings
from flower.core.records import SessionKey
from flower.runtime.live import LiveRuntime
from flower.stores.open import open_session_store
from flower.workflow.live import Live
from flower.workflow.run_wake import live_runtime


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
