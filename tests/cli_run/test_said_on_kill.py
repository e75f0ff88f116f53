"""Words said to a run killed after its banner, before lineage recorded them, are kept."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

from cli_run_helpers import REQUEST, Flower, ScriptedModel, lineage

# flower as the console script runs it, killed (SIGKILL: no cleanup of any kind) as the
# workflow starts: after the banner, before lineage has been read or written
KILLED_AS_THE_WORKFLOW_STARTS = """\
import os, signal
import flower.workflow.base as base

async def killed(self, rt, resume_from=None, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)

base.Workflow.run = killed
from flower.cli.main import main
main()
"""


def killed_run(flower: Flower, *args: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-c", KILLED_AS_THE_WORKFLOW_STARTS, *args],
        cwd=flower.cwd,
        env=flower.env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    return proc


def said_to_the_model(model: ScriptedModel, words: str) -> int:
    """How often ``words`` came in a request's newest user words (the history each
    request repeats and tool results are not counted)."""
    count = 0
    for req in model.seen:
        last = req.messages[-1]
        if last["role"] != "user":
            continue
        content = last["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        count += sum(b["text"].count(words) for b in blocks if b.get("type") == "text")
    return count


def test_a_first_request_survives_a_kill_before_lineage(
    flower: Flower, model: ScriptedModel, ws: Path
) -> None:
    killed = killed_run(flower, "--yes", REQUEST)
    assert killed.stdout.splitlines()[0] == f"-> 在 {ws} 开始新的一件事"
    assert not (ws / "runs" / "lineage.json").exists()

    status = flower("status")
    assert status.returncode == 0, status.stderr
    assert f"说过        {REQUEST}(被打断的运行没来得及记下)" in status.stdout
    assert f"下一步      `flower` 从被中止的运行留下的请求开始:{REQUEST}" in status.stdout

    done = flower("--yes")  # nothing said now, no terminal: it carries on with the request
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"-> 在 {ws} 开始新的一件事"
    assert lines[1] == f"   !! 上次运行在记下你的话之前被打断,这次接着传下去:{REQUEST}"
    assert said_to_the_model(model, REQUEST) >= 1
    assert (ws / "需求.md").exists() and lineage(ws)["woke"] == 1
    assert not (ws / "runs" / "said.json").exists()


def test_words_said_on_a_wake_survive_a_kill_and_are_said_once(
    flower: Flower, model: ScriptedModel, ws: Path
) -> None:
    first = flower("--yes", REQUEST)
    assert first.returncode == 0, first.stderr
    killed_run(flower, "--yes", "标题加上锚点")
    assert lineage(ws)["woke"] == 1  # the killed wake was never counted
    status = flower("status").stdout
    assert "说过        标题加上锚点(被打断的运行没来得及记下)" in status
    # new words: the goals are derived again before the work goes on
    assert "下一步      `flower` 接着做 设定目标、干活(第 2 次唤醒)" in status

    model.seen.clear()
    done = flower("--yes")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1].endswith("这次接着传下去:标题加上锚点")
    assert said_to_the_model(model, "标题加上锚点") >= 1
    record = lineage(ws)
    assert record["woke"] == 2 and "unheard" not in record.get("said", {})
    assert "标题加上锚点" in (ws / "需求.md").read_text(encoding="utf-8")

    model.seen.clear()
    again = flower("--yes")  # heard: not passed on again
    assert again.returncode == 0, again.stderr
    assert said_to_the_model(model, "标题加上锚点") == 0
    assert "接着传下去" not in again.stdout


def test_new_archives_what_a_killed_run_left_unrecorded(
    flower: Flower, model: ScriptedModel, ws: Path
) -> None:
    assert flower("--yes", REQUEST).returncode == 0
    killed_run(flower, "--yes", "标题加上锚点")
    done = flower("--yes", "--new", "另一件事")
    assert done.returncode == 0, done.stderr
    (archived,) = (ws / "notes" / "archive").iterdir()
    kept = json.loads((archived / "said.json").read_text(encoding="utf-8"))
    assert [said["text"] for said in kept] == ["标题加上锚点"]
    assert "标题加上锚点" not in (ws / "需求.md").read_text(encoding="utf-8")


def test_words_typed_at_the_wake_prompt_survive_a_kill_and_are_not_asked_for_again(
    flower: Flower, model: ScriptedModel, ws: Path
) -> None:
    import pexpect
    from seed_strings import WAKE_PROMPT

    assert flower(REQUEST).returncode == 0

    def spawn(*argv: str) -> pexpect.spawn:
        return pexpect.spawn(
            argv[0], list(argv[1:]), cwd=str(ws), env=flower.env, encoding="utf-8", timeout=90
        )

    killed = spawn(sys.executable, "-c", KILLED_AS_THE_WORKFLOW_STARTS)
    killed.expect_exact(WAKE_PROMPT)
    killed.sendline("顺便支持代码块高亮")
    killed.expect(pexpect.EOF)
    killed.close()
    assert killed.signalstatus == signal.SIGKILL

    again = spawn(sys.executable, "-m", "flower.cli.main")
    index = again.expect_exact(["这次接着传下去:顺便支持代码块高亮", WAKE_PROMPT])
    assert index == 0  # what was typed is passed on, not asked for again
    again.expect(pexpect.EOF)
    again.close()
    assert again.exitstatus == 0, again.before
    assert "顺便支持代码块高亮" in (ws / "需求.md").read_text(encoding="utf-8")


def test_words_a_killed_run_left_go_before_what_is_said_now(
    flower: Flower, model: ScriptedModel, ws: Path
) -> None:
    assert flower("--yes", REQUEST).returncode == 0
    killed_run(flower, "--yes", "标题加上锚点")
    model.seen.clear()
    done = flower("--yes", "再加个目录")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1].endswith("这次接着传下去:标题加上锚点")
    supplement = (ws / "需求.md").read_text(encoding="utf-8").split("## 补充", 1)[1]
    assert supplement.index("标题加上锚点") < supplement.index("再加个目录")
    assert said_to_the_model(model, "标题加上锚点") >= 1
    assert said_to_the_model(model, "再加个目录") >= 1


def test_bytes_that_are_not_utf8_in_what_is_said_are_kept_as_replacement_characters(
    flower: Flower, model: ScriptedModel, ws: Path
) -> None:
    # a shell passes them through; Python holds them as lone surrogates, which neither
    # lineage nor the journal nor the API could carry
    done = flower("--yes", "写个脚本 \udcff")
    assert done.returncode == 0, done.stderr
    assert said_to_the_model(model, "写个脚本 \ufffd") >= 1
    assert not (ws / "runs" / "said.json").exists()  # recorded, then let go
    assert "request" not in lineage(ws)


def test_on_a_first_run_what_is_said_now_replaces_a_request_a_killed_run_left(
    flower: Flower, model: ScriptedModel, ws: Path
) -> None:
    killed_run(flower, "--yes", "删掉 data/ 下的所有文件")
    done = flower("--yes", REQUEST)  # as with a request kept in lineage: the new one wins
    assert done.returncode == 0, done.stderr
    assert "接着传下去" not in done.stdout
    assert said_to_the_model(model, REQUEST) >= 1
    assert said_to_the_model(model, "删掉 data/") == 0
    assert not (ws / "runs" / "said.json").exists()
