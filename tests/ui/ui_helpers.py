"""Seeded transcripts for the viewer's tests: a tool call and its result, a synthetic
API error, usage per round, and hostile HTML."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from flower.core.config import SessionsConfig, Settings
from flower.core.records import Entry
from flower.stores.open import open_session_store
from flower.ui.app import Viewer, build_app
from flower.ui.server import Background, bind

PROJECT = "-work-demo"
TOOL_OUTPUT = "README.md\nflower.toml"
WORKING = "0a1b2c3d-0000-4000-8000-000000000001"
HOSTILE = "0a1b2c3d-0000-4000-8000-000000000002"
SCRIPT_TEXT = '<script>window.__pwned = true</script><img src=x onerror="window.__pwned=true">'


class Transcript:
    """Builds one session's entries, each the child of the one before."""

    def __init__(self, session_id: str, *, first_extra: dict[str, Any] | None = None) -> None:
        self.session_id = session_id
        self.entries: list[Entry] = []
        self.parent: str | None = None
        self.first_extra = first_extra or {}
        self.seconds = 0

    def add(self, kind: str, message: dict[str, Any], **extra: Any) -> Entry:
        uid = str(uuid.uuid4())
        self.seconds += 1
        entry: Entry = {
            "type": kind,
            "uuid": uid,
            "parentUuid": self.parent,
            "sessionId": self.session_id,
            "timestamp": f"2026-11-30T10:{self.seconds // 60:02d}:{self.seconds % 60:02d}Z",
            "cwd": "/work/demo",
            "message": message,
            **extra,
        }
        if not self.entries:
            entry.update(self.first_extra)
        self.entries.append(entry)
        self.parent = uid
        return entry

    def prompt(self, text: str) -> Entry:
        return self.add("user", {"role": "user", "content": text})

    def reply(self, content: list[dict[str, Any]], context: int) -> Entry:
        usage = {"input_tokens": context, "output_tokens": 50}
        message = {
            "role": "assistant",
            "id": f"msg_{uuid.uuid4().hex[:20]}",
            "model": "claude-sonnet-4-6",
            "content": content,
            "usage": usage,
        }
        return self.add("assistant", message)

    def tool_round(
        self, tool_id: str, output: str, context: int, name: str = "Bash", **arguments: str
    ) -> None:
        call = {
            "type": "tool_use",
            "id": tool_id,
            "name": name,
            "input": arguments or {"command": "ls"},
        }
        self.reply(
            [{"type": "thinking", "thinking": "the files first", "signature": "s"}, call],
            context,
        )
        self.add(
            "user",
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": tool_id, "content": output}],
            },
        )

    def api_error(self) -> Entry:
        message = {
            "role": "assistant",
            "id": str(uuid.uuid4()),
            "model": "<synthetic>",
            "content": [{"type": "text", "text": "API Error: 529 Overloaded (synthetic)"}],
            "usage": {"input_tokens": 0, "output_tokens": 0},
        }
        return self.add("assistant", message, isApiErrorMessage=True, error="server_error")


def working_session(session_id: str) -> list[Entry]:
    """Two rounds: a Bash call and its result, a synthetic API error, a reply."""
    t = Transcript(session_id)
    t.prompt("List the files of the demo project")
    t.tool_round("toolu_ls1", TOOL_OUTPUT, 12_000)
    t.reply([{"type": "text", "text": "There are two files."}], 12_400)
    t.prompt("Now read the README")
    t.api_error()
    t.reply([{"type": "text", "text": "The README says hello."}], 30_000)
    return t.entries


def hostile_session(session_id: str) -> list[Entry]:
    t = Transcript(session_id)
    t.prompt(SCRIPT_TEXT)
    t.reply([{"type": "text", "text": SCRIPT_TEXT}], 1_000)
    return t.entries


def settings_for(url: str, run_dir: Path) -> Settings:
    return Settings(run_dir=str(run_dir), sessions=SessionsConfig(url=url))


def serve(
    settings: Settings, *, token: str | None = None, interval: float = 0.1, language: str = "en"
) -> Background:
    """The viewer of ``settings`` served on a free loopback port, its pages in ``language``
    (English: the viewer's tests read its English text)."""
    viewer = Viewer(
        settings,
        lambda: open_session_store(settings=settings, read_only=True),
        settings.sessions_url(),
        workspace=Path(settings.run_dir).parent,
        interval=interval,
    )
    app = build_app(viewer, token=token, language=language)
    served = Background(app, bind("127.0.0.1", 0)).start()
    served.viewer = viewer  # type: ignore[attr-defined]
    return served


REQUEST = "Write md2html.py that turns a.md into a.html"
BRIEF = """\
## Background
Notes in Markdown.

## What to do
Write md2html.py.

## What not to do
No GUI.

## When it is done
md2html.py a.md writes a.html.
"""
ROLE_MARKERS = (
    ("make the brief clear", "clarifier"),
    ("into acceptance goals", "goal-setter"),
    ("accepts the work", "judge"),
    ("does the work", "worker"),
)


def workflow_run(workspace: Path, verdicts: list[str]) -> Settings:
    """One real ``flower`` run (in English) of the built-in workflow in ``workspace`` on
    the scripted API (the brief, two goals, the work, then one judge round per verdict
    in ``verdicts``): its run directory holds the store, lineage and manifest."""
    import asyncio
    import os

    from flower.core.i18n import language
    from flower.runtime.engine import Runtime
    from flower.testing.fake_api import FakeMessagesAPI, RecordedRequest, text
    from flower.workflow.builtin import builtin_workflow

    answers = {
        "clarifier": [BRIEF],
        "goal-setter": ["1. md2html.py exists\n2. a.html is written"],
        "worker": ["done"] * len(verdicts),
        "judge": list(verdicts),
    }

    def model(req: RecordedRequest) -> Any:
        system = req.body.get("system")
        words = system if isinstance(system, str) else str(system)
        who = next(name for marker, name in ROLE_MARKERS if marker in words)
        return text(answers[who].pop(0))

    run_dir = workspace / "runs"
    settings = settings_for(f"sqlite:///{run_dir / 'sessions.db'}", run_dir)
    saved = dict(os.environ)
    here = Path.cwd()
    with FakeMessagesAPI() as api, language("en"):
        api.set_script(model)
        os.environ.update(api.env())
        os.environ["FLOWER_PROBE_STRATEGY"] = "none"
        os.chdir(workspace)
        try:
            rt = Runtime(workspace=workspace, run_dir=run_dir, settings=settings)
            try:
                asyncio.run(builtin_workflow(REQUEST, settings=settings, rounds=3).run(rt))
            finally:
                rt.close()
        finally:
            os.chdir(here)
            os.environ.clear()
            os.environ.update(saved)
    return settings
