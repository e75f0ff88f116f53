"""A fleet task that runs a user's own Workflow: ``python -m flower.fleet.child
module:function [what to say]``, started by a worker in the task's workspace.

``function`` returns the :class:`~flower.workflow.base.Workflow` to run (it may take
one argument: what the task says, or None). The wake runs on a plain
:class:`~flower.runtime.engine.Runtime` in the workspace, so lineage, resume and the
session lease hold as in any run; the last line on stdout is the JSON result.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json
import sys
from pathlib import Path
from typing import Any


def _workflow(target: str, said: str | None) -> Any:
    module_name, _, attribute = target.partition(":")
    sys.path.insert(0, str(Path.cwd()))
    function = getattr(importlib.import_module(module_name), attribute)
    takes = len(inspect.signature(function).parameters)
    return function(said) if takes else function()


def main(argv: list[str]) -> int:
    from flower.core.config import load_settings
    from flower.core.manifest import result_line
    from flower.runtime.engine import Runtime

    target, said = argv[0], (argv[1] if len(argv) > 1 else None)
    settings = load_settings().settings
    workflow = _workflow(target, said)
    from flower.fleet.budget import gate_for

    gate = gate_for(settings)
    runtime = Runtime(workspace=".", run_dir=settings.run_dir, settings=settings, gate=gate)
    try:
        ctx = asyncio.run(workflow.run(runtime))
    finally:
        runtime.close()
    out = {
        "ok": ctx.ok,
        "woke": ctx.woke,
        "goal_met": ctx.goal_met,
        "sessions": ctx.sessions,
        "results": [result_line(r) for r in ctx.results],
    }
    sys.stdout.write(json.dumps(out, ensure_ascii=False, default=str) + "\n")
    return 0 if ctx.ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
