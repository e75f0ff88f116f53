"""Start-up stays light: heavy libraries are imported by the commands that need them."""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

from flower.core.entry_points import scan
from flower.core.errors import PluginError
from flower.core.plugins import Registration
from tests.cli.import_probe import imported_modules, typer_own_modules

# What flower itself imports only inside the commands that need them. What typer loads
# on its own is typer's cost, not flower's: rich with typer < 0.17 on ``import typer``,
# pydantic with typer >= 0.28 when it coerces a parameter value.
HEAVY = ("anthropic", "sqlalchemy", "rich", "alembic", "psycopg", "flower.stores.open")
# What registering the built-in plugins must not import (``--help`` registers them all).
NOT_AT_REGISTRATION = (
    "importlib.metadata",
    "email",
    "http.client",
    "ssl",
    "socket",
    "cryptography",
    "tempfile",
    "flower.core.config",
    "flower_plugins.secret_shapes",
    "flower_plugins.jsonfs.factory",
    "flower_plugins.jsonfs.sessions",
    "flower_plugins.sql.options",
    "flower_plugins.sql.factory",
    "flower_plugins.pruning.policies",
    "flower.core.transcript",
    "msgspec",
)


def loaded(modules: set[str], names: tuple[str, ...]) -> list[str]:
    """Which of ``names`` (a package counts with its submodules) were imported."""
    return [n for n in names if n in modules or any(m.startswith(n + ".") for m in modules)]


@pytest.mark.parametrize("args", [["--help"], ["--version"], ["config"], ["sessions", "--help"]])
def test_no_heavy_imports(args: list[str], in_tmp: Path) -> None:
    assert loaded(imported_modules(args, in_tmp) - typer_own_modules(), HEAVY) == []


def test_help_loads_every_plugin_but_none_of_their_implementations(in_tmp: Path) -> None:
    modules = imported_modules(["--help"], in_tmp)
    assert {"flower_plugins.sql", "flower_plugins.jsonfs", "flower_plugins.probes"} <= modules
    assert loaded(modules, NOT_AT_REGISTRATION) == []


def test_help_still_lists_plugin_commands(in_tmp: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "flower.cli.main", "--help"],
        cwd=in_tmp,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    commands = {line.split()[0] for line in done.stdout.splitlines() if line.startswith("  ")}
    assert {"db", "prune", "plugins", "status"} <= commands


def test_the_console_entry_module_runs_as_python_m(in_tmp: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "flower.cli.main", "--version"],
        cwd=in_tmp,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and done.stdout.startswith("flower "), done.stderr


def test_importing_the_entry_module_loads_no_plugin(in_tmp: Path) -> None:
    modules = imported_modules(["--version"], in_tmp)
    assert "flower.core.plugins" not in modules and "pluggy" not in modules


# -- entry-point discovery without importlib.metadata ---------------------------------


def dist_info(site: Path, folder: str, name: str, entry_points: str) -> None:
    info = site / folder
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 4.5\n\nbody")
    (info / "entry_points.txt").write_text(entry_points)


def as_tuples(group: str) -> list[tuple[str, str, str | None, str | None]]:
    found = scan(group)
    assert found is not None
    return sorted((e.name, e.value, e.dist, e.version) for e in found)


def from_importlib(group: str) -> list[tuple[str, str, str | None, str | None]]:
    return sorted(
        (e.name, e.value, e.dist.name if e.dist else None, e.dist.version if e.dist else None)
        for e in metadata.entry_points(group=group)
    )


@pytest.mark.parametrize("group", ["flower", "console_scripts", "pytest11"])
def test_scan_finds_what_importlib_metadata_finds(group: str) -> None:
    assert as_tuples(group) == from_importlib(group)


def test_scan_reads_sections_and_lets_the_first_copy_of_a_distribution_win(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    text = "[other]\nx = a.b\n\n[flower]\n# a comment\nalpha = pkg.mod:attr\nbeta=pkg.b\n"
    dist_info(first, "Flower.Extra-4.5.dist-info", "Flower.Extra", text)
    dist_info(second, "flower_extra-9.9.dist-info", "flower-extra", "[flower]\nshadowed = x\n")
    monkeypatch.setattr(sys, "path", [str(first), str(second)])
    assert as_tuples("flower") == from_importlib("flower")
    assert as_tuples("flower") == [
        ("alpha", "pkg.mod:attr", "Flower.Extra", "4.5"),
        ("beta", "pkg.b", "Flower.Extra", "4.5"),
    ]
    (found,) = [e for e in scan("flower") or [] if e.name == "alpha"]
    assert (found.module, found.attr) == ("pkg.mod", "attr")


def test_scan_leaves_eggs_and_zips_to_importlib_metadata(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    egg = tmp_path / "site" / "old_style.egg-info"
    egg.mkdir(parents=True)
    (egg / "entry_points.txt").write_text("[flower]\nold = old_style\n")
    monkeypatch.setattr(sys, "path", [str(tmp_path / "site")])
    assert scan("flower") is None
    zipped = tmp_path / "plugins.zip"
    zipped.write_bytes(b"PK\x05\x06" + bytes(18))
    monkeypatch.setattr(sys, "path", [str(zipped)])
    assert scan("flower") is None


def test_options_registered_by_name_resolve_on_use_and_fail_clearly(english: None) -> None:
    lazy = Registration("session_stores", "x", dict, "plug", options_ref="pathlib:PurePath")
    assert lazy.options is __import__("pathlib").PurePath
    broken = Registration("session_stores", "x", dict, "plug", options_ref="no_such_mod:Opt")
    with pytest.raises(PluginError, match=r"plugin 'plug'.*no_such_mod:Opt"):
        _ = broken.options
