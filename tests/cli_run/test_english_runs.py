"""English runs are English (issue 29 item 9): what an English run prints and writes
holds no Chinese the user did not write, step keys included; a directory switched
between languages still resumes, keeping the keys it has."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest
from cli_run_helpers import Flower, ScriptedModel, lineage

from flower.core.i18n import language
from flower.core.manifest import read_manifest
from flower.testing.fake_api import reply
from flower.workflow.goal import judge_agent

REQUEST = "write an md to html script"
CHINESE = re.compile(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]|——")


@pytest.fixture
def model(english: None) -> ScriptedModel:
    """The demo's model speaking English, as the English flowers it answers."""
    return ScriptedModel()


def _chinese_in(text: str) -> list[str]:
    return [line for line in text.splitlines() if CHINESE.search(line)]


def _chinese_in_files(ws: Path) -> dict[str, list[str]]:
    """Every file flower wrote in the workspace (the run directory's database's rows
    included) that holds Chinese, with the lines that do."""
    found: dict[str, list[str]] = {}
    for path in sorted(ws.rglob("*")):
        if not path.is_file() or path.name.startswith("sessions.db"):
            continue
        lines = _chinese_in(path.read_bytes().decode("utf-8", "replace"))
        if lines:
            found[str(path.relative_to(ws))] = lines
    with sqlite3.connect(ws / "runs" / "sessions.db") as db:
        for (table,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
            for row in db.execute(f'SELECT * FROM "{table}"'):
                lines = _chinese_in(" ".join(str(v) for v in row))
                if lines:
                    found.setdefault(f"sessions.db:{table}", []).extend(lines)
    return found


def test_an_english_run_prints_and_writes_no_chinese(
    flower: Flower, model: ScriptedModel, ws: Path
) -> None:
    # the judge leaves goal 2 unmet and says nothing of goal 3 (no verdict on it): the
    # work step is sent back with both, in English
    verdicts = ["1. met — ok\n2. not met — not run"]
    with language("en"):
        judge = judge_agent().instructions
    model.override(
        judge, lambda req: reply(verdicts.pop() if verdicts else "1. met\n2. met\n3. met")
    )
    traced = {**flower.env, "OTEL_TRACES_EXPORTER": "console"}
    done = flower("--yes", REQUEST, env=traced)
    assert done.returncode == 0, done.stdout + done.stderr
    assert _chinese_in(done.stdout) == [] and _chinese_in(done.stderr) == []
    assert '"step work"' in done.stderr  # the trace's span names the step in English
    assert set(lineage(ws)["steps"]) == {"confirm the brief", "set goals", "work"}
    assert [r["step"] for r in read_manifest(ws / "runs")] == [
        "confirm the brief",
        "set goals",
        "work",
        "work·judge#1",
        "work#round2",
        "work·judge#2",
    ]
    sent_back = [r for r in model.seen if "not met yet" in " ".join(r.texts())]
    assert sent_back, "the work step was never sent back"
    told = " ".join(sent_back[0].texts())
    assert "2. " in told and " — not run" in told and " — the judge gave no verdict" in told

    # the sessions are gone from the store: the wake says so, in English
    (ws / "runs" / "sessions.db").unlink()
    again = flower("--yes", "also count the lines")
    assert again.returncode in (0, 4), again.stdout + again.stderr
    assert "these steps start over" in again.stdout
    assert _chinese_in(again.stdout) == [] and _chinese_in(again.stderr) == []
    assert _chinese_in(flower("status").stdout) == []
    assert _chinese_in_files(ws) == {}


def test_a_directory_switched_between_languages_resumes_with_the_keys_it_has(
    flower: Flower, model: ScriptedModel, ws: Path
) -> None:
    assert flower("--yes", REQUEST).returncode == 0
    english = lineage(ws)["steps"]
    chinese = {**flower.env, "FLOWER_LANG": "zh_CN"}
    woke = flower(env=chinese)  # the model answers English agents only: goals are left
    assert woke.returncode in (0, 4), woke.stdout + woke.stderr
    assert woke.stdout.splitlines()[0].startswith(f"<- 在 {ws} 接上上次")
    assert "== 干活 " in woke.stdout and "<- 接上次 · 第 2 次唤醒" in woke.stdout
    after = lineage(ws)["steps"]
    assert after == english  # the same sessions, under the keys they were written with
    # this wake's runs go under the key lineage has, the judge's mark in its language
    steps = [r["step"] for r in read_manifest(ws / "runs")][4:]
    assert steps[:2] == ["work", "work·判定#1"], steps
    status = flower("status", env=chinese).stdout.splitlines()
    assert "下一步      `flower` 接着做 干活(第 3 次唤醒)" in status
