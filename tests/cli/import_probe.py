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
