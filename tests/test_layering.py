"""Imports flow one way: cli -> workflow -> runtime -> stores -> core, plugins -> core.

``flower.compat`` (other tools' formats: Claude Code's transcripts, the Claude Agent
SDK's store) sits on the stores, beside the runtime. ``flower.demo`` (the fake API and
the scripted model of ``flower demo``) sits between the CLI and the workflow: the CLI
and the test helpers use it, nothing below it does.

Read from the source with ast, so the rules hold for every import a module can run,
the ones inside functions included (only ``if TYPE_CHECKING:`` blocks are left out).
No circle either when those are counted (:func:`test_no_circle_even_in_type_checking`).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("flower", "flower_plugins")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


SOURCES = {
    module_name(path): path
    for package in PACKAGES
    for path in sorted(ROOT.glob(f"{package}/**/*.py"))
}


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports(path: Path, *, typing: bool = False) -> Iterator[tuple[str, list[str], bool]]:
    """``(module, names taken from it, at module level)`` for every import in ``path``
    (``typing``: those under ``if TYPE_CHECKING:`` too)."""

    def walk(node: ast.AST, top: bool) -> Iterator[tuple[str, list[str], bool]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child) and not typing:
                continue
            inner = top and not isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            if isinstance(child, ast.ImportFrom) and child.module and child.level == 0:
                yield child.module, [alias.name for alias in child.names], top
            elif isinstance(child, ast.Import):
                for alias in child.names:
                    yield alias.name, [], top
            yield from walk(child, inner)

    yield from walk(ast.parse(path.read_text(encoding="utf-8")), True)


def targets(module: str, names: list[str]) -> set[str]:
    """The flower modules an import reaches (``from pkg import mod`` reaches ``pkg.mod``)."""
    found = {f"{module}.{name}" for name in names if f"{module}.{name}" in SOURCES}
    if module in SOURCES and (not names or len(found) < len(names)):
        found.add(module)
    return found


def graph(*, typing: bool = False) -> dict[str, set[str]]:
    """``{module: the flower modules it imports}`` (``typing``: for type checking too)."""
    return {
        source: {
            target
            for module, names, _ in imports(path, typing=typing)
            for target in targets(module, names)
            if target != source
        }
        for source, path in SOURCES.items()
    }


GRAPH = graph()


def under(module: str, *prefixes: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return groups


def edges(source_prefix: str, *target_prefixes: str) -> list[str]:
    return sorted(
        f"{source} -> {target}"
        for source, reached in GRAPH.items()
        if under(source, source_prefix)
        for target in reached
        if under(target, *target_prefixes)
    )


def test_no_import_circles() -> None:
    assert circles(GRAPH) == []


def test_no_circle_even_in_type_checking() -> None:
    """Not even through an import made for type checking only: it costs nothing at run
    time, but the module still cannot be read or checked without the other, and a
    circle hidden that way (flower.workflow's base, context, said and relay, each
    naming another's class under ``TYPE_CHECKING`` or inside a function) is what left
    one rule spread over modules that each needed the rest. A Protocol or a type moved
    down to the module that owns it breaks such a circle."""
    assert circles(graph(typing=True)) == []


def test_the_circle_finder_finds_one() -> None:
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_core_imports_no_plugin_and_no_layer_above_it() -> None:
    above = ("flower_plugins", "flower.stores", "flower.runtime", "flower.workflow", "flower.cli")
    assert edges("flower.core", *above, "flower.demo", "flower.testing", "flower.ui") == []


def test_the_plugin_api_stands_on_the_core_alone() -> None:
    """What a plugin imports imports nothing above the core, not even inside a function:
    a plugin's command gets its settings, checked, from the command line's state."""
    above = ("flower_plugins", "flower.stores", "flower.runtime", "flower.workflow", "flower.cli")
    assert edges("flower.plugin", *above, "flower.demo", "flower.fleet", "flower.ui") == []


def test_lower_layers_import_nothing_above_them() -> None:
    assert edges("flower.stores", "flower.runtime", "flower.workflow", "flower.cli") == []
    assert edges("flower.runtime", "flower.workflow", "flower.cli") == []
    assert edges("flower.workflow", "flower.cli") == []


def test_compat_sits_on_the_stores() -> None:
    above = ("flower.runtime", "flower.workflow", "flower.demo", "flower.cli", "flower.testing")
    assert edges("flower.compat", *above) == []
    below = ("flower.core", "flower.stores", "flower.runtime", "flower.workflow")
    assert [e for p in below for e in edges(p, "flower.compat")] == []


def test_the_demo_sits_between_the_cli_and_the_workflow() -> None:
    assert edges("flower.demo", "flower.cli", "flower.testing") == []
    below = ("flower.core", "flower.stores", "flower.runtime", "flower.workflow")
    assert [e for p in below for e in edges(p, "flower.demo")] == []


def test_the_product_does_not_import_the_test_helpers() -> None:
    product = (
        "flower.core",
        "flower.stores",
        "flower.runtime",
        "flower.workflow",
        "flower.demo",
        "flower.cli",
    )
    assert [e for p in product for e in edges(p, "flower.testing")] == []


def test_no_builtin_plugin_imports_the_cli() -> None:
    """Not even inside a function: a plugin's command reads the settings through
    ``flower.plugin.command_settings``, and ``flower prune`` is the CLI's own."""
    found = [
        f"{source} -> {module}"
        for source, path in SOURCES.items()
        if under(source, "flower_plugins")
        for module, _, _top in imports(path)
        if under(module, "flower.cli")
    ]
    assert found == []


def test_no_module_takes_another_modules_underscore_names() -> None:
    found = [
        f"{source}: {name} from {module}"
        for source, path in SOURCES.items()
        for module, names, _ in imports(path)
        if under(module, *PACKAGES) and module != source
        for name in names
        if name.startswith("_")
        and not name.startswith("__")
        and f"{module}.{name}" not in SOURCES
        and name != "_"  # gettext's translate function, by convention
    ]
    assert found == []
