"""``flower plugins`` and plugin loading as the CLI sees it, with real entry points."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from cli_helpers import run_flower
from typer.testing import CliRunner

from flower.cli.main import build_app

runner = CliRunner()


def install_plugin(site: Path, dist: str, module: str, source: str) -> None:
    """A third-party distribution with an entry point in group ``flower``, on a path."""
    # The folder name carries the normalized name (dashes become underscores).
    info = site / f"{dist.replace('-', '_')}-1.2.3.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.2.3\n")
    (info / "entry_points.txt").write_text(f"[flower]\n{dist} = {module}\n")
    (site / f"{module}.py").write_text(textwrap.dedent(source), encoding="utf-8")


BROKEN = """
raise ImportError("this plugin is broken on purpose")
"""

SAME_BACKEND = """
from flower import hookimpl

@hookimpl
def register_session_stores(register):
    register("shared-name", lambda url, options, settings: None, schemes=("{scheme}",))
"""


def test_builtins_are_listed_with_hooks_and_registrations(in_tmp: Path) -> None:
    result = runner.invoke(build_app(), ["plugins", "--json"])
    assert result.exit_code == 0, result.output
    rows = {row["name"]: row for row in json.loads(result.stdout)}
    assert {"sql", "jsonfs", "pruning", "probes"} <= set(rows)
    sql = rows["sql"]
    assert sql["distribution"] == "flower"
    assert "register_session_stores" in sql["hooks"]
    assert "sqlite" in sql["registered"]["session_stores"]
    assert "jsonfs" in rows["jsonfs"]["registered"]["session_stores"]
    assert rows["probes"]["registered"]["probers"]
    assert rows["pruning"]["registered"]["pruning_policies"]
    text = runner.invoke(build_app(), ["plugins"]).stdout
    assert "session stores: " in text and "sqlite" in text
    assert text.splitlines()[-1].endswith(" failed")


def test_broken_third_party_plugin_is_reported_and_the_cli_works(tmp_path: Path) -> None:
    site = tmp_path / "site"
    install_plugin(site, "flower-broken", "broken_flower_plugin", BROKEN)
    env = {"PYTHONPATH": str(site)}

    listed = run_flower("plugins", "--json", cwd=tmp_path, env=env)
    assert listed.returncode == 0, listed.stderr
    rows = {row["name"]: row for row in json.loads(listed.stdout)}
    broken = rows["flower-broken"]
    assert broken["distribution"] == "flower-broken" and broken["version"] == "1.2.3"
    assert "broken on purpose" in broken["error"]
    assert "flower: warning: flower plugin 'flower-broken' skipped" in listed.stderr
    assert "Traceback" not in listed.stderr

    text = run_flower("plugins", cwd=tmp_path, env=env)
    assert "FAILED" in text.stdout and "broken on purpose" in text.stdout

    # everything else keeps working, stores included
    url = f"jsonfs:///{tmp_path / 'store'}"
    works = run_flower("--sessions-url", url, "sessions", "list", "--json", cwd=tmp_path, env=env)
    assert works.returncode == 0, works.stderr
    assert json.loads(works.stdout) == []
    assert "broken on purpose" in works.stderr  # still warned about


def test_strict_plugins_makes_a_broken_plugin_fatal(tmp_path: Path) -> None:
    site = tmp_path / "site"
    install_plugin(site, "flower-broken", "broken_flower_plugin", BROKEN)
    env = {"PYTHONPATH": str(site), "FLOWER_STRICT_PLUGINS": "1"}
    for argv in (["plugins"], ["config"], ["--help"]):
        done = run_flower(*argv, cwd=tmp_path, env=env)
        assert done.returncode == 1, (argv, done.stdout, done.stderr)
        assert "flower: error: plugin 'flower-broken'" in done.stderr
        assert "broken on purpose" in done.stderr
        assert "Traceback" not in done.stderr


def test_two_plugins_claiming_one_backend_name_is_a_clear_error(tmp_path: Path) -> None:
    site = tmp_path / "site"
    install_plugin(site, "flower-one", "flower_one", SAME_BACKEND.format(scheme="one"))
    install_plugin(site, "flower-two", "flower_two", SAME_BACKEND.format(scheme="two"))
    done = run_flower("plugins", cwd=tmp_path, env={"PYTHONPATH": str(site)})
    assert done.returncode == 1
    assert "'shared-name' is registered twice" in done.stderr
    assert "flower-one" in done.stderr and "flower-two" in done.stderr
    assert "Traceback" not in done.stderr
