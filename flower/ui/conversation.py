"""Transcript entries -> the items a session page shows, as typed structs.

Pure functions of the entries: who said what, thinking (folded), tool calls with their
results, images, compaction and relay boundaries and fork points. A tool result is
shown inside its call when both are in the same batch of entries; a result that comes
without its call (a live append after the call was shown) is shown on its own.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import msgspec

from flower.core.entries import is_synthetic_error
from flower.core.records import Entry
from flower.core.transcript.blocks import content_words
from flower.workflow.roles import first_prompt

IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
"""Media types an image block may be shown as (a data: URL of any other is not made)."""


class Image(msgspec.Struct, frozen=True):
    media_type: str
    data: str  # base64, as stored


class Result(msgspec.Struct):
    """What a tool call got back."""

    text: str
    is_error: bool = False
    images: list[Image] = msgspec.field(default_factory=list)
    entry_uuid: str = ""  # the user entry that carries it
    mark: str = ""  # pruned view: what a policy did to that entry
    mark_kind: str = ""


class Block(msgspec.Struct):
    """One part of an item: ``text``, ``thinking``, ``tool`` (a call), ``result``
    (a result shown without its call), ``image`` or ``other``."""

    kind: str
    text: str = ""
    name: str = ""  # a tool's name
    tool_id: str = ""
    image: Image | None = None
    result: Result | None = None


class ForkPoint(msgspec.Struct, frozen=True):
    session_id: str
    message_uuid: str


class Item(msgspec.Struct):
    """One entry as shown: its role, its blocks, and what marks it."""

    role: str  # user | assistant | api-error | system | compaction | summary | other
    uuid: str
    timestamp: str
    blocks: list[Block]
    label: str = ""  # a boundary's or a bookkeeping line's words
    mark: str = ""  # pruned view: "removed by denials", "trimmed by trim", ...
    mark_kind: str = ""  # removed | changed | trimmed | added
    forked_from: ForkPoint | None = None  # a fork's last copied entry: where it left
    forks: list[str] = msgspec.field(default_factory=list)  # sessions forked off here
    relay_from: str = ""


def text_of(content: object) -> str:
    """The words of a message or tool result ``content`` (images are shown on their own)."""
    words = content_words(content, skip=("image",))
    if words is not None:
        return words
    return "" if content is None else json.dumps(content, ensure_ascii=False)


def _image(block: Mapping[str, Any]) -> Image | None:
    source = block.get("source")
    if not isinstance(source, dict) or source.get("type") != "base64":
        return None
    media_type, data = source.get("media_type"), source.get("data")
    if media_type not in IMAGE_TYPES or not isinstance(data, str):
        return None
    return Image(media_type, data)


def _images(content: object) -> list[Image]:
    if not isinstance(content, list):
        return []
    found = (_image(b) for b in content if isinstance(b, dict) and b.get("type") == "image")
    return [image for image in found if image is not None]


def tool_results(entries: Iterable[Entry]) -> dict[str, Result]:
    """Every tool result in ``entries``, by the id of the call it answers."""
    results: dict[str, Result] = {}
    for entry in entries:
        message = entry.get("message")
        if entry.get("type") != "user" or not isinstance(message, dict):
            continue
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                results[str(block.get("tool_use_id", ""))] = Result(
                    text=text_of(block.get("content")),
                    is_error=block.get("is_error") is True,
                    images=_images(block.get("content")),
                    entry_uuid=str(entry.get("uuid") or ""),
                )
    return results


def _message_blocks(content: object, results: Mapping[str, Result], shown: set[str]) -> list[Block]:
    if isinstance(content, str):
        return [Block("text", text=content)]
    blocks: list[Block] = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            blocks.append(Block("text", text=str(block.get("text", ""))))
        elif kind in ("thinking", "redacted_thinking"):
            words = block.get("thinking") if kind == "thinking" else "(redacted)"
            blocks.append(Block("thinking", text=str(words or "")))
        elif kind == "tool_use":
            tool_id = str(block.get("id", ""))
            arguments = json.dumps(block.get("input", {}), ensure_ascii=False, indent=2)
            result = results.get(tool_id)
            if result is not None:
                shown.add(tool_id)
            blocks.append(
                Block(
                    "tool",
                    text=arguments,
                    name=str(block.get("name", "?")),
                    tool_id=tool_id,
                    result=result,
                )
            )
        elif kind == "tool_result":
            tool_id = str(block.get("tool_use_id", ""))
            if tool_id not in shown:
                blocks.append(Block("result", tool_id=tool_id, result=results.get(tool_id)))
        elif kind == "image":
            image = _image(block)
            blocks.append(Block("image", image=image) if image else Block("other", text="[image]"))
        else:
            blocks.append(Block("other", text=f"[{kind}]"))
    return blocks


def _bookkeeping(entry: Entry) -> tuple[str, str]:
    """(role, label) of an entry that is no message."""
    kind = entry.get("type")
    if kind == "system" and entry.get("subtype") == "compact_boundary":
        return "compaction", "compacted: the history above is summarised below"
    if kind == "system":
        return "system", str(entry.get("subtype") or entry.get("content") or "system")
    if kind == "summary" and isinstance(entry.get("summary"), str):
        return "summary", entry["summary"]
    return "other", str(kind)


def items(entries: Sequence[Entry]) -> list[Item]:
    """The items ``entries`` show as, in order."""
    results = tool_results(entries)
    shown: set[str] = set()
    out: list[Item] = []
    for entry in entries:
        message = entry.get("message")
        kind = entry.get("type")
        common: dict[str, Any] = {
            "uuid": str(entry.get("uuid") or ""),
            "timestamp": str(entry.get("timestamp") or ""),
            "relay_from": str(entry.get("relayFrom") or ""),
        }
        if kind in ("user", "assistant") and isinstance(message, dict):
            blocks = _message_blocks(message.get("content"), results, shown)
            if kind == "user" and not blocks:
                continue  # every result was shown inside its call
            role = "api-error" if is_synthetic_error(entry) else str(kind)
            label = "compaction summary" if entry.get("isCompactSummary") else ""
            out.append(Item(role=role, blocks=blocks, label=label, **common))
        else:
            role, label = _bookkeeping(entry)
            out.append(Item(role=role, blocks=[], label=label, **common))
    return out


def title_of(entries: Iterable[Entry], limit: int = 120) -> str:
    """The first thing said in a session, on one line: its first prompt's words."""
    words = " ".join(first_prompt(entries).split())
    return words if len(words) <= limit else words[: limit - 1] + "…"
