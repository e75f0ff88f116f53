"""One plan per wake: ``flower`` reads lineage once and opens the session store once, and
``flower status``, ``Workflow.run`` and the CLI's run read the same plan."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from test_builtin import standard_model, wake
from typer.testing import CliRunner, Result
from workflow_helpers import last_user_text

from flower.cli.main import build_app
from flower.core.lineage import Lineage
from flower.core.protocols import LineageStore, MergingLineageStore, MismatchLineageStore
from flower.core.records import LineageMismatch, LineageRecord
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


class CountingLineageStore:
    """The configured lineage store, counting the records read from it (``load``)."""

    def __init__(self, inner: LineageStore, counts: dict[str, int]) -> None:
        assert isinstance(inner, MergingLineageStore) and isinstance(inner, MismatchLineageStore)
        self.inner, self.counts = inner, counts

    def load(self, workspace: str) -> LineageRecord | None:
        self.counts["lineage"] += 1
        return self.inner.load(workspace)

    def save(self, record: LineageRecord) -> None:
        self.inner.save(record)

    def update(self, workspace: str, change: Any) -> LineageRecord:
        return self.inner.update(workspace, change)

    def mismatch(self, workspace: str) -> LineageMismatch | None:
        return self.inner.mismatch(workspace)

    def archive(self, into: Path, extra: Any = ()) -> Path | None:
        return self.inner.archive(into, extra)


def counting_stores(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """From here on, every lineage store opened is the real one wrapped to count its
    reads, and every session store opened is counted."""
    import flower.stores.lineage as lineages
    import flower.stores.open as opening

    counts = {"lineage": 0, "store": 0}
    open_lineage, open_store = lineages.open_lineage_store, opening.open_session_store

    def counted_lineage(*args: Any, **kwargs: Any) -> LineageStore:
        return CountingLineageStore(open_lineage(*args, **kwargs), counts)

    def counted_open(*args: Any, **kwargs: Any) -> Any:
        counts["store"] += 1
        return open_store(*args, **kwargs)

    monkeypatch.setattr(lineages, "open_lineage_store", counted_lineage)
    monkeypatch.setattr(opening, "open_session_store", counted_open)
    return counts


def test_new_reads_lineage_once_for_its_archive_and_its_wake(
    in_tmp: Path, fake: FakeMessagesAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake.set_script(standard_model())
    asyncio.run(wake("写个 md 转 html 的脚本"))
    model = standard_model()
    fake.set_script(model)
    counts = counting_stores(monkeypatch)
    done = flower("run", "--yes", "--new", "写个 csv 转 json 的脚本")
    assert done.exit_code == 0, done.output
    assert counts == {"lineage": 1, "store": 1}
    archived = list((in_tmp / "notes" / "archive").glob("*/lineage.json"))
    assert len(archived) == 1  # the last conversation went into the archive
    assert "写个 csv 转 json 的脚本" in last_user_text(model.seen["clarifier"][0])
    assert json.loads((in_tmp / "runs" / "lineage.json").read_bytes())["woke"] == 1


def test_a_python_wake_reads_lineage_once_with_its_step_names_unset(
    in_tmp: Path, fake: FakeMessagesAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    from flower.core.config import load_settings

    fake.set_script(standard_model())
    asyncio.run(wake("写个 md 转 html 的脚本"))
    settings = load_settings().settings
    assert settings.workflow.work_step is None  # builtin_workflow names the steps itself
    fake.set_script(standard_model())
    counts = counting_stores(monkeypatch)
    ctx = asyncio.run(wake("顺便支持代码块高亮", settings=settings))
    assert ctx["_ok"] and ctx["_woke"] == 2
    assert counts == {"lineage": 1, "store": 1}


def test_status_and_the_run_skip_the_same_frozen_steps(in_tmp: Path, fake: FakeMessagesAPI) -> None:
    from flower.core.config import load_settings
    from flower.workflow.plan import plan_wake, skipped_steps

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
