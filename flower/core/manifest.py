"""``runs/manifest.json``: one JSON line per step run, safe with many processes.

Every line holds every :class:`~flower.runtime.spec.StepResult` field plus
``duration_s`` (a property, which ``asdict`` misses) and ``run``, the process stamp
``YYYYmmdd-HHMMSS-<6 hex>``. A write never overwrites other processes' work: under an
exclusive ``fcntl`` lock it re-reads the file, replaces this process's lines by its
latest set (de-duplicated by ``run``), keeps every other line byte for byte, and
swaps the file in atomically (tmp + ``os.replace``).
"""

from __future__ import annotations

import dataclasses
import json
import os
import secrets
import threading
import time
from pathlib import Path
from typing import Any, ClassVar, Protocol

from flower.core.fileperms import check_private, locked, private_dir, replaced_atomically
from flower.core.lease import fenced

MANIFEST_NAME = "manifest.json"

_run_id: tuple[int, str] | None = None
_lines: dict[str, list[str]] = {}
"""This process's lines, by resolved manifest path (one list per file)."""
_guard = threading.Lock()


class StepRecord(Protocol):
    """What a manifest line is made of: a dataclass (a
    :class:`~flower.runtime.spec.StepResult`) whose fields, with ``duration_s``, are the row."""

    __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]

    @property
    def duration_s(self) -> float: ...


def run_id() -> str:
    """This process's stamp, ``YYYYmmdd-HHMMSS-<6 hex>``; a forked child gets its own."""
    global _run_id, _lines
    pid = os.getpid()
    if _run_id is None or _run_id[0] != pid:
        if _run_id is not None:
            _lines = {}  # a forked child must not claim its parent's lines
        stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime())
        _run_id = (pid, f"{stamp}-{secrets.token_hex(3)}")
    return _run_id[1]


def result_line(
    result: StepRecord,
    run: str | None = None,
    extra: dict[str, Any] | None = None,
    *,
    keep_text: bool = True,
) -> dict[str, Any]:
    """The manifest row of one StepResult: every field, ``duration_s`` and ``run``, and
    what ``extra`` adds (a judge run's ``verdict``). Without ``keep_text`` (encryption
    on) ``text``, the model's final words, is null: they stay only in the step's sealed
    transcript (``session_id``)."""
    row = dataclasses.asdict(result)
    if not keep_text:
        row["text"] = None
    row["duration_s"] = result.duration_s
    row["run"] = run or run_id()
    row.update(extra or {})
    return row


def _parsed(line: bytes) -> Any:
    """The JSON value of one manifest line, or None for a line that is not UTF-8 JSON."""
    try:
        return json.loads(line.decode("utf-8"))
    except ValueError:  # UnicodeDecodeError is one
        return None


def _line_run(line: bytes) -> str | None:
    row = _parsed(line)
    return row.get("run") if isinstance(row, dict) else None


def _lines_of(path: Path) -> list[bytes]:
    """The lines of ``path`` as bytes (split on newline only, so a JSON string holding
    U+2028 stays one line); a missing file has none."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    return data.split(b"\n")


class Manifest:
    """The manifest of one run directory, as seen by this process."""

    def __init__(self, run_dir: str | os.PathLike[str] = "runs", *, keep_text: bool = True) -> None:
        self.path = Path(run_dir) / MANIFEST_NAME
        self.keep_text = keep_text

    @property
    def run(self) -> str:
        return run_id()

    def record(self, result: StepRecord, extra: dict[str, Any] | None = None) -> None:
        """Add one StepResult (with ``extra``'s keys) and flush the file."""
        row = result_line(result, self.run, extra, keep_text=self.keep_text)
        line = json.dumps(row, ensure_ascii=False, default=str)
        with _guard:
            key = str(self.path.resolve())
            run_id()  # resets the per-process lines after a fork
            _lines.setdefault(key, []).append(line)
            mine = list(_lines[key])
        self._flush(mine)

    def _flush(self, mine: list[str]) -> None:
        private_dir(self.path.parent)
        me = self.run
        with locked(self.path):
            existing = _lines_of(self.path)
            # Unparsable lines (not JSON, not even UTF-8) are someone's data too: kept
            # byte for byte.
            others = [ln for ln in existing if ln.strip() and _line_run(ln) != me]
            ours = [ln.encode("utf-8") for ln in mine]
            check_private(self.path)
            data = b"".join(ln + b"\n" for ln in [*others, *ours])

            def write() -> None:
                with replaced_atomically(self.path) as out:
                    out.write(data)

            fenced(write)  # a fleet wake that lost its lease writes nothing

    def rows(self) -> list[dict[str, Any]]:
        """Every parsable line of the file (all processes), in file order."""
        return read_manifest(self.path.parent)


def read_manifest(run_dir: str | os.PathLike[str] = "runs") -> list[dict[str, Any]]:
    """The parsable rows of ``<run_dir>/manifest.json``; missing file -> ``[]``."""
    rows = []
    for line in _lines_of(Path(run_dir) / MANIFEST_NAME):
        row = _parsed(line)
        if isinstance(row, dict):
            rows.append(row)
    return rows


__all__ = ["MANIFEST_NAME", "Manifest", "StepRecord", "read_manifest", "result_line", "run_id"]
