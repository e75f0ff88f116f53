"""docs/cli-reference.md is generated from the typer app and cannot drift from it."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_cli", ROOT / "docs" / "gen_cli.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_cli_reference_matches_the_app() -> None:
    gen = _generator()
    assert gen.PAGE.read_text(encoding="utf-8") == gen.render(), (
        "docs/cli-reference.md is out of date: run python docs/gen_cli.py"
    )


def test_every_command_has_a_section() -> None:
    text = (ROOT / "docs" / "cli-reference.md").read_text(encoding="utf-8")
    for command in ("flower sessions import", "flower sessions stats", "flower sessions show"):
        assert f"`{command}`" in text
    assert "--claude-code" in text and "--follow" in text and "--since" in text
