"""A readable view of a transcript: who said what, which tools ran, what came back.

Pure functions from entries to ``(style, label, text)`` lines; ``print_transcript``
draws them with rich (imported only here, only when called).
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from flower.cli.output import is_tty, n_entries
from flower.core.display import compact_json
from flower.core.i18n import _, ngettext
from flower.core.records import Entry
from flower.core.transcript.blocks import content_words

MAX_TEXT = 2000
MAX_ARGS = 200
MAX_RESULT = 400

Line = tuple[str, str, str]
"""(rich style, label, text)."""


def shorten(text: str, limit: int) -> str:
    text = text.strip()
    if len(text) <= limit:
        return text
    more = len(text) - limit
    return text[:limit] + ngettext(
        "… ({count} more character)", "… ({count} more characters)", more
    ).format(count=more)


def _result_text(content: Any) -> str:
    words = content_words(content)
    return compact_json(content) if words is None else words


def _user_lines(message: dict[str, Any]) -> Iterator[Line]:
    content = message.get("content")
    if isinstance(content, str):
        yield ("bold green", _("user"), shorten(content, MAX_TEXT))
        return
    for block in content or []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "tool_result":
            label = _("tool error") if block.get("is_error") else _("tool result")
            text = shorten(_result_text(block.get("content")), MAX_RESULT)
            yield ("red" if block.get("is_error") else "cyan", label, text)
        elif kind == "text":
            yield ("bold green", _("user"), shorten(str(block.get("text", "")), MAX_TEXT))
        else:
            yield ("dim", _("user"), f"[{kind}]")


def _assistant_lines(entry: Entry, message: dict[str, Any]) -> Iterator[Line]:
    if entry.get("isApiErrorMessage"):
        yield ("red", _("api error"), shorten(_result_text(message.get("content")), MAX_TEXT))
        return
    for block in message.get("content") or []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            yield ("bold blue", _("assistant"), shorten(str(block.get("text", "")), MAX_TEXT))
        elif kind == "tool_use":
            args = shorten(compact_json(block.get("input", {})), MAX_ARGS)
            yield ("yellow", _("tool call"), f"{block.get('name', '?')} {args}")
        elif kind in ("thinking", "redacted_thinking"):
            yield ("dim", _("thinking"), shorten(str(block.get("thinking", "")), 200))
        else:
            yield ("dim", _("assistant"), f"[{kind}]")


def entry_lines(entry: Entry) -> Iterator[Line]:
    """The lines one entry shows as; unknown types show as a dim ``[type]`` line."""
    kind = entry.get("type")
    message = entry.get("message")
    if kind == "user" and isinstance(message, dict):
        yield from _user_lines(message)
    elif kind == "assistant" and isinstance(message, dict):
        yield from _assistant_lines(entry, message)
    elif kind == "system":
        detail = entry.get("subtype") or entry.get("content") or ""
        yield ("magenta", _("system"), shorten(str(detail), MAX_RESULT))
    elif kind == "summary" and isinstance(entry.get("summary"), str):
        # Claude Code's session title line
        yield ("dim", _("summary"), shorten(entry["summary"], MAX_RESULT))
    else:
        yield ("dim", str(kind), "")


def print_transcript(
    entries: Iterable[Entry], title: str, notes: Mapping[str, Sequence[str]] | None = None
) -> int:
    """Draw the transcript on stdout; returns the number of entries shown.

    Colours on a terminal (rich); plain ``label: text`` lines into a pipe or file,
    which is also much faster for long transcripts. ``notes`` are ``fork`` lines shown
    after the entry with that uuid (where another session was forked off).
    """
    entries = _first_read(entries)
    notes = notes or {}
    if not is_tty(sys.stdout):
        return _print_plain(entries, title, notes)
    from rich.console import Console
    from rich.text import Text

    console = Console(file=sys.stdout, highlight=False)
    console.rule(Text(title))
    count = 0
    chunk = Text()
    for entry in entries:
        count += 1
        for style, label, text in entry_lines(entry):
            chunk.append(label, style=style)
            chunk.append(f": {_indent(text)}\n" if text else "\n")
        for note in notes.get(entry.get("uuid"), ()):  # type: ignore[arg-type]
            chunk.append(_("fork"), style="bold magenta")
            chunk.append(f": {note}\n")
        if count % 500 == 0:
            console.print(chunk, end="")
            chunk = Text()
    console.print(chunk, end="")
    console.rule(n_entries(count))
    return count


def _first_read(entries: Iterable[Entry]) -> Iterator[Entry]:
    """``entries`` with the first already read: a store that cannot be read (a wrong
    encryption key) fails before the title is printed, not under it."""
    stream = iter(entries)
    first = next(stream, None)
    return stream if first is None else itertools.chain([first], stream)


def _indent(text: str) -> str:
    # continuation lines are indented so each entry stays one visual block
    return text.replace("\n", "\n    ")


def _print_plain(
    entries: Iterable[Entry], title: str, notes: Mapping[str, Sequence[str]] | None = None
) -> int:
    out = sys.stdout
    out.write(f"== {title} ==\n")
    count = 0
    for entry in entries:
        count += 1
        for _style, label, text in entry_lines(entry):
            out.write(f"{label}: {_indent(text)}\n" if text else f"{label}\n")
        for note in (notes or {}).get(entry.get("uuid"), ()):  # type: ignore[arg-type]
            out.write(f"{_('fork')}: {note}\n")
    out.write(f"== {n_entries(count)} ==\n")
    return count
