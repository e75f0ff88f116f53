"""A small ``~/.claude/projects`` as Claude Code writes it, with the damage crashes leave."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

PROJECT = "-home-me-proj"
OTHER_PROJECT = "-home-me-other"
SESSION = "7f1c2a9e-5b1d-4c7e-9a51-0c2f4d6e8a10"
OTHER_SESSION = "0d9e8f7a-1b2c-4d3e-8f9a-0b1c2d3e4f5a"
AGENT = "agent-a1b2c3"


def _base(session: str, uuid: str, parent: str | None, ts: str) -> dict[str, Any]:
    return {
        "parentUuid": parent,
        "isSidechain": False,
        "userType": "external",
        "cwd": "/home/me/proj",
        "sessionId": session,
        "version": "2.1.119",
        "gitBranch": "main",
        "uuid": uuid,
        "timestamp": ts,
    }


def main_entries(session: str = SESSION) -> list[dict[str, Any]]:
    """Prompt, a tool call split in two block entries (as Claude Code does), its result,
    a synthetic API error, the final reply, plus uuid-less bookkeeping lines."""
    usage = {"input_tokens": 1200, "output_tokens": 40, "cache_read_input_tokens": 300}
    msg = {"id": "msg_01A", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5"}
    return [
        {"type": "summary", "summary": "Convert md to html", "leafUuid": "c-final"},
        {
            **_base(session, "c-user", None, "2026-01-01T10:00:00.000Z"),
            "type": "user",
            "message": {"role": "user", "content": "list the files"},
        },
        {
            **_base(session, "c-think", "c-user", "2026-01-01T10:00:01.000Z"),
            "type": "assistant",
            "requestId": "req_1",
            "message": {
                **msg,
                "content": [{"type": "text", "text": "Let me look."}],
                "usage": usage,
            },
        },
        {
            **_base(session, "c-call", "c-think", "2026-01-01T10:00:02.000Z"),
            "type": "assistant",
            "requestId": "req_1",
            "message": {
                **msg,
                "content": [
                    {
                        "type": "tool_use",
                        "id": "toolu_1",
                        "name": "Bash",
                        "input": {"command": "ls"},
                    }
                ],
                "stop_reason": "tool_use",
                "usage": usage,
            },
        },
        {
            **_base(session, "c-result", "c-call", "2026-01-01T10:00:03.000Z"),
            "type": "user",
            "message": {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.md\nb.md"}
                ],
            },
            "toolUseResult": {"stdout": "a.md\nb.md", "stderr": "", "interrupted": False},
        },
        {
            **_base(session, "c-error", "c-result", "2026-01-01T10:00:04.000Z"),
            "type": "assistant",
            "isApiErrorMessage": True,
            "error": "overloaded",
            "message": {
                "id": "6c0f8a56-3f0e-4a7c-b2a1-4f2b1f0c9d11",
                "model": "<synthetic>",
                "role": "assistant",
                "type": "message",
                "content": [{"type": "text", "text": "API Error: 529 Overloaded"}],
                "stop_reason": "stop_sequence",
                "usage": {"input_tokens": 0, "output_tokens": 0},
            },
        },
        {
            **_base(session, "c-final", "c-error", "2026-01-01T10:05:00.000Z"),
            "type": "assistant",
            "requestId": "req_2",
            "message": {
                **msg,
                "id": "msg_01B",
                "content": [{"type": "text", "text": "There are two markdown files."}],
                "stop_reason": "end_turn",
                "usage": {"input_tokens": 1300, "output_tokens": 12},
            },
        },
        {"type": "file-history-snapshot", "messageId": "c-final", "snapshot": {"files": {}}},
    ]


def agent_entries() -> list[dict[str, Any]]:
    return [
        {
            **_base(SESSION, "g-user", None, "2026-01-01T10:00:05.000Z"),
            "isSidechain": True,
            "agentId": "a1b2c3",
            "type": "user",
            "message": {"role": "user", "content": "search for TODOs"},
        },
        {
            **_base(SESSION, "g-reply", "g-user", "2026-01-01T10:00:06.000Z"),
            "isSidechain": True,
            "agentId": "a1b2c3",
            "type": "assistant",
            "message": {
                "id": "msg_01G",
                "role": "assistant",
                "model": "claude-haiku-4-5",
                "content": [{"type": "text", "text": "No TODOs."}],
            },
        },
    ]


def _lines(entries: list[dict[str, Any]]) -> list[str]:
    return [json.dumps(e) for e in entries]


def make_claude_home(root: Path) -> dict[str, Any]:
    """Write the folder; return what a correct import must hold and skip."""
    main = main_entries()
    lines = _lines(main)
    # Damage: a hand-edit (not JSON) in the middle, a JSON array line, a torn tail.
    lines.insert(3, '{"type": "user", "uuid": "broken", "message": {')
    lines.insert(5, "[1, 2, 3]")
    text = "\n".join(lines) + '\n{"type":"assistant","uuid":"torn","mess'
    project = root / PROJECT
    project.mkdir(parents=True)
    (project / f"{SESSION}.jsonl").write_text(text, encoding="utf-8")
    subagents = project / SESSION / "subagents"
    subagents.mkdir(parents=True)
    (subagents / f"{AGENT}.jsonl").write_text("\n".join(_lines(agent_entries())) + "\n")
    (subagents / f"{AGENT}.meta.json").write_text('{"agentType": "general-purpose"}')
    other = root / OTHER_PROJECT
    other.mkdir()
    (other / f"{OTHER_SESSION}.jsonl").write_text(
        "\n".join(_lines(main_entries(OTHER_SESSION)[1:3])) + "\n"
    )
    return {
        "main": main,
        # 1-based line numbers in the damaged file
        "skipped_lines": [4, 6, len(lines) + 1],
        "main_file": project / f"{SESSION}.jsonl",
    }
