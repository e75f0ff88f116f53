"""How the CLI reports an error: one clear line on stderr, or the traceback on demand."""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Callable

from flower.core.errors import ConfigError, FlowerError

_open_line: list[Callable[[], None]] = []
"""How to end the line the model's streamed text has left open (set by the live output
while it streams): a warning or an error then starts on a line of its own."""


def set_open_line(end: Callable[[], None] | None) -> None:
    """``end`` ends the open line of streamed text (None: no line is open)."""
    _open_line[:] = [] if end is None else [end]


def end_open_line() -> None:
    """End the line streamed text left open, if any, before writing to stderr."""
    if _open_line:
        _open_line.pop()()


def debug_enabled() -> bool:
    """``FLOWER_DEBUG=1`` shows tracebacks instead of hiding them."""
    return os.environ.get("FLOWER_DEBUG", "") not in ("", "0", "false", "no")


def report_error(exc: FlowerError) -> int:
    """Print ``exc`` as ``flower: error: ...`` on stderr; return the exit code to use."""
    if debug_enabled():
        traceback.print_exception(exc, file=sys.stderr)
    from flower.core.redact import redact_text  # loaded when there is something to report

    text = str(exc)
    if isinstance(exc, ConfigError) and exc.key:
        from flower.cli.context import config_error_text

        text = config_error_text(exc)
    message = redact_text(text or type(exc).__name__)
    end_open_line()
    print(f"flower: error: {message}", file=sys.stderr)
    return int(getattr(exc, "exit_code", 1))


_warned: set[str] = set()


def warn(message: str) -> None:
    """``flower: warning: ...`` on stderr, once per message: what flower both logs and
    warns about (a loose file mode, an entry that does not decrypt) is printed once."""
    from flower.core.redact import redact_text

    line = f"flower: warning: {redact_text(message)}"
    if line in _warned:
        return
    _warned.add(line)
    end_open_line()
    print(line, file=sys.stderr)
