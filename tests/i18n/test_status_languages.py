"""``flower status`` says its facts in the chosen language; ``--json`` is the same bytes
in every language."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from flower.cli.main import build_app


def flower(lang: str, *args: str, **env: str) -> Result:
    """``flower ARGS`` in-process, in ``lang`` (FLOWER_LANG, as a user sets it)."""
    return CliRunner().invoke(build_app(), list(args), env={"FLOWER_LANG": lang, **env})


@pytest.fixture
def used(in_tmp: Path) -> Path:
    """A workspace woken twice whose work session is gone from the store."""
    lineage = in_tmp / "runs" / "lineage.json"
    lineage.parent.mkdir()
    lineage.write_text(
        json.dumps({"workspace": str(in_tmp.resolve()), "woke": 2, "steps": {"干活": "gone-1"}}),
        encoding="utf-8",
    )
    lineage.chmod(0o600)
    return in_tmp


def test_status_of_a_new_workspace_in_both_languages(in_tmp: Path) -> None:
    en = flower("en", "status")
    zh = flower("zh_CN", "status")
    assert en.exit_code == zh.exit_code == 1
    assert en.stdout.splitlines() == [
        f"workspace   {in_tmp.resolve()}",
        "lineage     none in runs/lineage.json (missing, unreadable or another workspace)",
        "brief       brief.md not confirmed",
        "goals       none yet (goals.md does not exist)",
        'next        nothing to resume: flower "what to do" starts something',
    ]
    assert zh.stdout.splitlines() == [
        f"工作目录    {in_tmp.resolve()}",
        "谱系        runs/lineage.json 里没有(不存在、读不了或属于别的工作目录)",
        "需求        需求.md 未确认",
        "目标        还没有(目标.md 不存在)",
        '下一步      没有可接着做的:flower "要做什么" 开始一件事',
    ]


def test_status_of_a_used_workspace_in_both_languages(used: Path) -> None:
    en = flower("en", "status")
    zh = flower("zh_CN", "status")
    assert en.exit_code == zh.exit_code == 0
    assert en.stdout.splitlines()[1:] == [
        "lineage     runs/lineage.json, woken 2 times",
        "fresh       the sessions of work are gone from the store: the next run sets lineage "
        "aside into notes/archive/ (`flower adopt` takes it back once they are restored)",
        "brief       brief.md not confirmed",
        "goals       none yet (goals.md does not exist)",
        "step        work: gone-1 (gone from the store: starts fresh)",
        "next        `flower` starts over in new sessions (the recorded ones are gone); with "
        "nothing said, it first looks at the workspace",
    ]
    assert zh.stdout.splitlines()[1:] == [
        "谱系        runs/lineage.json, 唤醒 2 次",
        "从头开始    干活的会话已不在存储里:下次运行把谱系移到 notes/archive/"
        "(会话恢复后,`flower adopt` 可以把它接回来)",
        "需求        需求.md 未确认",
        "目标        还没有(目标.md 不存在)",
        "步骤        干活:gone-1(已不在存储里:从头开始)",
        "下一步      `flower` 用新的会话从头开始(记录过的会话已不在了);什么都没说时,先看看工作目录",
    ]


def test_status_names_a_lineage_store_in_both_languages(in_tmp: Path) -> None:
    en = flower("en", "status", FLOWER_LINEAGE_BACKEND="sqlite")
    zh = flower("zh_CN", "status", FLOWER_LINEAGE_BACKEND="sqlite")
    assert en.stdout.splitlines()[1] == (
        "lineage     none in the 'sqlite' lineage store (missing, unreadable or another workspace)"
    )
    assert zh.stdout.splitlines()[1] == (
        "谱系        'sqlite' 谱系存储 里没有(不存在、读不了或属于别的工作目录)"
    )


@pytest.mark.parametrize("backend", ["json", "sqlite"])
def test_status_json_is_the_same_bytes_in_every_language(used: Path, backend: str) -> None:
    en = flower("en", "status", "--json", FLOWER_LINEAGE_BACKEND=backend)
    zh = flower("zh_CN", "status", "--json", FLOWER_LINEAGE_BACKEND=backend)
    assert en.exit_code == zh.exit_code
    assert en.stdout_bytes == zh.stdout_bytes
    assert json.loads(en.stdout)["woke"] == (2 if backend == "json" else 0)
