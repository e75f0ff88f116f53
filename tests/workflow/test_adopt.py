"""A lineage that does not match is set aside, never overwritten, and ``flower adopt``
takes the old place back (issue 21 item 1)."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest
from test_builtin import standard_model, wake
from typer.testing import CliRunner, Result

from flower.cli.main import build_app
from flower.stores.lineage import load_lineage
from flower.testing.fake_api import FakeMessagesAPI

REQUEST = "写个 md 转 html 的脚本"


def flower(*args: str) -> Result:
    return CliRunner().invoke(build_app(), list(args))


def flower_en(*args: str) -> Result:
    """``flower`` speaking English: for the checks of adopt's own (English) words."""
    return CliRunner().invoke(build_app(), list(args), env={"FLOWER_LANG": "en"})


def lineage_of(ws: Path) -> dict[str, object]:
    return json.loads((ws / "runs" / "lineage.json").read_text(encoding="utf-8"))


def archived(ws: Path) -> list[Path]:
    return sorted((ws / "notes" / "archive").glob("*/lineage.json"))


@pytest.fixture
def moved(in_tmp: Path, fake: FakeMessagesAPI, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A workspace that woke once, then copied to another path (a container, a disk)."""
    old = in_tmp / "old"
    old.mkdir()
    monkeypatch.chdir(old)
    fake.set_script(standard_model())
    asyncio.run(wake(REQUEST))
    new = in_tmp / "new"
    shutil.copytree(old, new)
    monkeypatch.chdir(new)
    return new


def test_a_copied_directory_says_why_it_starts_fresh_and_keeps_the_old_lineage(
    moved: Path,
) -> None:
    before = (moved / "runs" / "lineage.json").read_bytes()
    old = str(moved.parent / "old")
    status = flower("status")
    assert f"从头开始    这里的谱系是为 {old} 写的" in status.stdout
    assert "`flower adopt`" in status.stdout
    assert (moved / "runs" / "lineage.json").read_bytes() == before  # status moves nothing

    done = flower("run", "--yes", "顺便支持代码块高亮")
    assert done.exit_code == 0, done.output
    lines = done.stdout.splitlines()
    assert lines[0] == f"-> 在 {moved} 开始新的一件事"
    [kept] = archived(moved)
    folder = kept.parent.relative_to(moved)
    assert lines[1] == (
        f"   从头开始:这里的谱系是为 {old} 写的(目录被移动或复制过);"
        f"旧的谱系在 {folder}/ · `flower adopt {folder}` 可以回到原来那段"
    )
    assert kept.read_bytes() == before  # byte for byte
    assert lineage_of(moved)["workspace"] == str(moved) and lineage_of(moved)["woke"] == 1


def test_adopt_takes_the_old_place_back_and_keeps_woke(moved: Path) -> None:
    old = lineage_of(moved)
    done = flower_en("adopt")
    assert done.exit_code == 0, done.output
    assert f"adopted the lineage of {moved.parent / 'old'}" in done.stdout
    now = lineage_of(moved)
    assert now == {**old, "workspace": str(moved)}  # same steps, same woke
    [kept] = archived(moved)  # the copied record, set aside before it was replaced
    assert json.loads(kept.read_text(encoding="utf-8")) == old
    state = json.loads(flower("status", "--json").stdout)
    assert state["waking"] is True and state["steps"] == old["steps"]
    assert state["checks"]["fresh"] is None
    again = flower("run", "--yes", "顺便支持代码块高亮")
    assert again.exit_code == 0, again.output
    assert again.stdout.splitlines()[0].startswith(f"<- 在 {moved} 接上上次")
    assert lineage_of(moved)["steps"]["干活"] == old["steps"]["干活"]  # type: ignore[index]
    assert lineage_of(moved)["woke"] == 2


def test_adopt_an_archive_after_a_fresh_start(moved: Path) -> None:
    old = lineage_of(moved)
    assert flower("run", "--yes", "另一件事").exit_code == 0
    [kept] = archived(moved)
    fresh_steps = lineage_of(moved)["steps"]
    done = flower("adopt", str(kept.parent.relative_to(moved)))
    assert done.exit_code == 0, done.output
    assert lineage_of(moved) == {**old, "workspace": str(moved)}
    # the fresh start's own lineage went aside too: nothing is lost either way
    own = [json.loads(p.read_text(encoding="utf-8")) for p in archived(moved) if p != kept]
    assert [record["steps"] for record in own] == [fresh_steps]


def test_adopt_by_the_old_path_and_refusal_when_sessions_are_missing(moved: Path) -> None:
    old = lineage_of(moved)
    (moved / "runs" / "sessions.db").unlink()
    refused = flower_en("adopt", str(moved.parent / "old"))
    assert refused.exit_code == 1
    assert "does not hold" in refused.output and "nothing changed" in refused.output
    assert lineage_of(moved) == old and archived(moved) == []
    shutil.copy(moved.parent / "old" / "runs" / "sessions.db", moved / "runs" / "sessions.db")
    done = flower("adopt", str(moved.parent / "old"))
    assert done.exit_code == 0, done.output
    assert lineage_of(moved)["steps"] == old["steps"]


def test_an_unreadable_lineage_is_set_aside_byte_for_byte(
    in_tmp: Path, fake: FakeMessagesAPI
) -> None:
    fake.set_script(standard_model())
    asyncio.run(wake(REQUEST))
    damaged = b'{"workspace": "/x", "woke": 3, "steps": {"\xe5\xb9\xb2'
    (in_tmp / "runs" / "lineage.json").write_bytes(damaged)
    status = flower("status")
    assert "从头开始    runs/lineage.json 读不了" in status.stdout
    done = flower("run", "--yes", "顺便支持代码块高亮")
    assert done.exit_code == 0, done.output
    assert "从头开始:runs/lineage.json 读不了;旧的谱系在" in done.stdout
    [kept] = archived(in_tmp)
    assert kept.read_bytes() == damaged
    assert lineage_of(in_tmp)["woke"] == 1


def test_sessions_gone_from_the_store_set_the_mapping_aside_for_when_they_are_back(
    in_tmp: Path, fake: FakeMessagesAPI
) -> None:
    fake.set_script(standard_model())
    asyncio.run(wake(REQUEST))
    old = lineage_of(in_tmp)
    store = in_tmp / "runs" / "sessions.db"
    shutil.copy(store, in_tmp / "backup.db")
    store.unlink()
    done = flower("run", "--yes", "顺便支持代码块高亮")
    assert done.exit_code == 0, done.output
    assert "从头开始:确认需求、设定目标、干活的会话已不在存储里" in done.stdout
    [kept] = archived(in_tmp)
    assert json.loads(kept.read_text(encoding="utf-8")) == old
    assert lineage_of(in_tmp)["woke"] == 2  # the brief and the goals go on: a wake like any
    shutil.copy(in_tmp / "backup.db", store)  # the store is back: so is the old place
    adopted = flower("adopt", str(kept.parent))
    assert adopted.exit_code == 0, adopted.output
    assert lineage_of(in_tmp)["steps"] == old["steps"]


def test_a_python_workflow_sets_a_moved_lineage_aside_too(moved: Path) -> None:
    old = lineage_of(moved)
    ctx = asyncio.run(wake("顺便支持代码块高亮"))
    fresh = ctx["_fresh"]
    assert fresh.reason == "moved" and fresh.moved_from == str(moved.parent / "old")
    [kept] = archived(moved)
    assert str(kept.parent) == fresh.archived
    assert json.loads(kept.read_text(encoding="utf-8")) == old
    assert load_lineage(moved).mismatch is None  # the next wake finds its own record


@pytest.mark.parametrize("backend", ["sqlite"])
def test_the_sql_lineage_store_reports_a_move_and_adopts(
    in_tmp: Path, fake: FakeMessagesAPI, monkeypatch: pytest.MonkeyPatch, backend: str
) -> None:
    monkeypatch.setenv("FLOWER_LINEAGE_BACKEND", backend)
    old = in_tmp / "old"
    old.mkdir()
    monkeypatch.chdir(old)
    fake.set_script(standard_model())
    first = asyncio.run(wake(REQUEST))
    new = in_tmp / "new"
    shutil.copytree(old, new)
    monkeypatch.chdir(new)
    state = json.loads(flower("status", "--json").stdout)
    assert state["checks"]["fresh"]["reason"] == "moved"
    assert state["checks"]["fresh"]["moved_from"] == str(old)
    done = flower("adopt")
    assert done.exit_code == 0, done.output
    again = load_lineage(new)
    assert again.found and again.steps == first["_sessions"] and again.woke == 1
    assert json.loads(flower("status", "--json").stdout)["waking"] is True


def test_adopt_here_from_python_takes_the_old_place_back(moved: Path) -> None:
    from flower.core.config import load_settings
    from flower.workflow.adopt import adopt_here

    old = lineage_of(moved)
    done = adopt_here(moved, None, load_settings().settings)
    assert done.moved_from == str(moved.parent / "old") and done.woke == old["woke"]
    assert lineage_of(moved) == {**old, "workspace": str(moved)}
