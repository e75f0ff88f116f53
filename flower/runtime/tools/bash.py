"""Bash: ``/bin/bash -c <command>`` in the workspace, in its own process group.

Bash cannot be confined like the file tools: it only starts with the workspace as its
working directory. What it guarantees is that it ends: the whole process group is killed
at the timeout, background children that still hold the output pipe are killed once
bash itself has exited, and the call returns whatever came out, capped at
``max_output`` characters (head and tail kept, the cut middle counted). While it runs,
the group is recorded in the context's ledger, so that a run after a ``kill -9`` of
flower kills it (:mod:`flower.runtime.tools.orphans`).
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import signal
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from flower.runtime.tools.base import ToolContext, ToolInputError, ToolOutcome
from flower.runtime.tools.inputs import BashInput
from flower.runtime.tools.orphans import SPAWN_VARIABLE, announce, forget, record

MAX_TIMEOUT_S = 600.0
"""The longest timeout the model may ask for (Claude Code's 10 minutes)."""
TERM_GRACE_S = 0.2
"""Between SIGTERM and SIGKILL to the group at the timeout."""
DRAIN_GRACE_S = 0.2
"""How long the output may stay open after bash exits before its group is killed."""
REAP_GRACE_S = 1.0
"""How long a cancelled call waits for the bash it killed to be reaped."""
MAX_COMMAND_BYTES = 128 * 1024 - 1
"""Linux's limit on one exec argument (MAX_ARG_STRLEN, including its NUL)."""
POLL_S = 0.05
"""How often bash's exit is checked while its output is still open."""
HIDDEN_ENV = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "FLOWER_ENCRYPTION_KEY",
    "FLOWER_NEW_ENCRYPTION_KEY",
    "FLOWER_SESSIONS_URL",
    "FLOWER_LINEAGE_URL",
    "FLOWER_SESSIONS_OPTIONS",  # backend options, a password among them
    "FLOWER_LINEAGE_OPTIONS",
)
"""flower's own secrets: a command the model runs (``env``) must not print them."""


@dataclass
class CappedOutput:
    """Keeps the first and last ``limit // 2`` characters of a stream, counting the rest."""

    limit: int
    head: list[str] = field(default_factory=list)
    head_len: int = 0
    tail: deque[str] = field(default_factory=deque)
    tail_len: int = 0
    total: int = 0
    _decoder: codecs.IncrementalDecoder = field(
        default_factory=lambda: codecs.getincrementaldecoder("utf-8")("replace")
    )

    def feed(self, data: bytes, final: bool = False) -> None:
        text = self._decoder.decode(data, final)
        if not text:
            return
        self.total += len(text)
        room = self.limit - self.limit // 2 - self.head_len
        if room > 0:
            self.head.append(text[:room])
            self.head_len += len(text[:room])
            text = text[room:]
        if not text:
            return
        self.tail.append(text)
        self.tail_len += len(text)
        keep = self.limit // 2
        while self.tail and self.tail_len - len(self.tail[0]) >= keep:
            self.tail_len -= len(self.tail.popleft())

    @property
    def cut(self) -> int:
        return max(self.total - self.limit, 0)

    def text(self) -> str:
        head = "".join(self.head)
        tail = "".join(self.tail)
        if not self.cut:
            return head + tail
        tail = tail[len(tail) - self.limit // 2 :] if self.limit // 2 else ""
        return (
            f"{head}\n[... {self.cut:,} characters of output cut; "
            f"showing the first {len(head):,} and the last {len(tail):,} ...]\n{tail}"
        )


def _environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in HIDDEN_ENV}
    env.setdefault("PAGER", "cat")
    env.setdefault("GIT_PAGER", "cat")
    return env


def _kill_group(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


async def _pump(stream: asyncio.StreamReader, out: CappedOutput) -> None:
    while chunk := await stream.read(1 << 16):
        out.feed(chunk)
    out.feed(b"", final=True)


async def _exited(
    proc: asyncio.subprocess.Process, reader: asyncio.Task[None], timeout: float
) -> bool:
    """Wait up to ``timeout`` for bash itself to exit; ``True`` once it has.

    ``Process.wait()`` only returns once every pipe is closed, so while a background
    child still holds the output open, watch ``returncode`` instead.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while proc.returncode is None:
        remaining = deadline - loop.time()
        if remaining <= 0:
            return False
        if reader.done():
            try:
                await asyncio.wait_for(proc.wait(), remaining)
            except TimeoutError:
                return False
        else:
            await asyncio.wait({reader}, timeout=min(remaining, POLL_S))
    return True


async def _started(
    spawning: asyncio.Future[asyncio.subprocess.Process],
) -> tuple[asyncio.subprocess.Process, asyncio.CancelledError | None]:
    """The started bash, and the cancel that arrived while it started, if one did.

    A start cut short is cleaned up by asyncio itself, which kills bash alone (what it
    started in its group lives on) and reaps it behind the child watcher ("Unknown child
    process pid ..."). So the start is let finish, and the caller ends the call as it
    ends any cancelled one.
    """
    try:
        return await asyncio.shield(spawning), None
    except asyncio.CancelledError as cancel:
        try:
            return await spawning, cancel
        except Exception:
            raise cancel from None


async def _close(proc: asyncio.subprocess.Process, reader: asyncio.Task[None]) -> None:
    """Stop reading bash's output and close its transport."""
    if not reader.done():
        # Only a process that left the group (setsid) can still hold the pipe here.
        reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await reader
    transport = getattr(proc, "_transport", None)
    if transport is not None:
        transport.close()


def timeout_for(args: BashInput, ctx: ToolContext) -> float:
    if args.timeout is None:
        return ctx.bash_timeout
    return min(args.timeout / 1000, max(MAX_TIMEOUT_S, ctx.bash_timeout))


def check_command(command: str) -> None:
    if "\x00" in command:
        raise ToolInputError("command contains a NUL byte, which no command line may hold")
    size = len(command.encode("utf-8", "surrogateescape"))
    if size > MAX_COMMAND_BYTES:
        raise ToolInputError(
            f"command is {size:,} bytes; one argument may hold at most {MAX_COMMAND_BYTES:,}. "
            "Write a script file with Write and run that instead."
        )


async def bash(args: BashInput, ctx: ToolContext) -> ToolOutcome:
    check_command(args.command)
    timeout = timeout_for(args, ctx)
    out = CappedOutput(ctx.max_output)
    env = _environment()
    # announced before it starts: a kill -9 before its record is written is covered too
    recorded = args.command if ctx.ledger_text else ""
    announced = announce(ctx.ledger, recorded)
    if announced is not None:
        env[SPAWN_VARIABLE] = announced[0]
    spawning = asyncio.ensure_future(
        asyncio.create_subprocess_exec(
            "/bin/bash",
            "-c",
            args.command,
            cwd=ctx.workspace,
            env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
        )
    )
    try:
        proc, cancelled = await _started(spawning)
    except BaseException:
        forget(announced[1] if announced else None)
        raise
    assert proc.stdout is not None
    reader = asyncio.create_task(_pump(proc.stdout, out))
    timed_out = stragglers_killed = False
    running: Path | None = None
    try:
        if cancelled is not None:
            raise cancelled  # the finally below kills the group, as for any cancel
        # inside the try: an interrupt landing while the record is written still
        # kills the group below
        running = record(ctx.ledger, proc.pid, recorded)
        if running is not None and announced is not None:
            forget(announced[1])  # the record covers it from here
            announced = None
        if not await _exited(proc, reader, timeout):
            timed_out = True
            _kill_group(proc.pid, signal.SIGTERM)
            if not await _exited(proc, reader, TERM_GRACE_S):
                _kill_group(proc.pid, signal.SIGKILL)
                await _exited(proc, reader, MAX_TIMEOUT_S)
        try:
            await asyncio.wait_for(asyncio.shield(reader), DRAIN_GRACE_S)
        except TimeoutError:
            # bash is gone but something it started still holds the pipe open.
            stragglers_killed = True
            _kill_group(proc.pid, signal.SIGKILL)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(reader), 1.0)
    finally:
        if proc.returncode is None or timed_out or stragglers_killed:
            _kill_group(proc.pid, signal.SIGKILL)
        try:
            if proc.returncode is None:
                # Closing the transport first would reap bash behind asyncio's child
                # watcher ("Unknown child process pid ..."), and a loop closed before
                # the watcher reports the exit logs "... that handles pid ... is closed".
                await _exited(proc, reader, REAP_GRACE_S)
        finally:  # a second interrupt may cut the wait short, not the clean-up
            await _close(proc, reader)
            forget(running)
            forget(announced[1] if announced else None)
    return _outcome(proc.returncode, out, timeout, timed_out, stragglers_killed)


def _outcome(
    code: int | None,
    out: CappedOutput,
    timeout: float,
    timed_out: bool,
    stragglers_killed: bool,
) -> ToolOutcome:
    body = out.text()
    notes = []
    if timed_out:
        notes.append(
            f"Command timed out after {timeout:g} s and was killed (its whole process group)."
        )
    elif stragglers_killed:
        notes.append(
            "Background processes it started still held the output open after it exited; "
            "its process group was killed and the output closed. Redirect a background "
            "command's output (cmd > log 2>&1 &) to keep it running."
        )
    if code is not None and code < 0:
        notes.append(f"Exit code: {code} (killed by signal {-code})")
    else:
        notes.append(f"Exit code: {code}")
    content = (body.rstrip("\n") if body.strip() else "(no output)") + "\n" + "\n".join(notes)
    result = {
        "exitCode": code,
        "timedOut": timed_out,
        "timeoutSeconds": timeout,
        "outputChars": out.total,
        "cutChars": out.cut,
        "backgroundKilled": stragglers_killed,
    }
    return ToolOutcome(content, timed_out or code != 0, result)
