"""The wake prompt on a real terminal (a pseudo-terminal): Ctrl-C leaves with 130."""

from __future__ import annotations

import os
import pty
import select
import sys
import time
from pathlib import Path

import pytest

BRIEF = """## 背景
笔记。

## 要做什么
写一个 md 转 html 的脚本。

## 不做什么
不做 GUI。

## 怎样算完成
运行 md2html.py a.md 得到 a.html。
"""


def _read_until(fd: int, needle: str, seconds: float = 30.0) -> str:
    seen = b""
    deadline = time.monotonic() + seconds
    while needle.encode() not in seen:
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(f"never saw {needle!r}; saw {seen.decode(errors='replace')!r}")
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # the child closed the terminal
                break
            seen += chunk
    return seen.decode(errors="replace")


@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")
def test_ctrl_c_at_the_wake_prompt_exits_130_and_writes_nothing(in_tmp: Path) -> None:
    (in_tmp / "需求.md").write_text(BRIEF, encoding="utf-8")  # a used workspace
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FLOWER_", "ANTHROPIC_"))}
    env.update(ANTHROPIC_API_KEY="sk-test", FLOWER_PROBE_STRATEGY="none", COLUMNS="100")
    pid, fd = pty.fork()
    if pid == 0:  # the child: flower on the terminal
        script = Path(sys.executable).with_name("flower")
        os.execve(script, [str(script)], env)
    try:
        _read_until(fd, "/new")  # the wake prompt is on screen
        os.write(fd, b"\x03")  # Ctrl-C, turned into SIGINT by the terminal
        _, status = os.waitpid(pid, 0)
    finally:
        os.close(fd)
    assert os.waitstatus_to_exitcode(status) == 130
    assert not (in_tmp / "runs").exists()
