"""The postgres backend without psycopg installed: one line naming the extra, exit 1."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

# Run flower's CLI in a Python where importing psycopg fails, as it does in an
# environment installed without the `postgres` extra.
WITHOUT_PSYCOPG = """
import runpy, sys

class NoPsycopg:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("psycopg", "psycopg_c", "psycopg_binary", "psycopg2"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NoPsycopg())
sys.argv = ["flower", *sys.argv[1:]]
runpy.run_module("flower.cli.main", run_name="__main__")
"""
URL = "postgresql://flower:s3cret@127.0.0.1:5432/test"


def flower_without_psycopg(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FLOWER_", "ANTHROPIC_"))}
    env.update(FLOWER_SESSIONS_URL=URL, FLOWER_PROBE_STRATEGY="none", ANTHROPIC_API_KEY="k")
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_PSYCOPG, *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    "args", [["sessions", "list"], ["db", "upgrade"], ["--yes", "hello"]], ids=" ".join
)
def test_one_line_naming_the_extra_and_exit_1(tmp_path: Path, args: list[str]) -> None:
    done = flower_without_psycopg(tmp_path, *args)
    assert done.returncode == 1, done.stderr
    assert done.stderr == (
        "flower: error: postgresql+psycopg://flower:***@127.0.0.1:5432/test: the postgres "
        "backend needs psycopg, which is not installed: pip install 'flower[postgres]'\n"
    )
    assert list(tmp_path.iterdir()) == []
