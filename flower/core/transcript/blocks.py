"""Reading one entry: its message, content blocks, tool calls, tool results and texts."""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping, Sequence
from typing import Any

from flower.core.records import Entry

CONVERSATION_TYPES = frozenset({"user", "assistant"})


def message_of(entry: Mapping[str, Any]) -> dict[str, Any]:
    message = entry.get("message")
    return message if isinstance(message, dict) else {}


def content_blocks(entry: Mapping[str, Any]) -> list[Any]:
    """The entry's ``message.content`` as a list (a plain string becomes one text block)."""
    message = entry.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, list):
        return content
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return []


def is_conversation(entry: Mapping[str, Any]) -> bool:
    """A user or assistant turn of the main thread (sidechains belong to subagents)."""
    return entry.get("type") in CONVERSATION_TYPES and not entry.get("isSidechain")


def _blocks_of_kind(entry: Mapping[str, Any], kind: str) -> list[dict[str, Any]]:
    # hot path (every policy scans every entry): plain lookups, no helper calls
    message = entry.get("message")
    if not isinstance(message, dict):
        return []
    content = message.get("content")
    if not isinstance(content, list):
        return []
    return [b for b in content if isinstance(b, dict) and b.get("type") == kind]


def iter_blocks(
    entries: Sequence[Entry], entry_type: str, block_type: str
) -> Iterator[tuple[int, Entry, dict[str, Any]]]:
    """``(index, entry, block)`` for every ``block_type`` block in entries of
    ``entry_type``: the one fast scan policies share (``tool_use`` in ``assistant``,
    ``tool_result`` in ``user``)."""
    for i, entry in enumerate(entries):
        if entry.get("type") != entry_type:
            continue
        message = entry.get("message")
        if message.__class__ is not dict:
            continue
        content = message.get("content")
        if content.__class__ is not list:
            continue
        for block in content:
            if block.__class__ is dict and block.get("type") == block_type:
                yield i, entry, block


def tool_uses(entry: Mapping[str, Any]) -> list[dict[str, Any]]:
    if entry.get("type") != "assistant":
        return []
    return _blocks_of_kind(entry, "tool_use")


def tool_results(entry: Mapping[str, Any]) -> list[dict[str, Any]]:
    if entry.get("type") != "user":
        return []
    return _blocks_of_kind(entry, "tool_result")


def result_text(block: Mapping[str, Any]) -> str:
    """The text of a tool_result's ``content`` (string or text blocks); images are skipped."""
    content = block.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            b.get("text", "")
            for b in content
            if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
        )
    return ""


def content_words(content: object, *, skip: Collection[str] = ()) -> str | None:
    """The words of a message or tool result ``content`` for a reader: its text blocks,
    ``[type]`` standing for each other block (but the kinds in ``skip``); None when
    ``content`` is neither a string nor a list of blocks."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return None
    parts = []
    for block in content:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        elif block.get("type") not in skip:
            parts.append(f"[{block.get('type', 'block')}]")
    return "\n".join(parts)


def prompt_texts(entry: Mapping[str, Any]) -> list[str]:
    """The words of a user entry, in order: its string content or its text blocks (tool
    results and anything else left out); ``[]`` for any other entry."""
    return message_texts(entry) if entry.get("type") == "user" else []


def message_texts(entry: Mapping[str, Any]) -> list[str]:
    """The text of an entry's message, in order: its string content or its text blocks
    (tool calls, results, thinking and images left out)."""
    content = message_of(entry).get("content")
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [
        block["text"]
        for block in content
        if isinstance(block, dict)
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
    ]


def waiting_user_texts(entries: Sequence[Entry]) -> list[str]:
    """The texts of the user messages after the last reply the model gave (a synthetic
    API-error entry is no reply): what still waits for an answer, oldest first."""
    from flower.core.entries import is_synthetic_error

    texts: list[str] = []
    for entry in reversed(entries):
        if entry.get("type") == "assistant" and not is_synthetic_error(entry):
            break
        texts[:0] = prompt_texts(entry)
    return texts
