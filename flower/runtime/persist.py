"""Building Claude-Code-shaped entries and appending each one the moment it exists.

One :class:`TranscriptWriter` follows one session: every entry it writes takes the
previous one as ``parentUuid``, so the stored transcript is a single chain and a
``kill -9`` at any instant loses at most the response still streaming.
Shapes: docs/entries.md.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from flower import __version__
from flower.core.ids import uuid7
from flower.core.protocols import SessionStore
from flower.core.records import Entry, SessionKey

SYNTHETIC_MODEL = "<synthetic>"
_ZERO_USAGE = {
    "input_tokens": 0,
    "output_tokens": 0,
    "cache_creation_input_tokens": 0,
    "cache_read_input_tokens": 0,
}


def now_iso() -> str:
    """ISO 8601 in UTC with milliseconds and ``Z``, as Claude Code writes timestamps."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


class TranscriptWriter:
    """Appends one session's entries, each chained to the one before."""

    def __init__(
        self, store: SessionStore, key: SessionKey, cwd: str, parent_uuid: str | None = None
    ) -> None:
        self.store = store
        self.key = key
        self.cwd = cwd
        self.last_uuid = parent_uuid
        self.written = 0

    def _envelope(self, entry_type: str) -> Entry:
        return {
            "parentUuid": self.last_uuid,
            "isSidechain": False,
            "userType": "external",
            "cwd": self.cwd,
            "sessionId": self.key.session_id,
            "version": __version__,
            "type": entry_type,
            "uuid": uuid7(),
            "timestamp": now_iso(),
        }

    def _append(self, entry: Entry) -> Entry:
        self.store.append(self.key, [entry])
        self.last_uuid = entry["uuid"]
        self.written += 1
        return entry

    def user_prompt(self, text: str, *, relay_from: str | None = None) -> Entry:
        """A user prompt; ``relay_from`` (the first entry of a relayed session) names
        the session it took over from, as ``relayFrom``."""
        entry = self._envelope("user")
        entry["message"] = {"role": "user", "content": text}
        if relay_from is not None:
            entry["relayFrom"] = relay_from
        return self._append(entry)

    def assistant(self, message: dict[str, Any], request_id: str | None) -> Entry:
        """One API response, whole: ``message`` as the API returned it."""
        entry = self._envelope("assistant")
        entry["message"] = message
        entry["requestId"] = request_id
        return self._append(entry)

    def tool_results(
        self,
        assistant_uuid: str,
        blocks: Sequence[dict[str, Any]],
        results: Sequence[dict[str, Any]],
    ) -> Entry:
        """The answers to every tool_use of one assistant message, in order.

        ``toolUseResult`` is the tool's structured result for a single call, and the
        list of them (same order as ``blocks``) when the message asked for several.
        """
        entry = self._envelope("user")
        entry["message"] = {"role": "user", "content": list(blocks)}
        entry["toolUseResult"] = results[0] if len(results) == 1 else list(results)
        entry["sourceToolAssistantUUID"] = assistant_uuid
        return self._append(entry)

    def api_error(self, text: str, kind: str, status: int | None) -> Entry:
        """A failed API call, stored for the record; the pruning view never shows it."""
        from flower.core.resilience import error_kind  # loaded with the first failure

        entry = self._envelope("assistant")
        entry["isApiErrorMessage"] = True
        entry["error"] = error_kind(kind, status, text)
        entry["apiErrorStatus"] = status
        entry["message"] = {
            "id": str(uuid.uuid4()),
            "type": "message",
            "role": "assistant",
            "model": SYNTHETIC_MODEL,
            "content": [{"type": "text", "text": f"API Error: {text}"}],
            "stop_reason": "stop_sequence",
            "stop_sequence": "",
            "usage": dict(_ZERO_USAGE),
        }
        return self._append(entry)
