"""One plan per wake: ``flower`` reads lineage once and opens the session store once, and
``flower status``, ``Workflow.run`` and the CLI's run read the same plan."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from test_builtin import standard_model, wake
from typer.testing import CliRunner, Result

from flower.cli.main import build_app
from flower.core.lineage import Lineage
from flower.testing.fake_api import FakeMessagesAPI


def flower(*args: str) -> Result:
    return CliRunner().invoke(build_app(), list(args))


def counting(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How many times lineage is loaded and a session store opened from here on."""
    import flower.stores.open as opening

    counts = {"lineage": 0, "store": 0}
    load, open_store = Lineage.load.__func__, opening.open_session_store  # type: ignore[attr-defined]

    def counted_load(cls: type[Lineage], *args: Any, **kwargs: Any) -> Lineage:
        counts["lineage"] += 1
        return load(cls, *args, **kwargs)  # type: ignore[no-any-return]

    def counted_open(*args: Any, **kwargs: Any) -> Any:
        counts["store"] += 1
        return open_store(*args, **kwargs)

    monkeypatch.setattr(Lineage, "load", classmethod(counted_load))
    monkeypatch.setattr(opening, "open_session_store", counted_open)
    return counts


def test_a_wake_reads_lineage_once_and_opens_the_store_once(
    in_tmp: Path, fake: FakeMessagesAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake.set_script(standard_model())
    asyncio.run(wake("写个 md 转 html 的脚本"))
    fake.set_script(standard_model())
    counts = counting(monkeypatch)
    done = flower("run", "--yes", "顺便支持代码块高亮")
    assert done.exit_code == 0, done.output
    assert counts == {"lineage": 1, "store": 1}


def test_status_and_the_run_skip_the_same_frozen_steps(in_tmp: Path, fake: FakeMessagesAPI) -> None:
    from flower.core.config import load_settings
    from flower.workflow.wake import plan_wake, skipped_steps

    fake.set_script(standard_model())
    asyncio.run(wake("写个 md 转 html 的脚本"))
    settings = load_settings().settings
    plan = plan_wake(in_tmp, "runs", settings=settings, read_only=True)
    plan.close()
    assert skipped_steps(plan.state, settings) == {"确认需求", "设定目标"}
    assert skipped_steps(plan.state, settings, said=True) == {"确认需求"}
    fake.set_script(standard_model())
    ctx = asyncio.run(wake(None))
    assert set(ctx["_skipped"]) == skipped_steps(plan.state, settings)
    fake.set_script(standard_model())
    ctx = asyncio.run(wake("also support tables"))
    assert set(ctx["_skipped"]) == skipped_steps(plan.state, settings, said=True)
