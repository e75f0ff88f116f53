"""Read, Write and Edit: text files inside the workspace.

They run in a worker thread (``asyncio.to_thread``) so a large file never blocks the
event loop. Every path goes through :func:`real_path` first, and files are opened by
their resolved path with ``O_NOFOLLOW`` and ``O_NONBLOCK``: a FIFO or device is refused
after ``fstat`` instead of hanging the call. Writes go to a temporary file in the same
directory and replace the target atomically, so a killed process never leaves half a file.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from flower.core.fileperms import replaced_atomically
from flower.runtime.tools.base import ToolContext, ToolFailure, ToolInputError, ToolOutcome
from flower.runtime.tools.inputs import EditInput, ReadInput, WriteInput
from flower.runtime.tools.paths import real_path

READ_DEFAULT_LIMIT = 2000
"""Lines shown when the model gives no ``limit`` (Claude Code's default)."""
MAX_LINE_CHARS = 2000
"""Longer lines are cut to this many characters, so one minified line cannot flood."""
SNIFF_BYTES = 8192
"""A NUL byte in this many leading bytes marks a file as binary (git's heuristic)."""
EDIT_MAX_BYTES = 20 * 1024 * 1024
SNIPPET_CONTEXT = 3


def looks_binary(head: bytes) -> bool:
    return b"\x00" in head


def open_regular(path: Path) -> BinaryIO:
    """Open ``path`` for reading; only a regular file, never through a symlink."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        raise ToolFailure(f"File does not exist: {path}") from None
    except IsADirectoryError:
        raise ToolFailure(f"{path} is a directory; use Glob or Bash ls to list it") from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise ToolFailure(f"{path} is a directory; use Glob or Bash ls to list it")
        if not stat.S_ISREG(mode):
            raise ToolFailure(f"{path} is not a regular file (a FIFO, socket or device)")
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


def _skip_lines(f: BinaryIO, count: int) -> int:
    """Move past ``count`` lines in big chunks; return how many there were."""
    skipped = 0
    while skipped < count:
        at = f.tell()
        chunk = f.read(1 << 20)
        if not chunk:
            break
        newlines = chunk.count(b"\n")
        if skipped + newlines < count:
            skipped += newlines
            continue
        cut = -1
        for _ in range(count - skipped):
            cut = chunk.index(b"\n", cut + 1)
        f.seek(at + cut + 1)
        return count
    if skipped < count and f.tell() > 0:
        f.seek(-1, os.SEEK_END)
        if f.read(1) != b"\n":
            skipped += 1  # a last line without a newline
    return skipped


def _lines(f: BinaryIO, first: int = 1) -> Iterator[tuple[int, bytes, bool]]:
    """(line number, at most MAX_LINE_CHARS*4 bytes of it, whether the line was longer)."""
    max_bytes = MAX_LINE_CHARS * 4
    number = first - 1
    while chunk := f.readline(max_bytes):
        number += 1
        longer = False
        if len(chunk) == max_bytes and not chunk.endswith(b"\n"):
            while rest := f.readline(1 << 16):
                longer = longer or rest != b"\n"
                if rest.endswith(b"\n"):
                    break
        yield number, chunk, longer


def _count_rest(f: BinaryIO, counted: int) -> int:
    """Total line count, given ``counted`` lines already read up to the file position."""
    total, last = counted, b"\n"
    while chunk := f.read(1 << 20):
        total += chunk.count(b"\n")
        last = chunk[-1:]
    return total if last == b"\n" else total + 1


def _number(n: int, text: str) -> str:
    return f"{n:>6}\t{text}"


def read(args: ReadInput, ctx: ToolContext) -> ToolOutcome:
    path = real_path(args.file_path, ctx, reading=True)
    start = max(args.offset or 1, 1)
    limit = args.limit or READ_DEFAULT_LIMIT
    shown: list[str] = []
    size = 0
    long_lines = 0
    stop_reason = ""
    with open_regular(path) as f:
        if looks_binary(f.read(SNIFF_BYTES)):
            size = os.fstat(f.fileno()).st_size
            raise ToolFailure(
                f"{path} is a binary file ({size:,} bytes); Read shows text files only."
            )
        f.seek(0)
        total = _skip_lines(f, start - 1)
        for number, raw, longer in _lines(f, start):
            total = number
            if len(shown) >= limit:
                stop_reason = "limit"
                total = _count_rest(f, number)
                break
            text = raw.decode("utf-8", "replace").rstrip("\r\n")
            if longer or len(text) > MAX_LINE_CHARS:
                text = text[:MAX_LINE_CHARS] + " [... line truncated]"
                long_lines += 1
            line = _number(number, text)
            if size + len(line) + 1 > ctx.max_output and shown:
                stop_reason = "size"
                total = _count_rest(f, number)
                break
            shown.append(line)
            size += len(line) + 1
    end = start + len(shown) - 1
    result = {
        "type": "text",
        "file": {
            "filePath": str(path),
            "startLine": start,
            "numLines": len(shown),
            "totalLines": total,
            "truncated": bool(stop_reason),
        },
    }
    if total == 0:
        return ToolOutcome(f"(the file {path} exists but is empty)", False, result)
    if not shown:
        return ToolOutcome(
            f"(the file {path} has {total:,} lines; offset {start} is past the end)", False, result
        )
    content = "\n".join(shown)
    if stop_reason:
        why = "the output limit" if stop_reason == "size" else f"{limit:,} lines"
        content += (
            f"\n[... shown lines {start}-{end} of {total:,} (stopped at {why}); "
            f"read on with offset={end + 1}]"
        )
    return ToolOutcome(content, False, result)


def _encode(text: str, field: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ToolInputError(f"{field} cannot be written as UTF-8: {exc.reason}") from None


def _existing_mode(path: Path) -> int | None:
    """Permission bits of the file at ``path``, ``None`` when there is none yet."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    if stat.S_ISDIR(st.st_mode):
        raise ToolFailure(f"{path} is a directory, not a file")
    if not stat.S_ISREG(st.st_mode):
        raise ToolFailure(f"{path} is not a regular file (a FIFO, socket or device)")
    return stat.S_IMODE(st.st_mode)


def replace_file(path: Path, data: bytes, mode: int | None) -> None:
    """Write ``data`` to a sibling temporary file, then atomically rename it over ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    # the user's file: created as any of theirs (umask), then given the old file's mode
    with replaced_atomically(path, durable=False, mode=0o666) as f:
        f.write(data)
        if mode is not None:
            os.fchmod(f.fileno(), mode)


def _snapshot(ctx: ToolContext, before: bytes | None, after: bytes) -> dict[str, Any]:
    """``{"snapshot": ...}`` for the tool result: ``before`` kept, ``after`` named (an
    empty dict when this run keeps no snapshots)."""
    if ctx.snapshots is None:
        return {}
    from flower.core.snapshots import Snapshots, digest

    kept = None if before is None else Snapshots(ctx.snapshots).keep(before)
    return {"snapshot": {"before": kept, "after": digest(after)}}


def _previous(path: Path, ctx: ToolContext, mode: int | None) -> bytes | None:
    """What ``path`` holds now, when a snapshot will be kept of it."""
    if mode is None or ctx.snapshots is None:
        return None
    with open_regular(path) as f:
        return f.read()


def write(args: WriteInput, ctx: ToolContext) -> ToolOutcome:
    path = real_path(args.file_path, ctx)
    data = _encode(args.content, "content")
    mode = _existing_mode(path)
    snapshot = _snapshot(ctx, _previous(path, ctx, mode), data)
    replace_file(path, data, mode)
    kind = "create" if mode is None else "update"
    verb = "created" if mode is None else "updated"
    return ToolOutcome(
        f"File {verb} successfully at: {path} ({len(data):,} bytes)",
        False,
        {"type": kind, "filePath": str(path), "bytes": len(data), **snapshot},
    )


def _snippet(text: str, at: int, length: int) -> str:
    """Numbered lines around ``text[at:at+length]``, the way Claude Code shows an edit."""
    first = text.count("\n", 0, at) + 1
    last = first + text.count("\n", at, at + length)
    lines = text.split("\n")
    lo, hi = max(first - SNIPPET_CONTEXT, 1), min(last + SNIPPET_CONTEXT, len(lines))
    shown = [_number(n, lines[n - 1][:MAX_LINE_CHARS]) for n in range(lo, hi + 1)]
    if len(shown) > 40:
        shown = [*shown[:20], "   ...", *shown[-20:]]
    return "\n".join(shown)


def edit(args: EditInput, ctx: ToolContext) -> ToolOutcome:
    path = real_path(args.file_path, ctx)
    if args.old_string == args.new_string:
        raise ToolInputError("old_string and new_string are the same; there is nothing to change")
    new_bytes = _encode(args.new_string, "new_string")
    mode = _existing_mode(path)
    if mode is None:
        if args.old_string:
            raise ToolFailure(f"File does not exist: {path}")
        snapshot = _snapshot(ctx, None, new_bytes)
        replace_file(path, new_bytes, None)
        return ToolOutcome(
            f"File created successfully at: {path} ({len(new_bytes):,} bytes)",
            False,
            {
                "type": "create",
                "filePath": str(path),
                "replacements": 1,
                "replaceAll": False,
                **snapshot,
            },
        )
    with open_regular(path) as f:
        raw = f.read(EDIT_MAX_BYTES + 1)
    if len(raw) > EDIT_MAX_BYTES:
        raise ToolFailure(f"{path} is larger than {EDIT_MAX_BYTES:,} bytes; Edit refuses it")
    if looks_binary(raw[:SNIFF_BYTES]):
        raise ToolFailure(f"{path} is a binary file; Edit changes text files only")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ToolFailure(f"{path} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    if not args.old_string:
        if text:
            raise ToolInputError(
                f"old_string is empty but {path} is not; give the exact text to replace"
            )
        count = 1
        new_text = args.new_string
    else:
        count = text.count(args.old_string)
        if count == 0:
            hint = ""
            if "\r\n" in text and "\n" in args.old_string and "\r\n" not in args.old_string:
                hint = " The file uses CRLF (\\r\\n) line endings."
            raise ToolFailure(
                f"old_string was not found in {path}. It must match the file exactly, "
                f"including whitespace and indentation; Read the file to see its text.{hint}"
            )
        if count > 1 and not args.replace_all:
            raise ToolFailure(
                f"old_string was found {count} times in {path}; give more surrounding "
                "context to make it unique, or set replace_all to true to replace every one."
            )
        new_text = text.replace(args.old_string, args.new_string, -1 if args.replace_all else 1)
    new_data = _encode(new_text, "the edited text")
    snapshot = _snapshot(ctx, raw, new_data)
    replace_file(path, new_data, mode)
    at = text.find(args.old_string) if args.old_string else 0
    plural = "occurrence" if count == 1 else "occurrences"
    content = (
        f"The file {path} has been updated ({count} {plural} replaced). "
        f"Lines around the first change:\n{_snippet(new_text, at, len(args.new_string))}"
    )
    return ToolOutcome(
        content,
        False,
        {
            "type": "update",
            "filePath": str(path),
            "replacements": count,
            "replaceAll": args.replace_all,
            **snapshot,
        },
    )
