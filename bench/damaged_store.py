"""Single-page corruptions of a real ``runs/sessions.db``, resumed by the real ``flower``.

A first ``flower --yes "..."`` (the demo's scripted model on a loopback fake API) is
killed with SIGKILL in the middle of its work step, as the demo does; its database is
checkpointed and copied. Then, for every page of the file and every corruption kind
(random bytes, zeros, a few flipped bits) and seed, a copy of the workspace gets that
one page damaged and a plain ``flower --yes`` resumes in it. Each case ends as:

- ``refused``: flower exited non-zero with one line naming the file and
  ``flower sessions repair``, and wrote nothing into it;
- ``went on``: the page held nothing any read sees (SQLite finds the file sound and
  every session reads back as written): flower finished, which is right;
- ``wrote into damaged``: flower wrote into a file that is damaged (the bug);
- ``short``: flower exited 0 after resuming from a work session read short;
- ``other``: anything else (shown).

After a refusal, ``flower sessions repair`` then ``flower --yes`` run, and the case
counts as ``went on after repair`` when both exit 0.

    PYTHONPATH=. python -m bench.damaged_store [--seeds 2] [--kinds random,zero,flip]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from flower.demo.script import DemoModel
from flower.demo.scripted_api import FakeMessagesAPI

KINDS = ("random", "zero", "flip")
PAGE = 4096
FLOWER = [sys.executable, "-m", "flower.cli.main"]


def corrupt(path: Path, page: int, kind: str, seed: int) -> None:
    """Damage page ``page`` (1-based) of ``path`` in place."""
    rnd = random.Random(f"{seed}:{page}:{kind}")
    data = bytearray(path.read_bytes())
    off = (page - 1) * PAGE
    if kind == "random":
        data[off : off + PAGE] = rnd.randbytes(PAGE)
    elif kind == "zero":
        data[off : off + PAGE] = bytes(PAGE)
    else:
        for _ in range(8):
            i = off + rnd.randrange(PAGE)
            data[i] ^= 1 << rnd.randrange(8)
    path.write_bytes(bytes(data))


def contents(db: Path) -> dict[int, list[str]] | None:
    """Every session's payloads read straight from the tables (None: unreadable)."""
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
            found: dict[int, list[str]] = {}
            for pk, payload in conn.execute(
                "SELECT session_pk, payload FROM flower_entries ORDER BY seq"
            ):
                found.setdefault(pk, []).append(payload)
            conn.execute("SELECT * FROM flower_sessions NOT INDEXED").fetchall()
            return found
    except sqlite3.DatabaseError:
        return None


def sound(db: Path, truth: dict[int, list[str]]) -> bool:
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
            if conn.execute("PRAGMA integrity_check").fetchall() != [("ok",)]:
                return False
    except sqlite3.DatabaseError:
        return False
    return contents(db) == truth


def fingerprint(runs: Path) -> str:
    h = hashlib.sha256()
    for name in ("sessions.db", "sessions.db-wal"):
        f = runs / name
        h.update(f.read_bytes() if f.exists() and f.stat().st_size else b"-")
    return h.hexdigest()


def env_for(api: FakeMessagesAPI) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FLOWER_", "ANTHROPIC_"))}
    env.update(api.env())
    env.update(FLOWER_LANG="en", FLOWER_PROBE_STRATEGY="none", PYTHONUNBUFFERED="1")
    env["FLOWER_RESILIENCE_MAX_ATTEMPTS"] = "1"
    return env


def first_run(ws: Path, model: DemoModel, env: dict[str, str]) -> None:
    proc = subprocess.Popen(
        [*FLOWER, "run", "--yes", model.script.request],
        cwd=ws,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while not model.worker_held.is_set():
        if time.monotonic() > deadline or proc.poll() is not None:
            proc.kill()
            raise SystemExit("the first run never reached its work step's tool")
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    model.release()
    with sqlite3.connect(ws / "runs" / "sessions.db") as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--pages", default="", help="only these pages (comma separated)")
    args = parser.parse_args()
    kinds = args.kinds.split(",")
    root = Path(tempfile.mkdtemp(prefix="flower-damaged-")).resolve()
    tally: Counter[str] = Counter()
    try:
        model = DemoModel(python=sys.executable, lang="en")
        with FakeMessagesAPI(model) as api:
            env = env_for(api)
            base = root / "base"
            base.mkdir(mode=0o700)
            first_run(base, model, env)
            db = base / "runs" / "sessions.db"
            truth = contents(db)
            assert truth is not None
            pages = db.stat().st_size // PAGE
            chosen = [int(p) for p in args.pages.split(",") if p] or range(2, pages + 1)
            print(f"{db}: {pages} pages, sessions {[len(v) for v in truth.values()]}")
            for seed in range(args.seeds):
                for kind in kinds:
                    for page in chosen:
                        ws = root / f"ws-{seed}-{kind}-{page}"
                        shutil.copytree(base, ws, symlinks=True)
                        corrupt(ws / "runs" / "sessions.db", page, kind, seed)
                        damaged = not sound(ws / "runs" / "sessions.db", truth)
                        before = fingerprint(ws / "runs")
                        done = subprocess.run(
                            [*FLOWER, "run", "--yes"],
                            cwd=ws,
                            env=env,
                            stdin=subprocess.DEVNULL,
                            capture_output=True,
                            text=True,
                            timeout=180,
                        )
                        wrote = fingerprint(ws / "runs") != before
                        said = done.stdout + done.stderr
                        if not damaged:
                            outcome = "went on" if done.returncode == 0 else "other"
                        elif done.returncode != 0 and "flower sessions repair" in said:
                            outcome = "refused" if not wrote else "refused after writing"
                        elif wrote:
                            outcome = "wrote into damaged"
                        elif done.returncode == 0:
                            outcome = "short"
                        else:
                            outcome = "other"
                        tally[outcome] += 1
                        repaired = None
                        if outcome == "refused":
                            fixed = subprocess.run(
                                [*FLOWER, "sessions", "repair"],
                                cwd=ws,
                                env=env,
                                stdin=subprocess.DEVNULL,
                                capture_output=True,
                                text=True,
                                timeout=180,
                            )
                            resumed = subprocess.run(
                                [*FLOWER, "run", "--yes"],
                                cwd=ws,
                                env=env,
                                stdin=subprocess.DEVNULL,
                                capture_output=True,
                                text=True,
                                timeout=180,
                            )
                            repaired = fixed.returncode == 0 and resumed.returncode == 0
                            tally["went on after repair" if repaired else "stuck after repair"] += 1
                        last = said.strip().splitlines()[-1:] if said.strip() else [""]
                        print(
                            json.dumps(
                                {
                                    "seed": seed,
                                    "kind": kind,
                                    "page": page,
                                    "damaged": damaged,
                                    "exit": done.returncode,
                                    "outcome": outcome,
                                    "repaired": repaired,
                                    "last": last[0][:160],
                                }
                            ),
                            flush=True,
                        )
                        shutil.rmtree(ws)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(dict(tally))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
