"""Signals the tests send to the flower processes they start."""

from __future__ import annotations

import signal


def let_children_hear_ctrl_c() -> None:
    """Undo an inherited "ignore SIGINT" so that child processes get Ctrl-C again.

    A shell script starts its background jobs (``pytest ... &``) with SIGINT ignored,
    every process they start inherits that, and Python leaves it ignored: a flower
    started by such a test would carry on through the SIGINT the test sends it.
    Only the main thread may change it, so call this at start-up.
    """
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
