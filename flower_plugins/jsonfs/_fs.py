"""Small filesystem helpers shared by the JSON stores: durable writes, path guards."""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from pathlib import Path

from flower.core.errors import InvalidKeyError
from flower.core.i18n import _

READ_CHUNK = 1 << 22


def write_all(fd: int, data: bytes) -> None:
    """``os.write`` until every byte is out (a single call may write fewer)."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def iter_lines(fd: int, start: int, end: int) -> Iterator[tuple[int, bytes, bool]]:
    """``(offset, line, complete)`` for each line in ``[start, end)``, in bounded memory.

    ``complete`` is False only for a last piece with no newline after it.
    """
    pos = start
    carry = b""
    carry_at = start
    while pos < end:
        chunk = os.pread(fd, min(READ_CHUNK, end - pos), pos)
        if not chunk:
            break
        pos += len(chunk)
        lines = (carry + chunk if carry else chunk).split(b"\n")
        carry = lines.pop()
        offset = carry_at
        for line in lines:
            yield offset, line, True
            offset += len(line) + 1
        carry_at = offset
    if carry:
        yield carry_at, carry, False


def resolve_under(root: Path, candidate: Path) -> Path:
    """``candidate`` with symlinks resolved, refused unless it stays inside ``root``.

    Keys are validated before they get here; this is defence in depth against a
    symlink inside the store pointing elsewhere, or a key forged around validation.
    """
    try:
        resolved = candidate.resolve()
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            raise InvalidKeyError(
                _("path {path} is too long for this filesystem").format(path=repr(str(candidate)))
            ) from None
        raise
    if resolved != root and not resolved.is_relative_to(root):
        raise InvalidKeyError(
            _("{path} resolves to {resolved}, outside the store at {root}").format(
                path=repr(str(candidate)), resolved=repr(str(resolved)), root=repr(str(root))
            )
        )
    return resolved
