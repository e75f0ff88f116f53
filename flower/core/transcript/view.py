"""A readable view of a transcript entry: who said what, which tools ran, what came back.

:func:`view_lines` turns one entry into :class:`ViewLine` s, each of a :data:`LineKind`
(a user's words, a tool call, its result or error, the assistant's text, thinking...),
a label in the active language and the text, shortened. ``flower sessions show`` and
``flower sessions tail`` draw them in colour; a program prints them as it likes::

    from flower.core.transcript.view import view_lines

    entry = {"type": "user", "message": {"role": "user", "content": "hello"}}
    for line in view_lines(entry):
        print(line.kind, line.label, line.text)
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Literal

import msgspec

from flower.core.display import compact_json
from flower.core.i18n import _, ngettext
from flower.core.records import Entry
from flower.core.transcript.blocks import content_words

LineKind = Literal[
    "user",
    "tool_result",
    "tool_error",
    "assistant",
    "tool_call",
    "thinking",
    "system",
    "api_error",
    "other",
]
"""What a line shows: ``other`` is an unknown block or entry type (shown as ``[type]``)
and a session title line."""


class ViewLine(msgspec.Struct, frozen=True):
    """One line of a transcript's view: its ``kind``, ``label`` and ``text``."""

    kind: LineKind
    label: str
    text: str


MAX_TEXT = 2000
MAX_ARGS = 200
MAX_RESULT = 400


def shorten(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, saying how many more there were."""
    text = text.strip()
    if len(text) <= limit:
        return text
    more = len(text) - limit
    return text[:limit] + ngettext(
        "… ({count} more character)", "… ({count} more characters)", more
    ).format(count=more)


def _result_text(content: object) -> str:
    words = content_words(content)
    return compact_json(content) if words is None else words


def _user_lines(message: dict[str, Any]) -> Iterator[ViewLine]:
    content = message.get("content")
    if isinstance(content, str):
        yield ViewLine("user", _("user"), shorten(content, MAX_TEXT))
        return
    for block in content or []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "tool_result":
            label = _("tool error") if block.get("is_error") else _("tool result")
            text = shorten(_result_text(block.get("content")), MAX_RESULT)
            yield ViewLine("tool_error" if block.get("is_error") else "tool_result", label, text)
        elif kind == "text":
            yield ViewLine("user", _("user"), shorten(str(block.get("text", "")), MAX_TEXT))
        else:
            yield ViewLine("other", _("user"), f"[{kind}]")


def _assistant_lines(entry: Entry, message: dict[str, Any]) -> Iterator[ViewLine]:
    if entry.get("isApiErrorMessage"):
        yield ViewLine(
            "api_error", _("api error"), shorten(_result_text(message.get("content")), MAX_TEXT)
        )
        return
    for block in message.get("content") or []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            yield ViewLine(
                "assistant", _("assistant"), shorten(str(block.get("text", "")), MAX_TEXT)
            )
        elif kind == "tool_use":
            args = shorten(compact_json(block.get("input", {})), MAX_ARGS)
            yield ViewLine("tool_call", _("tool call"), f"{block.get('name', '?')} {args}")
        elif kind in ("thinking", "redacted_thinking"):
            yield ViewLine("thinking", _("thinking"), shorten(str(block.get("thinking", "")), 200))
        else:
            yield ViewLine("other", _("assistant"), f"[{kind}]")


def view_lines(entry: Entry) -> Iterator[ViewLine]:
    """The lines one entry shows as; unknown types show as a dim ``[type]`` line."""
    kind = entry.get("type")
    message = entry.get("message")
    if kind == "user" and isinstance(message, dict):
        yield from _user_lines(message)
    elif kind == "assistant" and isinstance(message, dict):
        yield from _assistant_lines(entry, message)
    elif kind == "system":
        detail = entry.get("subtype") or entry.get("content") or ""
        yield ViewLine("system", _("system"), shorten(str(detail), MAX_RESULT))
    elif kind == "summary" and isinstance(entry.get("summary"), str):
        # Claude Code's session title line
        yield ViewLine("other", _("summary"), shorten(entry["summary"], MAX_RESULT))
    else:
        yield ViewLine("other", str(kind), "")


__all__ = ["MAX_ARGS", "MAX_RESULT", "MAX_TEXT", "LineKind", "ViewLine", "shorten", "view_lines"]
