"""docs/configuration.md and docs/cli.md cannot drift from the code."""

from __future__ import annotations

import re

import msgspec
from config_reference import NOTES, PAGE, ROOT, render_page
from typer.testing import CliRunner

from flower.cli.main import build_app
from flower.core import config


def test_configuration_page_matches_the_structs() -> None:
    text = PAGE.read_text(encoding="utf-8")
    assert text == render_page(text), "run: python tests/cli/config_reference.py"


def test_no_stale_notes() -> None:
    structs = {s.__name__: s for s in (*config.SECTIONS.values(), config.Settings, config.Price)}
    for struct_name, field in NOTES:
        names = [f.name for f in msgspec.structs.fields(structs[struct_name])]
        assert field in names, (struct_name, field)


def test_every_key_is_in_the_table() -> None:
    text = PAGE.read_text(encoding="utf-8")
    for section, struct in config.SECTIONS.items():
        for f in msgspec.structs.fields(struct):
            if not (isinstance(f.type, type) and issubclass(f.type, msgspec.Struct)):
                assert f"| `[tool.flower.{section}]` | `{f.name}` |" in text


def test_cli_page_covers_every_command() -> None:
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    app = build_app()
    runner = CliRunner()
    help_text = runner.invoke(app, ["--help"]).stdout
    commands = re.findall(r"^  (\w[\w-]*)  ", help_text, re.M)
    assert {"sessions", "config", "plugins"} <= set(commands)
    for command in ["sessions", "config", "plugins"]:
        assert f"flower {command}" in text
    sessions_help = runner.invoke(app, ["sessions", "--help"]).stdout
    for sub in re.findall(r"^  (\w[\w-]*)  ", sessions_help, re.M):
        assert f"flower sessions {sub}" in text, sub
