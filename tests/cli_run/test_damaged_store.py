"""A damaged ``runs/sessions.db`` through the real ``flower`` (issue 29 item 6).

A first run is killed in its work step; one page of its database is then damaged. The
next ``flower --yes`` refuses with one line naming the file and the repair, and writes
nothing into it; another session still shows; ``flower sessions repair`` saves what is
readable and sets the file aside; then ``flower --yes`` goes on.
"""

from __future__ import annotations

import hashlib
import signal
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from cli_run_helpers import REQUEST, Flower, ScriptedModel, kill_at_cut, lineage

PAGE = 4096
CLARIFIER = "确认需求"


def _page_of(db: Path, name: str, needle: bytes) -> int:
    """The page of table or index ``name`` holding ``needle``."""
    with sqlite3.connect(db) as conn:
        pages = [
            row[0] for row in conn.execute("SELECT pageno FROM dbstat WHERE name = ?", (name,))
        ]
    raw = db.read_bytes()
    for page in pages:
        if needle in raw[(page - 1) * PAGE : page * PAGE]:
            return int(page)
    raise AssertionError(f"{needle!r} is on no page of {name}")


def _patch(db: Path, offset: int, data: bytes) -> None:
    raw = bytearray(db.read_bytes())
    raw[offset : offset + len(data)] = data
    db.write_bytes(bytes(raw))


def lose_index_key(db: Path, sid: str) -> None:
    """A flipped byte in the work session's key in the sessions index: today's lookup
    finds nothing and the run starts the step over, writing into the damaged file."""
    page = _page_of(db, "sqlite_autoindex_flower_sessions_1", sid.encode())
    at = db.read_bytes().index(sid.encode(), (page - 1) * PAGE)
    _patch(db, at, bytes([db.read_bytes()[at] ^ 0x01]))


def zero_entries_page(db: Path, sid: str) -> None:
    """The page holding the work session's entries overwritten with zeros."""
    page = _page_of(db, "flower_entries", f'"sessionId":"{sid}"'.encode())
    _patch(db, (page - 1) * PAGE, bytes(PAGE))


def _digest(runs: Path) -> str:
    files = [runs / "sessions.db", runs / "sessions.db-wal"]
    return hashlib.sha256(b"".join(f.read_bytes() for f in files if f.exists())).hexdigest()


@pytest.mark.parametrize("damage", [lose_index_key, zero_entries_page])
def test_a_damaged_store_is_refused_then_repaired_and_the_run_goes_on(
    flower: Flower, model: ScriptedModel, ws: Path, damage: Callable[[Path, str], None]
) -> None:
    model.hold_worker = True
    sid, _killed = kill_at_cut(flower, model, signal.SIGKILL, "--yes", REQUEST)
    runs = ws / "runs"
    db = runs / "sessions.db"
    with sqlite3.connect(db) as conn:  # what a clean close leaves: the WAL in the file
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    damage(db, sid)
    before = _digest(runs)

    refused = flower("--yes")
    assert refused.returncode == 1, refused.stdout + refused.stderr
    said = refused.stderr.strip().splitlines()
    assert len([line for line in said if "sessions.db" in line]) == 1
    assert "runs/sessions.db" in said[-1] and "flower sessions repair" in said[-1]
    assert REQUEST not in refused.stderr  # no transcript content in the error
    assert _digest(runs) == before  # nothing written into the damaged file

    again = flower("--yes")  # and not by the next run either
    assert again.returncode == 1 and "flower sessions repair" in again.stderr
    assert _digest(runs) == before

    other = lineage(ws)["steps"][CLARIFIER]
    shown = flower("sessions", "show", other)
    assert shown.returncode == 0, shown.stderr  # one damaged session does not hide the rest

    repaired = flower("sessions", "repair")
    assert repaired.returncode == 0, repaired.stderr
    aside = sorted(runs.glob("sessions.db.damaged-*"))
    assert aside and str(aside[0].name) in repaired.stdout
    assert hashlib.sha256(aside[0].read_bytes()).hexdigest()  # the damaged file is kept

    done = flower("--yes")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (ws / "sample.html").is_file()
