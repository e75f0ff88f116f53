"""A configuration no plugin can serve stops every command before it spends or writes."""

from __future__ import annotations

import os
import shutil
import tomllib
from pathlib import Path

import pytest
from cli_run_helpers import REQUEST, Flower

from flower.testing.fake_api import FakeMessagesAPI

pytestmark = pytest.mark.usefixtures("english")  # expects flower's English output

PLUGIN = Path(__file__).parents[1] / "pruning" / "plugin_pkg"


def install_policy_plugin(site: Path) -> None:
    """The tutorial's pruning policy plugin (tests/pruning/plugin_pkg) as pip leaves it."""
    shutil.copytree(PLUGIN / "flower_drop_thinking", site / "flower_drop_thinking")
    dist = site / "flower_drop_thinking-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: flower-drop-thinking\nVersion: 0.1\n"
    )
    entry = tomllib.loads((PLUGIN / "pyproject.toml").read_text())["project"]["entry-points"]
    lines = ["[flower]", *(f"{k} = {v}" for k, v in entry["flower"].items())]
    (dist / "entry_points.txt").write_text("\n".join(lines) + "\n")


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


@pytest.mark.parametrize(
    "args",
    [["--yes", REQUEST], ["config"], ["status"]],
    ids=["wake", "config", "status"],
)
def test_a_typo_in_a_plugin_policys_options_table_is_exit_2_before_any_request(
    flower: Flower, ws: Path, api: FakeMessagesAPI, args: list[str], tmp_path: Path
) -> None:
    site = tmp_path / "site"
    install_policy_plugin(site)
    paths = [p for p in (flower.env.get("PYTHONPATH"), str(site)) if p]
    env = {**flower.env, "PYTHONPATH": os.pathsep.join(paths)}
    (ws / "pyproject.toml").write_text(
        '[tool.flower.pruning]\npolicies = ["synthetic-errors", "drop-thinking"]\n'
        "[tool.flower.pruning.options.drop-thinking]\nmsk = 1\n",
        encoding="utf-8",
    )
    done = flower(*args, env=env)
    assert done.returncode == 2, done.stderr
    line = done.stderr.strip()
    assert "\n" not in line and "Traceback" not in done.stderr
    assert line == (
        f"flower: error: {ws / 'pyproject.toml'}: [tool.flower.pruning.options.drop-thinking] "
        "msk: unknown key (expected one of: keep_turns)"
    )
    assert api.requests == []
    assert sorted(p.name for p in ws.iterdir()) == ["pyproject.toml"]


@pytest.mark.parametrize(
    ("table", "key", "value", "named"),
    [
        ("[tool.flower]", "run_dir", "{gone}/runs", "{gone}/runs"),
        (
            "[tool.flower.sessions]",
            "url",
            "sqlite:///{gone}/dir/sessions.db",
            "{gone}/dir/sessions.db",
        ),
        ("[tool.flower.sessions]", "url", "jsonfs://{gone}/dir", "{gone}/dir"),
        (
            "[tool.flower.lineage]",
            "url",
            "file://{gone}/dir/lineage.json",
            "{gone}/dir/lineage.json",
        ),
    ],
    ids=["run-dir", "sqlite-url", "jsonfs-root", "lineage-url"],
)
@pytest.mark.parametrize("args", [["--yes", REQUEST], ["config"], ["status"]], ids=str)
def test_a_place_in_a_folder_that_does_not_exist_is_named_not_created(
    flower: Flower,
    ws: Path,
    api: FakeMessagesAPI,
    tmp_path: Path,
    args: list[str],
    table: str,
    key: str,
    value: str,
    named: str,
) -> None:
    gone = tmp_path / "no" / "such"
    setting = value.format(gone=gone)
    if table == "[tool.flower.sessions]" and setting.startswith("jsonfs"):
        table += '\nbackend = "jsonfs"'
    (ws / "pyproject.toml").write_text(f'{table}\n{key} = "{setting}"\n', encoding="utf-8")
    done = flower(*args)
    assert done.returncode == 2, done.stderr
    line = done.stderr.strip()
    assert "\n" not in line and "Traceback" not in done.stderr
    section = table.split("\n")[0]
    assert line == (
        f"flower: error: {ws / 'pyproject.toml'}: {section} {key}: {named.format(gone=gone)} is "
        f"in a folder that does not exist ({Path(named.format(gone=gone)).parent}); flower "
        "creates no folders above it: create it, or fix the path"
    )
    assert api.requests == []
    assert not (tmp_path / "no").exists()
    assert sorted(p.name for p in ws.iterdir()) == ["pyproject.toml"]
