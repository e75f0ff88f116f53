"""A readable view of a transcript: who said what, which tools ran, what came back.

:func:`flower.core.transcript.view.view_lines` says what an entry shows as;
:func:`entry_lines` gives each line its style and ``print_transcript`` draws them with
rich (imported only here, only when called).
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence

from flower.cli.output import is_tty
from flower.core.display import n_entries
from flower.core.i18n import _
from flower.core.records import Entry
from flower.core.transcript.view import LineKind, view_lines

KIND_STYLE: dict[LineKind, str] = {
    "user": "bold green",
    "tool_result": "cyan",
    "tool_error": "red",
    "assistant": "bold blue",
    "tool_call": "yellow",
    "thinking": "dim",
    "system": "magenta",
    "api_error": "red",
    "other": "dim",
}
"""The rich style of each :data:`~flower.core.transcript.view.LineKind`."""

Line = tuple[str, str, str]
"""(rich style, label, text)."""


def entry_lines(entry: Entry) -> Iterator[Line]:
    """:func:`~flower.core.transcript.view.view_lines` of ``entry``, each with its style."""
    for line in view_lines(entry):
        yield KIND_STYLE[line.kind], line.label, line.text


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
