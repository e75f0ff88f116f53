"""``flower demo``: offline, killed midway, resumed, finished, exit 0."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from cli_run_helpers import FLOWER

BANNER = {
    "zh_CN": ("接上上次  需求已确认 · 目标 3 条 · 干活上下文 ", "<- 接上次 · 第 2 次唤醒"),
    "en": ("  brief confirmed · 3 goals · work context ", "<- carrying on · wake 2"),
}


@pytest.mark.parametrize("lang", sorted(BANNER))
def test_demo_runs_offline_without_a_key(in_tmp: Path, lang: str) -> None:
    """The demo plays in the language of the locale (here LANG, as a user's shell has it)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "FLOWER_"))}
    env.pop("LC_ALL", None)
    env.pop("LC_MESSAGES", None)
    env["LANG"] = f"{lang}.UTF-8"
    done = subprocess.run(
        [*FLOWER, "demo"], cwd=in_tmp, env=env, capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "2. Killed it (SIGKILL" in out
    second = out[out.index("3. Second run") :]
    banner, header = BANNER[lang]
    assert banner in second
    assert header in second
    assert "3. 达成" in second and "Result: sample.html starts with '<h1>笔记</h1>'" in out
    assert list(in_tmp.iterdir()) == []  # everything happened in its own temporary directory


def test_demo_piped_into_a_reader_that_stops_still_plays_to_the_end(in_tmp: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "FLOWER_"))}
    proc = subprocess.Popen(
        [*FLOWER, "demo"],
        cwd=in_tmp,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.readline()  # `flower demo | head -1`
    proc.stdout.close()
    stderr = proc.stderr.read()
    proc.stderr.close()
    assert proc.wait(180) == 0, stderr
    assert "Traceback" not in stderr and "BrokenPipe" not in stderr
