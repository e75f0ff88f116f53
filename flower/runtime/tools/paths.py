"""Workspace confinement: every tool path resolves (symlinks included) inside the workspace.

A path is taken as given when absolute, else relative to the workspace; ``~`` expands to
the home directory. It is then resolved with ``os.path.realpath``, which follows every
symlink on the way, including a dangling one whose target does not exist yet, so a link
to a file outside, or a symlinked parent directory, is caught before anything is read or
written.
"""

from __future__ import annotations

import os
from pathlib import Path

from flower.runtime.tools.base import ToolContext, ToolDenied, ToolInputError


def check_text_path(raw: str, field: str) -> str:
    """Reject what no file system accepts before any call is made with it."""
    if not raw.strip():
        raise ToolInputError(f"{field} is empty; give a file path")
    if "\x00" in raw:
        raise ToolInputError(f"{field} contains a NUL byte, which no path may hold")
    return raw


def is_inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def real_path(
    raw: str, ctx: ToolContext, field: str = "file_path", *, reading: bool = False
) -> Path:
    """The real absolute path ``raw`` designates; :class:`ToolDenied` if it leaves the
    workspace (``reading``: or one of ``ctx.readable``, the folders only Read may see)."""
    check_text_path(raw, field)
    candidate = Path(os.path.expanduser(raw))
    if not candidate.is_absolute():
        candidate = ctx.workspace / candidate
    resolved = Path(os.path.realpath(candidate))
    if ctx.confine and not (reading and any(is_inside(resolved, r) for r in ctx.readable)):
        ensure_inside(resolved, ctx, shown=raw)
    return resolved


def ensure_inside(resolved: Path, ctx: ToolContext, shown: str | None = None) -> None:
    if not is_inside(resolved, ctx.workspace):
        via = "" if shown is None or str(resolved) == shown else f" (it resolves to {resolved})"
        raise ToolDenied(
            f"path {shown or resolved} is outside the workspace {ctx.workspace}{via}; "
            "tools may only touch files inside it."
        )
