"""Write docs/cli-reference.md from the typer app: every command's ``--help``.

The page is written in English, whichever language the environment speaks. Run
``python docs/gen_cli.py`` after changing a command; ``tests/docs/test_cli_reference.py``
fails when the page and the app disagree. ``python docs/gen_cli.py --check`` exits 1 then.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

PAGE = Path(__file__).resolve().parent / "cli-reference.md"
WIDTH = 100
ENGLISH = {"FLOWER_LANGUAGE": "en"}
"""The page is English whatever the language around it (the setting beats the rest)."""
HEADER = """# CLI reference

Generated from the command-line app by `python docs/gen_cli.py`; a test fails when it
is out of date, so it always matches the installed `flower`. For examples and the
rules behind the commands (free-text routing, exit codes, plugin commands), see
[The command line](cli.md).
"""


def _commands(group: object, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], object]]:
    yield path, group
    if not hasattr(group, "list_commands"):  # a command, not a group
        return
    import typer

    ctx = typer.Context(group)  # type: ignore[arg-type]
    for name in group.list_commands(ctx):  # type: ignore[attr-defined]
        command = group.get_command(ctx, name)  # type: ignore[attr-defined]
        if command is None or getattr(command, "hidden", False):
            continue
        yield from _commands(command, (*path, name))


def render() -> str:
    """The page's full text."""
    import typer
    from typer.testing import CliRunner

    from flower.cli.main import build_app

    os.environ.pop("FLOWER_STRICT_PLUGINS", None)
    app = build_app()
    root = typer.main.get_command(app)
    runner = CliRunner()
    parts = [HEADER]
    for path, _command in _commands(root, ()):
        args = [*path, "--help"]
        result = runner.invoke(app, args, prog_name="flower", terminal_width=WIDTH, env=ENGLISH)
        if result.exit_code != 0:
            raise RuntimeError(f"flower {' '.join(args)} failed: {result.output}")
        title = " ".join(("flower", *path))
        level = "#" * min(2 + max(len(path) - 1, 0), 4)
        parts.append(f"{level} `{title}`\n\n```text\n{result.stdout.rstrip()}\n```\n")
    return "\n".join(parts)


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        if PAGE.read_text(encoding="utf-8") != text:
            print(f"{PAGE} is out of date: run python docs/gen_cli.py", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(text, encoding="utf-8")
    print(f"wrote {PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
