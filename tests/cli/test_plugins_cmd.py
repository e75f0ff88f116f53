"""``flower plugins`` and plugin loading as the CLI sees it, with real entry points."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from cli_helpers import run_flower
from typer.testing import CliRunner

from flower.cli.main import build_app

pytestmark = pytest.mark.usefixtures("english")  # expects flower's English output

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


@pytest.mark.usefixtures("english")  # the expected text is flower's English output
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


def test_a_broken_plugin_is_reported_in_the_language_and_json_stays_english(
    tmp_path: Path,
) -> None:
    site = tmp_path / "site"
    install_plugin(site, "flower-broken", "broken_flower_plugin", BROKEN)
    env = {"PYTHONPATH": str(site), "FLOWER_LANG": "zh_CN"}
    text = run_flower("plugins", cwd=tmp_path, env=env)
    assert "flower: warning: flower 插件 'flower-broken' 已跳过:无法导入" in text.stderr
    assert "    错误:无法导入 broken_flower_plugin" in text.stdout
    listed = run_flower("plugins", "--json", cwd=tmp_path, env=env)
    rows = {row["name"]: row for row in json.loads(listed.stdout)}
    assert rows["flower-broken"]["error"].startswith("failed to import broken_flower_plugin")
    english = run_flower("plugins", "--json", cwd=tmp_path, env={**env, "FLOWER_LANG": "en"})
    assert english.stdout == listed.stdout


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


def test_two_plugins_claiming_one_backend_name_one_keeps_it_and_the_other_is_reported(
    tmp_path: Path,
) -> None:
    site = tmp_path / "site"
    install_plugin(site, "flower-one", "flower_one", SAME_BACKEND.format(scheme="one"))
    install_plugin(site, "flower-two", "flower_two", SAME_BACKEND.format(scheme="two"))
    done = run_flower("plugins", "--json", cwd=tmp_path, env={"PYTHONPATH": str(site)})
    assert done.returncode == 0, done.stderr  # the diagnostic command still runs
    rows = {row["name"]: row for row in json.loads(done.stdout)}
    errors = [rows["flower-one"]["error"], rows["flower-two"]["error"]]
    assert sorted(e is None for e in errors) == [False, True]  # exactly one lost
    loser, winner = ("flower-one", "flower-two") if errors[0] else ("flower-two", "flower-one")
    assert f"plugin {winner!r} already provides one by that name" in rows[loser]["error"]
    assert f"flower plugin {loser!r}: its session store 'shared-name' is ignored" in done.stderr
    assert "Traceback" not in done.stderr
    strict = run_flower(
        "plugins", cwd=tmp_path, env={"PYTHONPATH": str(site), "FLOWER_STRICT_PLUGINS": "1"}
    )
    assert strict.returncode == 1 and "is ignored" in strict.stderr


CLAIMS_A_BUILTIN = """
from flower import hookimpl

@hookimpl
def register_pruning_policies(register):
    register("denials", lambda settings: None)

@hookimpl
def register_session_stores(register):
    register("mine", lambda url, options, settings: None, schemes=("sqlite",))
"""


def test_a_plugin_cannot_take_a_builtins_name_or_scheme(tmp_path: Path) -> None:
    site = tmp_path / "site"
    install_plugin(site, "flower-greedy", "flower_greedy", CLAIMS_A_BUILTIN)
    env = {"PYTHONPATH": str(site)}
    done = run_flower("plugins", "--json", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    error = {row["name"]: row for row in json.loads(done.stdout)}["flower-greedy"]["error"]
    assert "pruning policy 'denials' is ignored: plugin 'pruning' already provides" in error
    assert "session store 'mine' is ignored: plugin 'sql' already handles URLs of scheme" in error
    # the built-ins are the ones in use
    prune_help = run_flower("prune", "--help", cwd=tmp_path, env=env)
    assert prune_help.returncode == 0, prune_help.stderr
    doctor = run_flower("doctor", "--json", cwd=tmp_path, env=env)
    checks = {c["name"]: c for c in json.loads(doctor.stdout)["checks"]}
    assert checks["pruning"]["ok"], checks["pruning"]
    assert not checks["plugins"]["ok"] and "flower-greedy" in checks["plugins"]["detail"]


SHADOW = """
from flower import hookimpl

@hookimpl
def register_pruning_policies(register):
    register("shadowed", lambda settings: None)
"""


def test_an_entry_point_named_like_a_builtin_is_reported_not_swapped_in(tmp_path: Path) -> None:
    site = tmp_path / "site"
    install_plugin(site, "flower-shadow", "flower_shadow", SHADOW)
    # the entry point itself is called "pruning", the built-in plugin's name
    ep_file = site / "flower_shadow-1.2.3.dist-info" / "entry_points.txt"
    ep_file.write_text("[flower]\npruning = flower_shadow\n")
    env = {"PYTHONPATH": str(site)}
    done = run_flower("plugins", "--json", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    pruning = [row for row in rows if row["name"] == "pruning"]
    builtin = [row for row in pruning if row["distribution"] == "flower"]
    other = [row for row in pruning if row["distribution"] == "flower-shadow"]
    assert builtin and builtin[0]["error"] is None
    assert other and "the plugin name 'pruning' is flower's own" in other[0]["error"]
    assert run_flower("prune", "--help", cwd=tmp_path, env=env).returncode == 0


EXITS_AT_IMPORT = {
    "flower-exits": "import sys\nsys.exit(3)\n",
    "flower-says-bye": 'raise SystemExit("bye from a plugin")\n',
    "flower-base": "class Boom(BaseException):\n    pass\n\nraise Boom('not an Exception')\n",
    "flower-hook-exits": (
        "import sys\nfrom flower import hookimpl\n\n"
        "@hookimpl\ndef register_session_stores(register):\n    sys.exit(4)\n"
    ),
    "flower-command-exits": (
        "import sys\nfrom flower import hookimpl\n\n"
        "@hookimpl\ndef register_commands(app):\n    sys.exit(5)\n"
    ),
}


def test_a_plugin_calling_sys_exit_or_raising_base_exception_is_a_broken_plugin(
    tmp_path: Path,
) -> None:
    site = tmp_path / "site"
    for dist, source in EXITS_AT_IMPORT.items():
        install_plugin(site, dist, dist.replace("-", "_"), source)
    env = {"PYTHONPATH": str(site)}

    listed = run_flower("plugins", "--json", cwd=tmp_path, env=env)
    assert listed.returncode == 0, listed.stderr
    rows = {row["name"]: row for row in json.loads(listed.stdout)}
    assert "SystemExit: 3" in rows["flower-exits"]["error"]
    assert "SystemExit: bye from a plugin" in rows["flower-says-bye"]["error"]
    assert "Boom: not an Exception" in rows["flower-base"]["error"]
    assert "register_session_stores failed: SystemExit(4)" in rows["flower-hook-exits"]["error"]
    assert "Traceback" not in listed.stderr

    text = run_flower("plugins", cwd=tmp_path, env=env)
    assert text.returncode == 0, text.stderr
    assert text.stdout.count("FAILED") == 5 and text.stdout.endswith("5 failed\n")

    helped = run_flower("--help", cwd=tmp_path, env=env)
    assert helped.returncode == 0, helped.stderr
    assert "Usage" in helped.stdout and "register_commands failed: SystemExit(5)" in helped.stderr

    doctor = run_flower("doctor", "--json", cwd=tmp_path, env=env)
    checks = {row["name"]: row for row in json.loads(doctor.stdout)["checks"]}
    assert checks["plugins"]["ok"] is False and "flower-exits" in checks["plugins"]["detail"]
    assert "Traceback" not in doctor.stderr
