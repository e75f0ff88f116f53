"""Every Python sample in README.md and docs/ runs, so the docs cannot rot.

Each ```python block runs in a fresh temporary directory, in a subprocess (a few at a
time), with the fake Messages API's address and a dummy key in its environment. A block that needs
the blocks before it on the same page starts with ``# continued``. A block that is a
fragment on purpose (a hook signature, say) is fenced as ```py instead.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
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


WORKERS = 3
"""Samples run a few at a time: each is mostly interpreter start-up and imports."""


def _run_sample(
    code: str, tmp_path: Path, api_env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    (tmp_path / "seed.txt").write_text("flower\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FLOWER_", "ANTHROPIC_"))}
    env.update(api_env)
    env["FLOWER_PROBE_STRATEGY"] = "none"
    env["HOME"] = str(tmp_path)
    # saved as a script, as a reader would run it: a sample starting processes must
    # guard them with `if __name__ == "__main__":`, which `python -c` would not catch
    script = tmp_path / "sample.py"
    script.write_text(code, encoding="utf-8")
    return subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture(scope="module")
def ran(
    request: pytest.FixtureRequest,
    api_env: dict[str, str],
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, subprocess.CompletedProcess[str]]:
    """Every selected sample of this module, run concurrently once, by its code."""
    codes = {
        item.callspec.params["code"]
        for item in request.session.items
        if item.module is request.module and hasattr(item, "callspec")
    }
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        futures = {
            code: pool.submit(_run_sample, code, tmp_path_factory.mktemp("sample"), api_env)
            for code in codes
        }
        return {code: future.result() for code, future in futures.items()}


@pytest.mark.parametrize("code", list(_samples()))
def test_sample_runs(code: str, ran: dict[str, subprocess.CompletedProcess[str]]) -> None:
    done = ran[code]
    assert done.returncode == 0, f"sample failed:\n{code}\n--- stderr ---\n{done.stderr}"
