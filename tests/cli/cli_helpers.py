"""Helpers shared by the CLI tests: sample transcripts, an in-process runner, subprocesses."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from typer.testing import CliRunner, Result

from flower.cli.main import build_app

ROOT = Path(__file__).resolve().parents[2]


def transcript(session_id: str, cwd: str, turns: int = 2, prefix: str = "") -> list[dict[str, Any]]:
    """A small Claude-Code-shaped conversation: prompt, tool call, tool result, reply."""
    entries: list[dict[str, Any]] = []
    parent = None
    for turn in range(turns):
        base = {"sessionId": session_id, "cwd": cwd, "isSidechain": False}
        user = {
            **base,
            "type": "user",
            "uuid": f"{prefix}u{turn}",
            "parentUuid": parent,
            "message": {"role": "user", "content": f"question {turn} 你好"},
        }
        call = {
            **base,
            "type": "assistant",
            "uuid": f"{prefix}a{turn}",
            "parentUuid": user["uuid"],
            "message": {
                "id": f"msg_{prefix}{turn}",
                "role": "assistant",
                "model": "m",
                "content": [
                    {"type": "text", "text": f"looking {turn}"},
                    {
                        "type": "tool_use",
                        "id": f"t{turn}",
                        "name": "Bash",
                        "input": {"command": "ls -la"},
                    },
                ],
                "usage": {"input_tokens": 100 + turn, "output_tokens": 5},
            },
        }
        result = {
            **base,
            "type": "user",
            "uuid": f"{prefix}r{turn}",
            "parentUuid": call["uuid"],
            "message": {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": f"t{turn}",
                        "content": "a.txt\nb.txt",
                        "is_error": False,
                    }
                ],
            },
        }
        entries += [user, call, result]
        parent = result["uuid"]
    return entries


class Cli:
    """Runs the flower CLI in-process against one store URL."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.runner = CliRunner()

    def __call__(self, *args: str, input: str | None = None, url: bool = True) -> Result:
        argv = (["--sessions-url", self.url] if url else []) + list(args)
        return self.runner.invoke(build_app(), argv, input=input)


def run_flower(
    *args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """The real console entry point in a subprocess (exit codes, start-up, plugins)."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("FLOWER_")}
    full_env["FLOWER_LANG"] = os.environ.get("FLOWER_LANG", "zh_CN")  # see tests/conftest.py
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "flower.cli.main", *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
