"""``project_key``: the Claude Agent SDK's encoding of a workspace path."""

from __future__ import annotations

import os
import re
import unicodedata
from pathlib import Path

MAX_PROJECT_KEY = 200
_NON_ALNUM = re.compile(r"[^A-Za-z0-9]")


def _base36(n: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    if n == 0:
        return "0"
    out = []
    while n:
        n, r = divmod(n, 36)
        out.append(digits[r])
    return "".join(reversed(out))


def _string_hash(text: str) -> int:
    """The SDK's 32-bit hash for long keys: ``h*31 + code point``, signed, absolute."""
    h = 0
    for ch in text:
        h = (h * 31 + ord(ch)) & 0xFFFFFFFF
    if h >= 2**31:
        h -= 2**32
    return abs(h)


def sanitize_path(path: str) -> str:
    """Every character outside ``[A-Za-z0-9]`` becomes ``-``; long results get a hash."""
    key = _NON_ALNUM.sub("-", path)
    if len(key) <= MAX_PROJECT_KEY:
        return key
    return f"{key[:MAX_PROJECT_KEY]}-{_base36(_string_hash(path))}"


def project_key(path: str | os.PathLike[str]) -> str:
    """The Claude Agent SDK's project key: realpath, NFC, then :func:`sanitize_path`."""
    real = os.path.realpath(Path(path).expanduser())
    return sanitize_path(unicodedata.normalize("NFC", real))
