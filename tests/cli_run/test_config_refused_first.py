"""A configuration no plugin can serve stops every command before it spends or writes."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_run_helpers import REQUEST, Flower

from flower.testing.fake_api import FakeMessagesAPI

pytestmark = pytest.mark.usefixtures("english")  # expects flower's English output

MISSPELT = '[tool.flower.pruning]\npolicies = ["synthetic-errors", "denails"]\n'


@pytest.mark.parametrize(
    "args",
    [
        ["--yes", REQUEST],
        ["run", "--yes", REQUEST],
        ["config"],
        ["config", "--json"],
        ["status"],
        ["sessions", "list"],
    ],
    ids=["wake", "run", "config", "config-json", "status", "sessions-list"],
)
def test_an_unknown_pruning_policy_is_exit_2_before_any_request(
    flower: Flower, ws: Path, api: FakeMessagesAPI, args: list[str]
) -> None:
    (ws / "pyproject.toml").write_text(MISSPELT, encoding="utf-8")
    done = flower(*args)
    assert done.returncode == 2, done.stderr
    line = done.stderr.strip()
    assert "\n" not in line and "Traceback" not in done.stderr
    assert line.startswith(f"flower: error: {ws / 'pyproject.toml'}: [tool.flower.pruning]")
    assert "no plugin provides 'denails'" in line
    assert "available: denials, ephemeral, interrupted, redact, synthetic-errors, trim" in line
    assert api.requests == []
    assert sorted(p.name for p in ws.iterdir()) == ["pyproject.toml"]


@pytest.mark.parametrize(
    "args",
    [["--yes", REQUEST], ["status"], ["sessions", "list"], ["sessions", "export", "abc"]],
    ids=["wake", "status", "sessions-list", "sessions-export"],
)
def test_a_missing_encryption_key_is_refused_before_anything_is_created(
    flower: Flower, ws: Path, api: FakeMessagesAPI, args: list[str]
) -> None:
    (ws / "pyproject.toml").write_text("[tool.flower.sessions]\nencrypt = true\n", "utf-8")
    done = flower(*args)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("flower: error: [tool.flower.sessions] encrypt = true but no key")
    assert "Traceback" not in done.stderr
    assert api.requests == []
    # no lineage.json, no sessions.db, no lock file: not even the run directory
    assert sorted(p.name for p in ws.iterdir()) == ["pyproject.toml"]
