"""Build Claude-Code-shaped transcripts for tests and the benchmark.

``streamed=True`` writes assistant replies the way Claude Code does (one entry per
content block, all sharing ``message.id``, each tool result in its own user entry);
``streamed=False`` writes them the way flower does (one entry per API response, one
user entry holding every result of that response).
"""

from __future__ import annotations

import itertools
import uuid as uuid_module
from typing import Any

Entry = dict[str, Any]

CC_DENIAL = (
    "Permission to use Bash with command rm -rf build has been denied. "
    "The user doesn't want to proceed with this tool use."
)
CC_INTERRUPTED = "[Request interrupted by user for tool use]"


class TranscriptBuilder:
    def __init__(self, session_id: str = "sess-1", *, streamed: bool = True, seed: int = 0) -> None:
        self.session_id = session_id
        self.streamed = streamed
        self.entries: list[Entry] = []
        self.leaf: str | None = None
        self._ids = itertools.count(1)
        self._seed = seed

    # ------------------------------------------------------------------ plumbing
    def _uuid(self) -> str:
        n = next(self._ids)
        return str(uuid_module.UUID(int=(self._seed << 64) + n))

    def _stamp(self) -> str:
        n = len(self.entries)
        return f"2026-09-07T{(n // 3600) % 24:02d}:{(n // 60) % 60:02d}:{n % 60:02d}.000Z"

    def _envelope(self, kind: str, **extra: Any) -> Entry:
        entry: Entry = {
            "parentUuid": self.leaf,
            "isSidechain": False,
            "userType": "external",
            "cwd": "/home/user/proj",
            "sessionId": self.session_id,
            "version": "2.0.14",
            "gitBranch": "main",
            "type": kind,
            "uuid": self._uuid(),
            "timestamp": self._stamp(),
        }
        entry.update(extra)
        return entry

    def _add(self, entry: Entry, *, advance: bool = True) -> Entry:
        self.entries.append(entry)
        if advance:
            self.leaf = entry["uuid"]
        return entry

    # ------------------------------------------------------------------ turns
    def user(self, text: str, **extra: Any) -> Entry:
        return self._add(self._envelope("user", message={"role": "user", "content": text}, **extra))

    def assistant(
        self, blocks: list[dict[str, Any]], *, usage: dict[str, int] | None = None
    ) -> list[Entry]:
        message_id = f"msg_01{self._seed:06d}{next(self._ids):016d}"
        usage = usage or {
            "input_tokens": 12,
            "cache_creation_input_tokens": 300,
            "cache_read_input_tokens": 9000,
            "output_tokens": 40,
        }
        parts = [[b] for b in blocks] if self.streamed else [blocks]
        written = []
        for part in parts:
            message = {
                "id": message_id,
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": part,
                "stop_reason": "tool_use"
                if any(b["type"] == "tool_use" for b in blocks)
                else "end_turn",
                "stop_sequence": None,
                "usage": usage,
            }
            written.append(
                self._add(
                    self._envelope("assistant", message=message, requestId="req_" + message_id[4:])
                )
            )
        return written

    def tool_use_block(self, name: str, tool_input: dict[str, Any]) -> dict[str, Any]:
        return {
            "type": "tool_use",
            "id": f"toolu_{next(self._ids):06d}",
            "name": name,
            "input": tool_input,
        }

    def results(
        self,
        answers: list[tuple[str, Any, bool]],
        *,
        tool_use_result: dict[str, Any] | None = None,
        source: str | None = None,
    ) -> list[Entry]:
        """``answers``: (tool_use_id, content, is_error)."""
        blocks = [
            {"type": "tool_result", "tool_use_id": tid, "content": content, "is_error": err}
            for tid, content, err in answers
        ]
        parts = [[b] for b in blocks] if self.streamed else [blocks]
        written = []
        for part in parts:
            extra: dict[str, Any] = {
                "toolUseResult": tool_use_result or {"stdout": "", "stderr": ""}
            }
            if source:
                extra["sourceToolAssistantUUID"] = source
            written.append(
                self._add(
                    self._envelope("user", message={"role": "user", "content": part}, **extra)
                )
            )
        return written

    def tool_round(
        self,
        calls: list[tuple[str, dict[str, Any], Any, bool]],
        *,
        text: str | None = "Let me check.",
    ) -> list[str]:
        """One assistant reply with these calls and their results.

        Each call is (name, input, result, is_error)."""
        uses = [self.tool_use_block(name, tool_input) for name, tool_input, _, _ in calls]
        blocks = ([{"type": "text", "text": text}] if text else []) + uses
        written = self.assistant(blocks)
        self.results(
            [(u["id"], result, err) for u, (_, _, result, err) in zip(uses, calls, strict=True)],
            source=written[-1]["uuid"],
        )
        return [u["id"] for u in uses]

    def denied(self, command: str = "rm -rf build", *, claude_code: bool = True) -> str:
        use = self.tool_use_block("Bash", {"command": command})
        written = self.assistant([use])
        if claude_code:
            self.results([(use["id"], CC_DENIAL, True)], tool_use_result={"error": CC_DENIAL})
        else:
            self.results(
                [(use["id"], "Permission denied: Bash is not in allowed_tools", True)],
                tool_use_result={"denied": True, "tool": "Bash", "reason": "not in allowed_tools"},
                source=written[-1]["uuid"],
            )
        return use["id"]

    def interrupted(self, command: str = "npm test") -> str:
        use = self.tool_use_block("Bash", {"command": command})
        self.assistant([use])
        self.results([(use["id"], CC_INTERRUPTED, True)], tool_use_result={"error": "interrupted"})
        self.user(CC_INTERRUPTED)
        return use["id"]

    def cut(self, command: str = "make build") -> str:
        """A tool_use whose result never arrived: the process died mid-tool."""
        use = self.tool_use_block("Bash", {"command": command})
        self.assistant([{"type": "text", "text": "Building."}, use])
        return use["id"]

    def api_error(
        self, text: str = "API Error: Connection error.", *, error: str = "connection"
    ) -> Entry:
        return self._add(
            self._envelope(
                "assistant",
                isApiErrorMessage=True,
                error=error,
                apiErrorStatus=None,
                message={
                    "id": str(uuid_module.UUID(int=next(self._ids))),
                    "model": "<synthetic>",
                    "role": "assistant",
                    "type": "message",
                    "content": [{"type": "text", "text": text}],
                    "stop_reason": "stop_sequence",
                    "usage": {"input_tokens": 0, "output_tokens": 0},
                },
            )
        )

    # ------------------------------------------------------------------ not conversation
    def progress(self) -> Entry:
        return self._add(
            self._envelope("progress", data={"type": "hook_progress", "hookEvent": "PostToolUse"}),
            advance=False,
        )

    def system(self, subtype: str = "turn_duration") -> Entry:
        return self._add(
            self._envelope("system", subtype=subtype, durationMs=1234, isMeta=False), advance=False
        )

    def snapshot(self) -> Entry:
        entry = {
            "type": "file-history-snapshot",
            "messageId": self._uuid(),
            "snapshot": {"trackedFileBackups": {}, "timestamp": self._stamp()},
            "isSnapshotUpdate": False,
        }
        self.entries.append(entry)
        return entry

    def summary(self, text: str = "Fixing the build") -> Entry:
        entry = {"type": "summary", "summary": text, "leafUuid": self.leaf}
        self.entries.append(entry)
        return entry

    def compact(self, summary: str = "Summary of the earlier conversation.") -> None:
        boundary = self._envelope(
            "system",
            subtype="compact_boundary",
            content="Conversation compacted",
            logicalParentUuid=self.leaf,
            compactMetadata={"trigger": "auto", "preTokens": 155000},
        )
        boundary["parentUuid"] = None
        self._add(boundary)
        self.user(summary, isCompactSummary=True, isVisibleInTranscriptOnly=True)

    def rewind_to(self, uuid: str | None) -> None:
        """The next entry starts a new branch from ``uuid`` (a fork)."""
        self.leaf = uuid
