"""Every Python sample in README.md and docs/ runs, so the docs cannot rot.

Each ```python block runs in a fresh temporary directory, in a subprocess, with the
fake Messages API's address and a dummy key in its environment. A block that needs
the blocks before it on the same page starts with ``# continued``. A block that is a
fragment on purpose (a hook signature, say) is fenced as ```py instead.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def _pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def _samples() -> Iterator[pytest.param]:
    for page in _pages():
        text = page.read_text(encoding="utf-8")
        previous = ""
        for number, match in enumerate(BLOCK.finditer(text), 1):
            code = match.group(1)
            if code.startswith("# continued"):
                code = previous + "\n" + code
            previous = code
            rel = page.relative_to(ROOT)
            yield pytest.param(code, id=f"{rel}#{number}")


@pytest.fixture(scope="module")
def api_env() -> Iterator[dict[str, str]]:
    try:
        from flower.testing.fake_api import FakeMessagesAPI
    except ImportError:  # the engine is not there yet: samples that need it will fail
        yield {}
        return
    with FakeMessagesAPI(lambda request: "ok") as api:
        yield api.env()


@pytest.mark.parametrize("code", list(_samples()))
def test_sample_runs(code: str, tmp_path: Path, api_env: dict[str, str]) -> None:
    (tmp_path / "seed.txt").write_text("flower\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FLOWER_", "ANTHROPIC_"))}
    env.update(api_env)
    env["FLOWER_PROBE_STRATEGY"] = "none"
    env["HOME"] = str(tmp_path)
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, f"sample failed:\n{code}\n--- stderr ---\n{done.stderr}"
