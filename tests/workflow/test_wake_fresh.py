"""What a wake says when it starts fresh, and what ``flower status`` exits with."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from test_builtin import BRIEF, standard_model, wake
from typer.testing import CliRunner, Result

from flower.cli.main import build_app
from flower.testing.fake_api import FakeMessagesAPI


def flower(*args: str) -> Result:
    return CliRunner().invoke(build_app(), list(args))


def test_status_exits_0_only_when_a_wake_would_run(in_tmp: Path, fake: FakeMessagesAPI) -> None:
    fresh = flower("status")
    assert fresh.exit_code == 1, fresh.output  # nothing to carry on: flower needs words
    assert "下一步      没有可接着做的" in fresh.stdout
    assert flower("status", "--json").exit_code == 1
    fake.set_script(standard_model())
    asyncio.run(wake("写个 md 转 html 的脚本"))
    used = flower("status")
    assert used.exit_code == 0, used.output
    assert flower("status", "--json").exit_code == 0
    (in_tmp / "runs" / "sessions.db").write_text("not a database")
    broken = flower("status")
    assert broken.exit_code == 3, broken.output  # flower would stop: the store is unreadable
    assert broken.stdout.splitlines()[-1] == "下一步      会话存储能读之前,`flower` 不会运行"


def test_the_first_wake_never_says_it_picked_up_where_it_left_off(
    in_tmp: Path, fake: FakeMessagesAPI
) -> None:
    (in_tmp / "需求.md").write_text(BRIEF, encoding="utf-8")  # a brief written by hand
    fake.set_script(standard_model())
    done = flower("run", "--yes", "写个 md 转 html 的脚本")
    assert done.exit_code == 0, done.output
    lines = done.stdout.splitlines()
    assert lines[0] == f"-> 在 {in_tmp.resolve()} 开始新的一件事"
    assert "接上" not in done.stdout
    assert json.loads((in_tmp / "runs" / "lineage.json").read_text(encoding="utf-8"))["woke"] == 1
