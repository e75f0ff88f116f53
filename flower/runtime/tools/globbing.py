"""Glob patterns (``*``, ``?``, ``[...]``, ``**``, ``{a,b}``) compiled to one regex.

The regex matches POSIX relative paths. ``*`` and ``?`` never cross a ``/`` and do match
leading dots; a ``**`` segment matches zero or more whole directories.
"""

from __future__ import annotations

import re

from flower.runtime.tools.base import ToolInputError

MAX_ALTERNATIVES = 256
_MAGIC = re.compile(r"[*?\[{]")


def has_magic(segment: str) -> bool:
    return bool(_MAGIC.search(segment))


def expand_braces(pattern: str) -> list[str]:
    """``a.{py,txt}`` -> ``["a.py", "a.txt"]``; nested braces work; a lone ``{`` is literal."""
    depth, start = 0, -1
    for i, ch in enumerate(pattern):
        if ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth:
            depth -= 1
            if depth == 0:
                options = _split_top_level(pattern[start + 1 : i])
                if len(options) < 2:
                    continue
                head, tail = pattern[:start], pattern[i + 1 :]
                expanded: list[str] = []
                for option in options:
                    expanded.extend(expand_braces(head + option + tail))
                    if len(expanded) > MAX_ALTERNATIVES:
                        raise ToolInputError(
                            f"the pattern expands to more than {MAX_ALTERNATIVES} alternatives"
                        )
                return expanded
    return [pattern]


def _split_top_level(body: str) -> list[str]:
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for ch in body:
        if ch == "," and depth == 0:
            parts.append("".join(current))
            current = []
            continue
        depth += ch == "{"
        depth -= ch == "}" and depth > 0
        current.append(ch)
    parts.append("".join(current))
    return parts


def _segment(segment: str) -> str:
    out, i = [], 0
    while i < len(segment):
        ch = segment[i]
        if ch == "*":
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "[":
            end = segment.find("]", i + 2 if segment[i + 1 : i + 2] in ("!", "^") else i + 1)
            if end == -1:
                out.append(re.escape(ch))
            else:
                body = segment[i + 1 : end]
                negate = body[:1] in ("!", "^")
                body = body[1:] if negate else body
                out.append(f"[{'^' if negate else ''}{body.replace(chr(92), chr(92) * 2)}]")
                i = end
        else:
            out.append(re.escape(ch))
        i += 1
    return "".join(out)


def _translate(pattern: str) -> str:
    segments = [s for s in pattern.split("/") if s not in ("", ".")]
    parts = []
    for i, seg in enumerate(segments):
        last = i == len(segments) - 1
        if seg == "**":
            parts.append(".*" if last else "(?:[^/]+/)*")
        else:
            parts.append(_segment(seg) + ("" if last else "/"))
    return "".join(parts)


def compile_glob(pattern: str) -> re.Pattern[str]:
    alternatives = [_translate(p) for p in expand_braces(pattern)]
    try:
        return re.compile("(?:" + "|".join(alternatives) + r")\Z", re.DOTALL)
    except re.error as exc:
        raise ToolInputError(f"invalid glob pattern {pattern!r}: {exc}") from None


def max_depth(pattern: str) -> int | None:
    """How many directory levels a match can lie below the base; ``None`` with ``**``."""
    depth = 0
    for alternative in expand_braces(pattern):
        segments = [s for s in alternative.split("/") if s not in ("", ".")]
        if "**" in segments:
            return None
        depth = max(depth, len(segments))
    return depth


def split_base(pattern: str) -> tuple[str, str]:
    """Split off the leading segments without magic: ``src/a/*.py`` -> (``src/a``, ``*.py``)."""
    absolute = pattern.startswith("/")
    segments = pattern.split("/")
    literal: list[str] = []
    for seg in segments:
        if has_magic(seg):
            break
        literal.append(seg)
    if len(literal) == len(segments):
        literal = literal[:-1]
    rest = "/".join(segments[len(literal) :])
    base = "/".join(literal)
    if absolute and not base:
        base = "/"
    return base, rest
