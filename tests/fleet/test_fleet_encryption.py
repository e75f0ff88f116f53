"""With the session store encrypted, a fleet task's words are sealed before DBOS keeps
them: a byte scan of the fleet's database (the SQLite file, every Postgres row) and of
the workspace's run directory finds them nowhere, in clear or in DBOS's encoding of a
workflow input (base64 of a pickle)."""

from __future__ import annotations

import base64
import binascii
import json
import re
import sqlite3
from pathlib import Path

import sqlalchemy as sa
from fleet_helpers import BOTH, HoldingModel, Workers, fleet_status, run, wait_for

from flower.stores.keyring import generate_key

WORDS = "convert the quarterly-ledger-7d41 without the audit notes"
"""What the encrypted workspace's task says (one run of bytes no other text holds)."""
CONTROL = "plain-words-3e9b stay readable"
"""What a task of a workspace without encryption says: the scan must find these."""
BASE64 = re.compile(rb"[A-Za-z0-9+/]{16,}={0,2}")


def _holds(blob: bytes, words: str) -> bool:
    """``words`` in ``blob`` as they are, or inside a base64 run (DBOS's pickled input)."""
    needle = words.encode("utf-8")
    if needle in blob:
        return True
    for found in BASE64.finditer(blob):
        run_ = found.group()
        try:
            decoded = base64.b64decode(run_[: len(run_) - len(run_) % 4])
        except (binascii.Error, ValueError):
            continue
        if needle in decoded:
            return True
    return False


def _sqlite_bytes(file: Path) -> bytes:
    """The database file, its WAL, and every cell of every table (an input longer than a
    page may be split across pages in the file)."""
    blob = b"".join(p.read_bytes() for p in file.parent.glob(file.name + "*"))
    conn = sqlite3.connect(file)
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for table in tables:
            for row in conn.execute(f'SELECT * FROM "{table}"'):
                blob += b"\n" + "\x1f".join(str(c) for c in row).encode("utf-8", "replace")
    finally:
        conn.close()
    return blob


def _postgres_bytes(url: str) -> bytes:
    """Every row of every table of the database (DBOS's schema, flower's tables), as text."""
    engine = sa.create_engine(url)
    blob = b""
    try:
        with engine.connect() as conn:
            tables = conn.execute(
                sa.text(
                    "SELECT table_schema, table_name FROM information_schema.tables "
                    "WHERE table_schema NOT IN ('pg_catalog', 'information_schema') "
                    "AND table_type = 'BASE TABLE'"
                )
            ).all()
            assert any(schema == "dbos" for schema, _ in tables)
            for schema, table in tables:
                for (row,) in conn.execute(
                    sa.text(f'SELECT CAST(t AS text) FROM "{schema}"."{table}" t')
                ):
                    blob += b"\n" + str(row).encode("utf-8")
    finally:
        engine.dispose()
    return blob


def _files_bytes(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file())


@BOTH
def test_a_tasks_words_are_sealed_before_dbos_keeps_them(
    root: Path,
    env: dict[str, str],
    workers: Workers,
    model: HoldingModel,
    database: str | None,
) -> None:
    config = root / "pyproject.toml"
    config.write_text(
        config.read_text(encoding="utf-8") + "\n[tool.flower.sessions]\nencrypt = true\n",
        encoding="utf-8",
    )
    env["FLOWER_ENCRYPTION_KEY"] = generate_key()
    sealed_ws = root / "sealed"
    sealed_ws.mkdir()
    plain_ws = root / "plain"
    plain_ws.mkdir()  # its own configuration: no encryption
    (plain_ws / "pyproject.toml").write_text(
        "[tool.flower.sessions]\nencrypt = false\n", encoding="utf-8"
    )
    for ws, task_id, words in ((sealed_ws, "s", WORDS), (plain_ws, "p", CONTROL)):
        done = run(root, env, "fleet", "submit", str(ws), words, "--id", task_id)
        assert done.returncode == 0, done.stderr
    # flower fleet status opens the words with the key it holds
    shown = run(root, env, "fleet", "status", "--json")
    assert shown.returncode == 0, shown.stderr
    said = {row["id"]: row["said"] for row in json.loads(shown.stdout)["tasks"]}
    assert said == {"s": WORDS, "p": CONTROL}
    # a process without the key (this one) lists the task without its words
    said = {row["id"]: row["said"] for row in fleet_status(root)}
    assert said == {"s": None, "p": CONTROL}

    workers.start("a")

    def states() -> dict[str, str]:
        return {row["id"]: row["state"] for row in fleet_status(root)}

    try:
        wait_for(lambda: states() == {"s": "done", "p": "done"}, 120, "the tasks never finished")
    except AssertionError:
        print(fleet_status(root), workers.output("a"))
        for f in root.rglob("*.log"):
            print(f, f.read_text())
        raise
    # the wake heard the words (they opened on the worker): the clarifier was asked
    assert any(WORDS in json.dumps(r.body, ensure_ascii=False) for r in model.seen)

    if database is None:
        kept = _sqlite_bytes(root / "runs" / "fleet.sqlite")
    else:
        kept = _postgres_bytes(database)
    assert _holds(kept, CONTROL)  # the scan does see a task's input
    assert not _holds(kept, WORDS)
    # nor does the sealed workspace's run directory hold them (its task log included)
    assert (sealed_ws / "runs" / "fleet" / "s.log").exists()
    assert not _holds(_files_bytes(sealed_ws / "runs"), WORDS)
