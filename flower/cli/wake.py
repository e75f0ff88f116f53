"""The wake prompt: what a bare ``flower`` asks in a used directory on a terminal.

Enter continues; any text is the next sentence of the same conversation; ``/new``
asks what to do instead (the caller archives and starts over); end of input leaves
without touching anything, and so does Ctrl-C (which the caller reports as exit 130).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from typing import TextIO

from flower.cli.banner import new_task_prompt_text, wake_prompt_text
from flower.workflow.wake import WakeChoice

NEW_COMMAND = "/new"

Reader = Callable[[], str]
"""Reads one line; raises ``EOFError`` at end of input and ``KeyboardInterrupt`` on Ctrl-C."""


def read_line(prompt: str = "> ", out: TextIO | None = None) -> str:
    """``input()`` with the prompt on ``out`` (stderr keeps stdout clean for ``--json``)."""
    stream = out if out is not None else sys.stderr
    stream.write(prompt)
    stream.flush()
    line = sys.stdin.readline()
    if not line:
        raise EOFError
    return typed_text(line.rstrip("\r\n"))


def typed_text(text: str) -> str:
    """What was typed, as text that can be stored and sent: bytes that were not UTF-8
    (Python keeps them as lone surrogates) become U+FFFD. Lineage, the brief and the
    API request all need valid UTF-8, and words that cannot be kept would be lost."""
    return _SURROGATE.sub("\ufffd", text)


_SURROGATE = re.compile("[\ud800-\udfff]")


def ask_new_task(read: Reader, out: TextIO) -> str | None:
    """The new-task prompt until something is said; ``None`` at end of input (Ctrl-C
    raises ``KeyboardInterrupt`` for the caller to report)."""
    out.write(new_task_prompt_text() + "\n")
    out.flush()
    try:
        while True:
            said = read().strip()
            if said:
                return said
    except EOFError:
        return None


def wake_prompt(read: Reader, out: TextIO) -> WakeChoice:
    """Ask the wake prompt once and say what the user chose."""
    try:  # Ctrl-C may land while the prompt is still being written
        out.write(wake_prompt_text() + "\n")
        out.flush()
        said = read().strip()
    except EOFError:
        return WakeChoice("leave")
    except KeyboardInterrupt:
        return WakeChoice("interrupted")
    if not said:
        return WakeChoice("continue")
    if said == NEW_COMMAND:
        task = ask_new_task(read, out)
        return WakeChoice("leave") if task is None else WakeChoice("new", task)
    return WakeChoice("say", said)


__all__ = ["NEW_COMMAND", "WakeChoice", "ask_new_task", "read_line", "wake_prompt"]
