"""flower uses typer's public surface only: no ``typer._click``, no ``typer._coercion``."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [
    *ROOT.glob("flower/**/*.py"),
    *ROOT.glob("flower_plugins/**/*.py"),
    ROOT / "docs/gen_cli.py",
]


def private_typer_imports(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            modules = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        elif isinstance(node, ast.Import):
            modules = [a.name for a in node.names]
        else:
            continue
        found += [m for m in modules if m.startswith("typer.") and "._" in f".{m[6:]}"]
    return found


def test_no_module_imports_typer_private_parts() -> None:
    used = {str(p.relative_to(ROOT)): private_typer_imports(p) for p in SOURCES}
    assert {path: names for path, names in used.items() if names} == {}


def test_the_check_sees_a_private_import(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("from typer import _click\nimport typer._coercion\nimport typer.core\n")
    assert private_typer_imports(sample) == ["typer._click", "typer._coercion"]
