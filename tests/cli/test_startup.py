"""Start-up stays light: heavy libraries are imported by the commands that need them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("anthropic", "sqlalchemy", "pydantic", "rich", "alembic", "psycopg", "flower.stores.open")

PROBE = """
import sys
from flower.cli.main import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
import json
sys.__stdout__.write("\\n" + json.dumps(sorted(m.split(".")[0] if not m.startswith("flower") else m
                                            for m in sys.modules)))
"""


def imported_modules(args: list[str], cwd: Path) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args], cwd=cwd, capture_output=True, text=True, timeout=60
    )
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize("args", [["--help"], ["--version"], ["config"], ["sessions", "--help"]])
def test_no_heavy_imports(args: list[str], in_tmp: Path) -> None:
    modules = imported_modules(args, in_tmp)
    assert not [name for name in HEAVY if name in modules]


def test_importing_the_entry_module_loads_no_plugin(in_tmp: Path) -> None:
    modules = imported_modules(["--version"], in_tmp)
    assert "flower.core.plugins" not in modules and "pluggy" not in modules
