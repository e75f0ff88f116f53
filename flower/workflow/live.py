"""Live output of a run: what the agent is doing while it does it.

:class:`Live` receives the runtime's events (:mod:`flower.runtime.events`) and the
step starts, and writes them as they happen: streamed text, tool calls with their
arguments shortened, tool results summarised, the offline wait line, then a final
summary. On a terminal it draws with rich (imported on first use); anywhere else it
writes plain text, one thing a line, so logs and pipes stay greppable.
"""

from __future__ import annotations

import sys
from typing import Any, TextIO

from flower.core.i18n import _
from flower.core.labels import WORK_STEP, builtin_key, parse_label, shown_label
from flower.core.open_line import set_open_line
from flower.runtime.events import (
    Event,
    SessionStarted,
    StepDone,
    TextDelta,
    ToolCall,
    ToolResult,
    TurnEnd,
    Waiting,
)
from flower.runtime.spec import STOP_CONTEXT_LIMIT, StepResult
from flower.runtime.summary import describe_call, format_totals, summarize_result, totals
from flower.workflow.banner import step_heading


class Live:
    """Writes a run as it happens; ``rich`` styles on a terminal, plain text otherwise.

        ``rounds`` is the number of work rounds per wake of ``work_step`` (for the step
        headers); set ``woke`` to this wake's number once it is known. Pass
        :meth:`on_event` as ``Runtime(on_event=...)`` and call :meth:`step_started` before
        each ``runtime.run`` (:class:`flower.runtime.live.LiveRuntime` does both: this is
    its :class:`~flower.runtime.live.RunWatcher`).
    """

    def __init__(
        self,
        stream: TextIO | None = None,
        *,
        rich: bool | None = None,
        rounds: int = 3,
        work_step: str | None = None,
    ) -> None:
        self.stream = stream if stream is not None else sys.stdout
        if rich is None:
            isatty = getattr(self.stream, "isatty", None)
            rich = bool(isatty and isatty())
        self.rich = rich
        self.rounds = rounds
        self.work_step = work_step if work_step is not None else builtin_key(WORK_STEP)
        self.woke: int | None = 1  # None: no wakes (flower once)
        self._console: Any = None
        self._in_text = False
        self._last_label: str | None = None
        self._born_here: set[str] = set()
        self._failures_shown: set[tuple[str, str | None]] = set()

    # -- writing

    def _console_for(self) -> Any:
        if self._console is None:
            from rich.console import Console

            self._console = Console(file=self.stream, highlight=False, soft_wrap=True)
        return self._console

    def line(self, text: str, style: str = "") -> None:
        """One whole line (ends any streamed text first)."""
        self._end_text()
        if self.rich and style:
            from rich.markup import escape

            self._console_for().print(f"[{style}]{escape(text)}[/]")
        else:
            self.stream.write(text + "\n")
            self.stream.flush()

    def _end_text(self) -> None:
        if self._in_text:
            self._in_text = False
            set_open_line(None)
            self.stream.write("\n")
            self.stream.flush()

    # -- what a run reports

    def step_started(
        self, label: str, *, resume: str | None, relay_from: str | None = None
    ) -> None:
        """A ``runtime.run`` is about to start; print its header when the step changes.

        It counts as resumed only when ``resume`` is a session an earlier process
        made (a second round in this process continues, it does not wake). A step whose
        first run here is a relay's new session (``relay_from``: finishing a relay a
        killed run began) goes on from that earlier session, through its handoff.
        """
        if label == self._last_label:
            return
        if resume is None and relay_from is not None:
            self._head(label, relay_from)
            self.line(
                _(
                    "  ... {step}: a killed run was handing over to a new session; it goes "
                    "on from that handoff (notes/relay/)"
                ).format(step=shown_label(parse_label(label).step)),
                "magenta",
            )
            return
        self._head(label, resume)

    def _head(self, label: str, resume: str | None) -> None:
        self._last_label = label
        resumed = resume is not None and resume not in self._born_here
        heading = step_heading(
            label, resumed=resumed, rounds=self.rounds, work_step=self.work_step, woke=self.woke
        )
        self.line(heading, "bold")

    def on_event(self, event: Event) -> None:
        if isinstance(event, TextDelta):
            if not self._in_text:
                self._in_text = True
                set_open_line(self._end_text)  # a warning meanwhile starts on its own line
            self.stream.write(event.text)
            self.stream.flush()
        elif isinstance(event, ToolCall):
            self.line("  -> " + describe_call(event.name, event.tool_input), "yellow")
        elif isinstance(event, ToolResult):
            summary = summarize_result(event.content, is_error=event.is_error, denied=event.denied)
            self.line("  <- " + summary, "red" if event.is_error else "cyan")
        elif isinstance(event, Waiting):
            self.line("  ... " + event.line, "magenta")
        elif isinstance(event, SessionStarted):
            if not event.resumed:
                self._born_here.add(event.session_id)
        elif isinstance(event, StepDone):
            result = event.result
            if result.stop == STOP_CONTEXT_LIMIT:  # not a failure: the workflow relays
                self.line(
                    _(
                        "  ... {step}: the context is near its limit; handing over to a new "
                        "session (notes/relay/)"
                    ).format(step=shown_label(result.step)),
                    "magenta",
                )
            elif not result.ok:
                self.failure(result)
        elif isinstance(event, TurnEnd):
            self._end_text()

    def failure(self, result: StepResult) -> None:
        """``!! step failed: why``, once per failure (a step may fail after its run
        ended well: a brief never confirmed, say)."""
        said = (result.step, result.error)
        if said not in self._failures_shown:
            self._failures_shown.add(said)
            self.line(
                _("  !! {step} failed: {error}").format(
                    step=shown_label(result.step), error=result.error
                ),
                "bold red",
            )

    def summary(self, results: list[StepResult], seconds: float, transcript: str) -> None:
        """The closing lines: steps, turns, cost, duration, where the transcript is."""
        self.line("")
        self.line("== " + format_totals(totals(results, seconds)), "bold")
        self.line(_("   transcript: {path}").format(path=transcript), "dim")


__all__ = ["Live"]
