"""What a run's events and results say in short, for live output and a run's last line.

A tool call as ``Bash: ls -la`` (:func:`describe_call`), its result as ``3 lines: first
line…`` (:func:`summarize_result`), a run's agent runs, turns, cost and time
(:func:`totals`, :func:`format_totals`). ``flower``'s live output writes these; any
:class:`~flower.runtime.live.RunWatcher` can::

    from flower.runtime.events import ToolCall
    from flower.runtime.summary import describe_call

    class Printer:
        def step_started(self, label, *, resume, relay_from=None):
            print("==", label)

        def on_event(self, event):
            if isinstance(event, ToolCall):
                print("->", describe_call(event.name, event.tool_input))
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from flower.core.display import compact_json, one_line
from flower.core.i18n import _, ngettext

if TYPE_CHECKING:
    from flower.runtime.spec import StepResult

MAX_ARGS = 80
MAX_RESULT_LINE = 80
KEY_ARGUMENT = {
    "Bash": "command",
    "Read": "file_path",
    "Write": "file_path",
    "Edit": "file_path",
    "Glob": "pattern",
    "Grep": "pattern",
}
"""The argument that says what a known tool call does; others show compact JSON."""


def describe_call(name: str, tool_input: dict[str, Any] | str) -> str:
    """``Bash: ls -la`` / ``Write: md2html.py (1.2K chars)`` / ``Tool {"a": 1}``."""
    if isinstance(tool_input, str):
        return f"{name} {one_line(tool_input, MAX_ARGS)}"
    key = KEY_ARGUMENT.get(name)
    if key and isinstance(tool_input.get(key), str):
        shown = f"{name}: {one_line(tool_input[key], MAX_ARGS)}"
        content = tool_input.get("content")
        if name == "Write" and isinstance(content, str):
            n = len(content)
            shown += " " + ngettext("({n} char)", "({n} chars)", n).format(n=n)
        return shown
    return f"{name} {one_line(compact_json(tool_input), MAX_ARGS)}"


def summarize_result(content: str, *, is_error: bool, denied: bool) -> str:
    """``3 lines: first line…`` or ``denied: why`` / ``error: why``."""
    text = content.strip()
    if denied:
        return _("denied: {why}").format(why=one_line(text, MAX_RESULT_LINE))
    if is_error:
        return _("error: {why}").format(why=one_line(text, MAX_RESULT_LINE))
    if not text:
        return _("(no output)")
    lines = text.splitlines()
    first = one_line(lines[0], MAX_RESULT_LINE)
    if len(lines) == 1:
        return first
    return ngettext("{n} line: {first}", "{n} lines: {first}", len(lines)).format(
        n=len(lines), first=first
    )


@dataclass
class Totals:
    """What a run cost, for its closing line (:func:`format_totals`)."""

    runs: int = 0  # agent runs: a step's exchanges, its judge's rounds
    turns: int = 0
    cost_usd: float | None = None
    seconds: float = 0.0


def totals(results: Iterable[StepResult], seconds: float) -> Totals:
    """Agent runs, turns and cost of a run's StepResults (cost None when none is known)."""
    out = Totals(seconds=seconds)
    for result in results:
        out.runs += 1
        out.turns += result.num_turns
        if result.cost_usd is not None:
            out.cost_usd = (out.cost_usd or 0.0) + result.cost_usd
    return out


def format_totals(t: Totals) -> str:
    """``3 runs · 12 turns · $0.0412 · 8.3 s`` in the active language."""
    cost = _("cost unknown") if t.cost_usd is None else f"${t.cost_usd:.4f}"
    runs = ngettext("{n} run", "{n} runs", t.runs).format(n=t.runs)
    turns = ngettext("{n} turn", "{n} turns", t.turns).format(n=t.turns)
    return f"{runs} · {turns} · {cost} · {t.seconds:.1f} s"


__all__ = [
    "KEY_ARGUMENT",
    "Totals",
    "describe_call",
    "format_totals",
    "summarize_result",
    "totals",
]
