"""A fleet task's words land once, whenever its first worker is killed: before the said
journal holds them (only the `start` step kept), or after it does but before lineage
records them. The kill is a real SIGKILL of the worker at that point, from a
``sitecustomize`` on the worker's path (tests only)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fleet_helpers import HoldingModel, Workers, _system, fleet_status, run, wait_for

from flower.core.i18n import language
from flower.workflow.clarify import clarifier

KILL_AT = "FLOWER_TEST_KILL_AT_SAID"

SITECUSTOMIZE = f'''
import os

if os.environ.get("{KILL_AT}"):
    import signal

    from flower.workflow import said

    add = said.SaidJournal.add

    def killed_around_add(self, *args, **kwargs):
        if os.environ["{KILL_AT}"] == "before":
            os.kill(os.getpid(), signal.SIGKILL)
        token = add(self, *args, **kwargs)
        os.kill(os.getpid(), signal.SIGKILL)
        return token

    said.SaidJournal.add = killed_around_add
'''


@pytest.mark.parametrize("when", ["before", "after"])
def test_a_first_run_killed_around_the_journal_says_the_words_once(
    root: Path, env: dict[str, str], model: HoldingModel, tmp_path: Path, when: str
) -> None:
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(SITECUSTOMIZE, encoding="utf-8")
    killing = Workers(root, {**env, KILL_AT: when, "PYTHONPATH": f"{hook}:{env['PYTHONPATH']}"})
    plain = Workers(root, env)
    try:
        ws = root / "ws"
        ws.mkdir()
        killing.start("a")
        words = model.script.request
        done = run(root, env, "fleet", "submit", str(ws), words, "--id", "w")
        assert done.returncode == 0, done.stderr
        assert killing.procs["a"].wait(timeout=90) == -9  # killed inside its wake's start
        journal = ws / "runs" / "said.json"
        assert journal.exists() == (when == "after")
        assert not model.seen  # nothing reached the model
        plain.start("b")
        ended = wait_for(
            lambda: [r for r in fleet_status(root) if r["state"] in ("done", "failed")],
            90,
            "the taken-over task never ended",
        )
        assert ended[0]["state"] == "done", ended
    finally:
        killing.close()
        plain.close()
    log = (ws / "runs" / "fleet" / "w.log").read_text(encoding="utf-8")
    assert "taken over from" in log
    # the clarifier heard the words, once, in the one request it made
    with language("en"):
        system = clarifier().instructions
    asked = [r for r in model.seen if _system(r) == system]
    assert len(asked) == 1
    assert sum(text.count(words) for text in _texts(asked[0].messages)) == 1
    assert not journal.exists()  # lineage holds them now


def _texts(messages: list[dict[str, Any]]) -> list[str]:
    """The text of each message and content block."""
    found: list[str] = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            found.append(content)
        elif isinstance(content, list):
            found += [str(b.get("text", "")) for b in content if isinstance(b, dict)]
    return found
