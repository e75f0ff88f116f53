"""How a run stops on Ctrl-C, SIGTERM and SIGHUP (the terminal went away).

All three end a run the same way: the run's task is cancelled, so every ``await``
unwinds through its clean-up (a running tool's process group is killed, lineage and
transcript are saved), and flower exits with the signal's conventional code. Ctrl-C is
asyncio's own handling; SIGTERM and SIGHUP do what it does.

A signal handler that raised instead would raise in whatever frame the main thread was
in, asyncio's included: in the middle of starting a subprocess, for one, where no
clean-up runs and the tool's command outlives flower. The one place where raising is
right is a blocking read of the user's answer, which a cancel never reaches; there
:func:`reading_answer` makes all three raise.

A script runs a workflow the way ``flower`` does::

    from flower.runtime.stopping import interrupted_exit, run_stoppable

    try:
        ctx = run_stoppable(workflow.run(runtime))
    except KeyboardInterrupt as exc:  # Ctrl-C, SIGTERM or SIGHUP: lineage is saved
        raise SystemExit(interrupted_exit(exc))
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Callable, Coroutine, Iterator
from types import FrameType
from typing import Any, TypeVar

INTERRUPTED_EXIT = 130  # 128 + SIGINT
STOPPING_SIGNALS = (signal.SIGHUP, signal.SIGTERM)

T = TypeVar("T")


class Terminated(KeyboardInterrupt):
    """SIGHUP or SIGTERM stopped the run; it ended the way Ctrl-C ends one."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.exit_code = 128 + signum


def interrupted_exit(exc: KeyboardInterrupt) -> int:
    """The conventional exit code of a run ``exc`` stopped: 128 + the signal's number."""
    return exc.exit_code if isinstance(exc, Terminated) else INTERRUPTED_EXIT


def run_stoppable(main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(main)``, where SIGTERM and SIGHUP cancel ``main`` as Ctrl-C does.

    Raises :class:`Terminated` when one of them stopped it (a second one stops at once).
    """
    import asyncio  # here: importing this module (the CLI's start-up) loads no engine

    received: list[int] = []
    with asyncio.Runner() as runner:
        loop = runner.get_loop()
        task: asyncio.Task[Any] | None = None

        async def tracked() -> T:
            nonlocal task
            task = asyncio.current_task()
            return await main

        def stop(signum: int, frame: FrameType | None) -> None:
            received.append(signum)
            if task is None or len(received) > 1:
                raise Terminated(signum)
            loop.call_soon_threadsafe(task.cancel)

        with _handlers(STOPPING_SIGNALS, stop):
            try:
                return runner.run(tracked())
            except asyncio.CancelledError:
                if received:
                    raise Terminated(received[0]) from None
                raise


@contextlib.contextmanager
def reading_answer() -> Iterator[None]:
    """While the main thread blocks reading what the user types, Ctrl-C, SIGTERM and
    SIGHUP interrupt the read at once (a cancelled task would wait for Enter)."""

    def stop(signum: int, frame: FrameType | None) -> None:
        raise Terminated(signum)

    with _handlers((signal.SIGINT,), signal.default_int_handler), _handlers(STOPPING_SIGNALS, stop):
        yield


@contextlib.contextmanager
def _handlers(
    signals: tuple[signal.Signals, ...], handler: Callable[[int, FrameType | None], Any]
) -> Iterator[None]:
    before = {sig: signal.signal(sig, handler) for sig in signals}
    try:
        yield
    finally:
        for sig, previous in before.items():
            signal.signal(sig, previous)


__all__ = [
    "INTERRUPTED_EXIT",
    "STOPPING_SIGNALS",
    "Terminated",
    "interrupted_exit",
    "reading_answer",
    "run_stoppable",
]
