"""Which modules a CLI invocation imports, seen from a fresh interpreter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

PROBE = """
import json, sys
from flower.cli.main import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
sys.__stdout__.write("\\n" + json.dumps(sorted(sys.modules)))
"""


def imported_modules(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> set[str]:
    """``sys.modules`` after ``flower ARGS`` ran in ``cwd`` (its output is discarded)."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
    )
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


TYPER_RUN = """
import json, sys
import typer

app = typer.Typer()


@app.command()
def command(name: str = "x", count: int = 1, flag: bool = False) -> None:
    pass


try:
    app(["--name", "y", "--count", "2", "--flag"])
except SystemExit:
    pass
sys.__stdout__.write("\\n" + json.dumps(sorted(sys.modules)))
"""


def typer_own_modules() -> set[str]:
    """What typer itself imports to run a command with options (pydantic, for typer >= 0.28).

    That is typer's cost, not flower's: start-up tests count only what flower adds to it.
    """
    done = subprocess.run(
        [sys.executable, "-c", TYPER_RUN], capture_output=True, text=True, check=True, timeout=60
    )
    return set(json.loads(done.stdout.strip().splitlines()[-1]))
