"""Killed mid-run, then ``flower`` again: the banner proves it remembered; ``--new`` archives."""

from __future__ import annotations

import json
import re
import signal
from collections.abc import Callable
from pathlib import Path

import pytest
from cli_run_helpers import REQUEST, Flower, ScriptedModel, kill_at_cut, lineage

from flower.core.display import human_tokens
from flower.core.i18n import _
from flower.core.keys import project_key
from flower.core.records import SessionKey
from flower.core.transcript import context_tokens
from flower.stores.open import open_session_store
from flower.testing.fake_api import FakeMessagesAPI
from flower.workflow import prompts


def store_url(ws: Path) -> str:
    return f"sqlite:///{ws / 'runs' / 'sessions.db'}"


def context_of(ws: Path, sid: str) -> str:
    with open_session_store(store_url(ws)) as store:
        usage = store.last_usage(SessionKey(project_key(ws), sid))
    assert usage
    return human_tokens(context_tokens(usage))


def entries_of(ws: Path, sid: str) -> list[dict[str, object]]:
    with open_session_store(store_url(ws)) as store:
        entries = store.load(SessionKey(project_key(ws), sid))
    assert entries is not None
    return entries


def kill_and_resume(flower: Flower, model: ScriptedModel, ws: Path, sig: signal.Signals) -> str:
    """Kill the first run with ``sig`` mid-work, run ``flower`` again, check the banner."""
    model.hold_worker = True
    sid, proc = kill_at_cut(flower, model, sig, "--yes", REQUEST)
    # SIGKILL kills; a lost terminal (SIGHUP) stops the run as Ctrl-C does, exit 128+1
    assert proc.returncode == (-sig if sig == signal.SIGKILL else 128 + sig)
    assert lineage(ws)["woke"] == 1
    size = context_of(ws, sid)

    done = flower()
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    banner = f"<- 在 {ws} 接上上次  需求已确认 · 目标 3 条 · 干活上下文 {size} · 第 2 次唤醒"
    assert lines[0] == banner
    assert lines[1].startswith("== 干活 ==")
    assert lines[1].endswith("  1/3  <- 接上次 · 第 2 次唤醒")
    assert lineage(ws)["steps"]["干活"] == sid and lineage(ws)["woke"] == 2
    assert (ws / "sample.html").read_text(encoding="utf-8").count("<h1>") == 1
    # the resumed worker saw its own earlier tool call: the same conversation went on
    resume = _(prompts.WORK_RESUME)
    woke = [r for r in model.seen if resume in r.texts()]
    assert woke and woke[0].texts()[-1] == resume
    calls = [b for m in woke[0].messages if m["role"] == "assistant" for b in m["content"]]
    assert {"type": "tool_use", "name": "Read"}.items() <= calls[-1].items()
    return sid


def test_sighup_mid_work_then_resumed_then_sessions_gone(
    flower: Flower, model: ScriptedModel, ws: Path
) -> None:
    kill_and_resume(flower, model, ws, signal.SIGHUP)  # the seed's lost terminal
    (ws / "runs" / "sessions.db").unlink()
    done = flower()
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"<- 在 {ws} 接上上次  需求已确认 · 目标 3 条 · 第 3 次唤醒"
    assert lines[1] == "   !! 谱系里的会话已不在存储里:确认需求、设定目标、干活 —— 这些步骤从头开始"
    # the mapping to the lost sessions is set aside, not overwritten: the way back is named
    [kept] = (ws / "notes" / "archive").glob("*/lineage.json")
    folder = kept.parent.relative_to(ws)
    assert lines[2] == (
        "   从头开始:确认需求、设定目标、干活的会话已不在存储里;"
        f"旧的谱系在 {folder}/ · `flower adopt {folder}` 可以回到原来那段"
    )
    assert lines[3].startswith("== 干活 ==") and lines[3].endswith("  1/3")


def test_sigkill_mid_work_then_resumed_then_new_archives_and_leaves_sessions(
    flower: Flower, model: ScriptedModel, ws: Path
) -> None:
    kill_and_resume(flower, model, ws, signal.SIGKILL)
    old = lineage(ws)
    before = {step: entries_of(ws, sid) for step, sid in old["steps"].items()}
    brief = (ws / "需求.md").read_bytes()

    done = flower("--yes", "--new", "另一件事")
    assert done.returncode == 0, done.stderr
    archives = list((ws / "notes" / "archive").iterdir())
    assert len(archives) == 1 and re.fullmatch(r"\d{8}-\d{6}", archives[0].name)
    archived = archives[0]
    assert sorted(p.name for p in archived.iterdir()) == ["lineage.json", "目标.md", "需求.md"]
    assert json.loads((archived / "lineage.json").read_text(encoding="utf-8")) == old
    assert (archived / "需求.md").read_bytes() == brief
    lines = done.stdout.splitlines()
    assert lines[0] == f"   上一段对话已归档到 notes/archive/{archived.name}/"
    assert lines[1] == f"-> 在 {ws} 开始新的一件事"
    # the session store is the history: every old transcript is still there, unchanged
    assert {step: entries_of(ws, sid) for step, sid in old["steps"].items()} == before
    fresh = lineage(ws)
    assert fresh["woke"] == 1 and set(fresh["steps"].values()).isdisjoint(old["steps"].values())


def test_ctrl_c_mid_run_keeps_lineage_and_transcript_valid(
    flower: Flower, model: ScriptedModel, ws: Path, api: FakeMessagesAPI
) -> None:
    model.hold_worker = True
    sid, proc = kill_at_cut(flower, model, signal.SIGINT, "--yes", REQUEST)
    assert proc.returncode == 130
    assert "在这里再跑 `flower` 就接着做" in proc.stdout
    assert lineage(ws)["steps"]["干活"] == sid
    done = flower("--yes")
    assert done.returncode == 0, done.stderr
    assert "干活上下文" in done.stdout.splitlines()[0]
    assert api.rejections == []  # every request, resumed ones included, was a valid conversation
    assert lineage(ws)["steps"]["干活"] == sid


def _running(pattern: str) -> bool:
    import subprocess

    return subprocess.run(["pgrep", "-f", pattern], capture_output=True).returncode == 0


def _wait_until(check: Callable[[], bool], seconds: float) -> bool:
    import time

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return check()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_terminated_run_stops_its_running_command_too(
    ws: Path, tmp_path: Path, sig: signal.Signals
) -> None:
    import os
    import subprocess

    from cli_run_helpers import FLOWER, flower_env

    from flower.testing.fake_api import FakeMessagesAPI, reply, text, tool_use

    marker = f"sleep 31.{sig.value}{os.getpid()}"  # a number only this test sleeps
    script = [reply(tool_use("Bash", {"command": marker})), text("done")]
    with FakeMessagesAPI(script) as api:
        proc = subprocess.Popen(
            [*FLOWER, "once", "go"],
            cwd=ws,
            env=flower_env(api, tmp_path),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            assert _wait_until(lambda: _running(marker), 30), "the command never started"
            proc.send_signal(sig)
            assert proc.wait(30) == 128 + sig
        finally:
            if proc.poll() is None:
                proc.kill()
        assert _wait_until(lambda: not _running(marker), 10), "the command outlived flower"


def test_a_second_flower_in_the_same_directory_waits_its_turn(
    english: None, flower: Flower, model: ScriptedModel, ws: Path
) -> None:
    from cli_run_helpers import wait_for_cut

    model.hold_worker = True
    first = flower.spawn("--yes", REQUEST)
    try:
        sid = wait_for_cut(first, model, ws)
        second = flower("--yes", "加一句")
        assert second.returncode == 1
        assert f"another flower (pid {first.pid}) is running here" in second.stderr
        assert second.stdout == ""  # refused before its banner: nothing shown as woken
        assert lineage(ws)["woke"] == 1  # the refused one counted no wake
        renewed = flower("--yes", "--new", "另起炉灶")
        assert renewed.returncode == 1 and "is running here" in renewed.stderr
        assert not (ws / "notes" / "archive").exists()  # --new moved nothing
    finally:
        model.release()
    _, err = first.communicate(timeout=60)
    assert first.returncode == 0, err
    assert lineage(ws)["steps"]["work"] == sid  # an English run's key
    again = flower("--yes", "加一句")  # once the first is done, the next one runs
    assert again.returncode == 0, again.stderr
