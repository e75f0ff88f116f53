"""SIGTERM and SIGHUP stop a run as Ctrl-C does: by cancelling it at an ``await``.

The signal is sent to this process from inside the coroutine, so its handler runs at
that very line: a handler that raised there would skip the clean-up of whatever the
line was in the middle of (asyncio starting a tool's subprocess, in the run that
showed it: the command outlived flower).
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Iterator

import pytest

from flower.runtime.stopping import (
    INTERRUPTED_EXIT,
    Terminated,
    interrupted_exit,
    reading_answer,
    run_stoppable,
)


@pytest.fixture
def ctrl_c_heard() -> Iterator[None]:
    """asyncio only handles Ctrl-C where SIGINT has its default handler (a background
    job of a shell script starts with it ignored)."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_cancels_the_run_at_its_next_await_not_mid_line(sig: signal.Signals) -> None:
    seen: list[str] = []

    async def run() -> None:
        try:
            os.kill(os.getpid(), sig)
            seen.append("the line after the signal ran")
            await asyncio.sleep(30)
            seen.append("slept")
        except asyncio.CancelledError:
            seen.append("cancelled at the await")
            raise
        finally:
            seen.append("clean-up ran")

    with pytest.raises(Terminated) as stopped:
        run_stoppable(run())
    assert seen == ["the line after the signal ran", "cancelled at the await", "clean-up ran"]
    assert interrupted_exit(stopped.value) == 128 + sig


def test_a_second_signal_stops_at_once() -> None:
    async def run() -> None:
        os.kill(os.getpid(), signal.SIGTERM)
        os.kill(os.getpid(), signal.SIGTERM)
        raise AssertionError("the second signal did not stop the run")

    with pytest.raises(Terminated):
        run_stoppable(run())


def test_ctrl_c_is_asyncios_own_and_exits_130(ctrl_c_heard: None) -> None:
    async def run() -> None:
        os.kill(os.getpid(), signal.SIGINT)
        await asyncio.sleep(30)

    with pytest.raises(KeyboardInterrupt) as stopped:
        run_stoppable(run())
    assert not isinstance(stopped.value, Terminated)
    assert interrupted_exit(stopped.value) == INTERRUPTED_EXIT


def test_a_run_that_ends_gives_its_result_and_puts_the_handlers_back() -> None:
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGHUP)}

    async def run() -> int:
        await asyncio.sleep(0)
        return 7

    assert run_stoppable(run()) == 7
    assert {sig: signal.getsignal(sig) for sig in before} == before


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_blocking_read_of_the_answer_is_interrupted_at_once(sig: signal.Signals) -> None:
    """A cancel would wait for Enter: while the user is asked, all three raise."""

    def read() -> str:
        os.kill(os.getpid(), sig)
        raise AssertionError("the read went on")

    async def run() -> str:
        with reading_answer():
            return read()

    with pytest.raises(KeyboardInterrupt) as stopped:
        run_stoppable(run())
    assert interrupted_exit(stopped.value) == 128 + sig
