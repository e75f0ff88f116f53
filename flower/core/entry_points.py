"""Entry points of one group, found without importing ``importlib.metadata``.

``importlib.metadata`` costs ~30 ms to import (it pulls in ``email``, ``zipfile``,
``csv`` ...) and then parses every distribution's ``entry_points.txt``; that was
most of ``flower --help``. The common layout, ``*.dist-info`` folders in plain
directories on ``sys.path``, is read here directly: a file that does not mention
the group is skipped unparsed, and name and version come from the ``METADATA``
headers. Anything this reader does not handle exactly like ``importlib.metadata``
(zip or egg entries on the path, ``*.egg-info`` folders that declare the group,
meta-path finders that supply distributions) makes it answer ``None``, and the
caller falls back to ``importlib.metadata``.
"""

from __future__ import annotations

import os
import re
import sys
from typing import NamedTuple

_STANDARD_FINDERS = {"PathFinder", "BuiltinImporter", "FrozenImporter", "DistutilsMetaFinder"}
_NORMALIZE = re.compile(r"[-_.]+")


class FoundEntryPoint(NamedTuple):
    """One ``name = value`` line of the group, with the distribution that declares it.

    (A NamedTuple: ``flower --help`` reads these, and a dataclass costs more to create.)"""

    name: str
    value: str
    dist: str | None
    version: str | None

    @property
    def module(self) -> str:
        return self.value.split(":", 1)[0].strip()

    @property
    def attr(self) -> str | None:
        parts = self.value.split("[", 1)[0].split(":", 1)
        return parts[1].strip() if len(parts) == 2 else None


def _section(text: str, group: str) -> list[tuple[str, str]] | None:
    """``(name, value)`` pairs of ``[group]``; ``None`` when the file lacks the section."""
    pairs: list[tuple[str, str]] = []
    inside = found = False
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            inside = line[1:-1].strip() == group
            found = found or inside
            continue
        if inside and "=" in line:
            name, value = line.split("=", 1)
            pairs.append((name.strip(), value.strip()))
    return pairs if found else None


def _headers(path: str) -> tuple[str | None, str | None]:
    """``Name`` and ``Version`` from a METADATA file (they open the header block)."""
    name = version = None
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if not line.strip():
                    break
                key, _, value = line.partition(":")
                if key == "Name":
                    name = value.strip()
                elif key == "Version":
                    version = value.strip()
                if name and version:
                    break
    except OSError:
        pass
    return name, version


def _custom_distribution_finders() -> bool:
    return any(
        hasattr(finder, "find_distributions")
        and getattr(finder, "__name__", type(finder).__name__) not in _STANDARD_FINDERS
        for finder in sys.meta_path
    )


def scan(group: str) -> list[FoundEntryPoint] | None:
    """The group's entry points in ``sys.path`` order, or ``None``: use importlib.metadata.

    Like ``importlib.metadata.entry_points``, the first distribution of a (normalized)
    name on the path wins and later copies are ignored.
    """
    if _custom_distribution_finders():
        return None
    found: list[FoundEntryPoint] = []
    seen: set[str] = set()
    for entry in sys.path:
        folder = entry or "."
        if folder.lower().endswith(".egg"):
            return None
        try:
            names = sorted(os.listdir(folder))
        except NotADirectoryError:
            return None  # a zip or egg file on the path
        except OSError:
            continue
        for item in names:
            stem, dot, suffix = item.rpartition(".")
            if not dot or suffix.lower() not in ("dist-info", "egg-info"):
                continue
            info = os.path.join(folder, item)
            key = _NORMALIZE.sub("_", stem.split("-", 1)[0]).lower()
            if key in seen:
                continue
            seen.add(key)
            if suffix.lower() == "egg-info":
                if _declares(info, group):
                    return None
                continue
            try:
                with open(os.path.join(info, "entry_points.txt"), encoding="utf-8") as handle:
                    text = handle.read()
            except OSError:
                continue
            if f"[{group}]" not in text:
                continue
            pairs = _section(text, group)
            if not pairs:
                continue
            dist, version = _headers(os.path.join(info, "METADATA"))
            found.extend(FoundEntryPoint(n, v, dist, version) for n, v in pairs)
    return found


def _declares(info: str, group: str) -> bool:
    try:
        with open(os.path.join(info, "entry_points.txt"), encoding="utf-8") as handle:
            return f"[{group}]" in handle.read()
    except OSError:
        return False


__all__ = ["FoundEntryPoint", "scan"]
