"""``flower.plugin`` is the one module a plugin author imports, and the tutorials show it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import flower.plugin

ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"```python\n(.*?)```", re.S)
TUTORIALS = sorted((ROOT / "docs").glob("writing-*.md"))
TUTORIAL_PACKAGE = sorted((ROOT / "tests/pruning/plugin_pkg").rglob("*.py"))


def flower_imports(code: str) -> set[str]:
    """The flower modules ``code`` imports (``from flower import x`` counts as ``flower``)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {name for name in found if name.split(".")[0] in ("flower", "flower_plugins")}


def test_every_exported_name_resolves() -> None:
    missing = [name for name in flower.plugin.__all__ if not hasattr(flower.plugin, name)]
    assert missing == []
    assert flower.plugin.make_prober.__module__ == "flower.core.resilience"


def test_the_tutorials_import_flower_only_through_flower_plugin() -> None:
    assert TUTORIALS and TUTORIAL_PACKAGE
    used = {
        str(page.relative_to(ROOT)): set().union(
            *(flower_imports(code) for code in BLOCK.findall(page.read_text(encoding="utf-8")))
        )
        for page in TUTORIALS
    }
    used |= {str(p.relative_to(ROOT)): flower_imports(p.read_text()) for p in TUTORIAL_PACKAGE}
    assert {where: names - {"flower.plugin"} for where, names in used.items()} == {
        where: set() for where in used
    }
    assert all("flower.plugin" in names for names in used.values() if names)


def test_the_import_check_sees_other_flower_modules() -> None:
    code = "from flower import hookimpl\nimport flower.core.transcript\nimport json\n"
    assert flower_imports(code) == {"flower", "flower.core.transcript"}
