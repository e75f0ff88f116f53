"""Glob and Grep: finding files and text inside the workspace, in pure Python.

Both walk with ``os.walk`` without following symlinked directories and skip ``.git``.
Grep reads a file found through a symlink only when the link resolves inside the
workspace (when confined), skips FIFOs, devices and binary files, and stops at the tool
time limit (``bash_timeout``) with what it found so far.
"""

from __future__ import annotations

import os
import re
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from flower.runtime.tools.base import (
    ToolContext,
    ToolFailure,
    ToolInputError,
    ToolOutcome,
    cap_head,
)
from flower.runtime.tools.files import MAX_LINE_CHARS, SNIFF_BYTES, looks_binary
from flower.runtime.tools.globbing import compile_glob, max_depth, split_base
from flower.runtime.tools.inputs import GlobInput, GrepInput
from flower.runtime.tools.paths import check_text_path, is_inside, real_path

GLOB_LIMIT = 100
"""Glob lists at most this many files (Claude Code's cap)."""
SKIPPED_DIRS = frozenset({".git"})
MULTILINE_MAX_BYTES = 10 * 1024 * 1024


def _walk(base: Path, depth: int | None) -> Iterator[tuple[str, str]]:
    """(absolute directory, file name) of every file under ``base``, ``.git`` skipped."""
    base_str = str(base)
    base_depth = base_str.rstrip("/").count("/")
    for folder, dirs, files in os.walk(base_str, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS)
        if depth is not None and folder.rstrip("/").count("/") - base_depth >= depth - 1:
            dirs.clear()
        for name in files:
            yield folder, name


def _mtime(path: str) -> float:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return 0.0


def _newest_first(paths: list[str]) -> list[str]:
    return sorted(paths, key=lambda p: (-_mtime(p), p))


def _search_root(raw: str | None, ctx: ToolContext) -> Path:
    if raw is None or not raw.strip():
        return ctx.workspace
    return real_path(raw, ctx, field="path")


def glob(args: GlobInput, ctx: ToolContext) -> ToolOutcome:
    started = time.monotonic()
    check_text_path(args.pattern, "pattern")
    root = _search_root(args.path, ctx)
    literal, rest = split_base(args.pattern)
    base = real_path(str(root / literal), ctx, field="pattern") if literal else root
    if not base.is_dir():
        raise ToolFailure(f"{base} is not a directory")
    matcher = compile_glob(rest)
    found = []
    for folder, name in _walk(base, max_depth(rest)):
        full = os.path.join(folder, name)
        if matcher.match(os.path.relpath(full, base)):
            found.append(full)
    ordered = _newest_first(found)
    shown = _fitting(ordered[:GLOB_LIMIT], ctx.max_output - 200)
    truncated = len(ordered) > len(shown)
    result = {
        "filenames": shown,
        "numFiles": len(ordered),
        "truncated": truncated,
        "durationMs": round((time.monotonic() - started) * 1000),
    }
    if not ordered:
        return ToolOutcome("No files found", False, result)
    content = "\n".join(shown)
    if truncated:
        content += (
            f"\n(Results are truncated: {len(ordered):,} files matched, the {len(shown)} "
            "newest are shown. Use a more specific path or pattern.)"
        )
    return ToolOutcome(content, False, result)


def _fitting(paths: list[str], budget: int) -> list[str]:
    """The leading paths whose lines fit in ``budget`` characters (at least one)."""
    kept: list[str] = []
    used = 0
    for path in paths:
        used += len(path) + 1
        if used > budget and kept:
            break
        kept.append(path)
    return kept


@dataclass
class _Matches:
    files: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)
    chars: int = 0
    full: bool = False
    timed_out: bool = False


def _candidates(root: Path, args: GrepInput, ctx: ToolContext) -> Iterator[str]:
    """Regular, confined, non-.git files under ``root`` that pass the ``glob`` filter."""
    if not root.is_dir():
        yield str(root)
        return
    name_filter = compile_glob(args.glob) if args.glob else None
    by_path = bool(args.glob and "/" in args.glob)
    for folder, name in _walk(root, None):
        full = os.path.join(folder, name)
        if name_filter is not None:
            subject = os.path.relpath(full, root) if by_path else name
            if not name_filter.match(subject):
                continue
        if os.path.islink(full):
            target = Path(os.path.realpath(full))
            if ctx.confine and not is_inside(target, ctx.workspace):
                continue
        yield full


def _read_text(path: str, limit: int | None) -> str | None:
    """The file's text, or ``None`` when it is not a readable regular text file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        head = f.read(SNIFF_BYTES)
        if looks_binary(head):
            return None
        rest = f.read() if limit is None else f.read(max(limit - len(head), 0))
    return (head + rest).decode("utf-8", "replace")


def _clip(line: str) -> str:
    return line if len(line) <= MAX_LINE_CHARS else line[:MAX_LINE_CHARS] + " [... line truncated]"


def _add_line(found: _Matches, line: str, ctx: ToolContext) -> None:
    found.lines.append(line)
    found.chars += len(line) + 1
    if found.chars > ctx.max_output:
        found.full = True


def _content_lines(
    path: str, text: str, regex: re.Pattern[str], args: GrepInput, found: _Matches, ctx: ToolContext
) -> int:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    hits: list[int] = []
    if args.multiline:
        for m in regex.finditer(text):
            first = text.count("\n", 0, m.start())
            last = first + text.count("\n", m.start(), max(m.end() - 1, m.start()))
            hits.extend(range(first, min(last, len(lines) - 1) + 1))
        hits = sorted(set(hits))
    else:
        hits = [i for i, line in enumerate(lines) if regex.search(line)]
    if not hits:
        return 0
    before = args.before if args.before is not None else (args.context or 0)
    after = args.after if args.after is not None else (args.context or 0)
    shown: set[int] = set()
    hit_set = set(hits)
    previous = -2
    for hit in hits:
        for i in range(max(hit - before, 0), min(hit + after, len(lines) - 1) + 1):
            if i in shown:
                continue
            if (before or after) and previous >= 0 and i > previous + 1:
                _add_line(found, "--", ctx)
            sep = ":" if i in hit_set else "-"
            number = f"{i + 1}{sep}" if args.line_numbers else ""
            _add_line(found, f"{path}{sep}{number}{_clip(lines[i].rstrip(chr(13)))}", ctx)
            shown.add(i)
            previous = i
            if found.full:
                return len(hits)
    return len(hits)


def _count(text: str, regex: re.Pattern[str], multiline: bool) -> int:
    if multiline:
        return sum(1 for _ in regex.finditer(text))
    return sum(1 for line in text.split("\n") if regex.search(line))


def _compile(args: GrepInput) -> re.Pattern[str]:
    flags = re.IGNORECASE if args.case_insensitive else 0
    if args.multiline:
        flags |= re.DOTALL | re.MULTILINE
    try:
        return re.compile(args.pattern, flags)
    except (re.error, OverflowError, RecursionError) as exc:
        raise ToolInputError(f"invalid regular expression {args.pattern!r}: {exc}") from None


_LINE_ANCHORED = re.compile(r"\\[AZ]|\(\?<[=!]")


def _prefilter(args: GrepInput, regex: re.Pattern[str]) -> re.Pattern[str] | None:
    """One search over a whole file that finds a match whenever some line has one.

    Skips the per-line loop for the files that do not match. Not used when ``\\A``,
    ``\\Z`` or a lookbehind would mean something else across the whole text.
    """
    if args.multiline or _LINE_ANCHORED.search(args.pattern):
        return None
    return re.compile(regex.pattern, regex.flags | re.MULTILINE)


def grep(args: GrepInput, ctx: ToolContext) -> ToolOutcome:
    regex = _compile(args)
    quick = _prefilter(args, regex)
    root = _search_root(args.path, ctx)
    if not root.exists():
        raise ToolFailure(f"Path does not exist: {root}")
    deadline = time.monotonic() + ctx.bash_timeout
    found = _Matches()
    limit = MULTILINE_MAX_BYTES if args.multiline else None
    for path in _candidates(root, args, ctx):
        if time.monotonic() > deadline:
            found.timed_out = True
            break
        text = _read_text(path, limit)
        if text is None or (quick is not None and not quick.search(text)):
            continue
        if args.output_mode == "content":
            if _content_lines(path, text, regex, args, found, ctx):
                found.files.append(path)
            if found.full:
                break
        else:
            n = _count(text, regex, args.multiline)
            if n:
                found.files.append(path)
                found.counts[path] = n
    return _grep_outcome(args, found, ctx)


def _grep_outcome(args: GrepInput, found: _Matches, ctx: ToolContext) -> ToolOutcome:
    mode = args.output_mode
    if mode == "content":
        rows = found.lines
    elif mode == "count":
        rows = [f"{p}:{found.counts[p]}" for p in found.files]
    else:
        found.files = _newest_first(found.files)
        rows = list(found.files)
    limited = args.head_limit is not None and len(rows) > args.head_limit
    if args.head_limit is not None:
        rows = rows[: args.head_limit]
    result: dict[str, object] = {
        "mode": mode,
        "numFiles": len(found.files),
        "filenames": found.files[:GLOB_LIMIT] if mode == "files_with_matches" else [],
        "truncated": found.full or limited,
        "timedOut": found.timed_out,
    }
    if mode == "content":
        result["numLines"] = len(rows)
    if mode == "count":
        result["numMatches"] = sum(found.counts.values())
    if not found.files:
        content = "No matches found"
    elif mode == "files_with_matches":
        content = f"Found {len(found.files)} file{'s' if len(found.files) != 1 else ''}\n"
        content += "\n".join(rows)
    elif mode == "count":
        total = sum(found.counts.values())
        content = "\n".join(rows) + f"\n\nFound {total} matches in {len(found.files)} files."
    else:
        content = "\n".join(rows)
    content, _ = cap_head(content, ctx.max_output, "; narrow the pattern, path or glob")
    if found.full and not content.endswith("]"):
        content += "\n[... more matches not shown; narrow the pattern, path or glob]"
    if limited:
        content += f"\n[... head_limit={args.head_limit} reached]"
    if found.timed_out:
        content += f"\n[Grep stopped after {ctx.bash_timeout:g} s; results are partial]"
    return ToolOutcome(content, False, result)
