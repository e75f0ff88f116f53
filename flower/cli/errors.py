"""How the CLI reports an error: one clear line on stderr, or the traceback on demand."""

from __future__ import annotations

import os
import sys
import traceback

from flower.core.errors import ConfigError, FlowerError
from flower.core.open_line import end_open_line


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
