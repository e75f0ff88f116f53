"""Early kills with encryption on: does anything under ``runs/`` hold what was said?

Each round starts ``flower --yes "<request>"`` with encryption on (the demo's scripted
model on a loopback fake API), kills it with SIGKILL after a random delay (seeded), and
scans every byte under ``runs/`` for the request (UTF-8 or JSON-escaped), file by file,
as ``strings`` would. Then a plain ``flower --yes`` finishes the work and the scan is
repeated for the model's words (the brief's lines, the work step's last words).

    PYTHONPATH=. python -m bench.encrypted_kills [--rounds 20] [--seed 29]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from flower.demo.script import DemoModel
from flower.demo.scripted_api import FakeMessagesAPI
from flower.stores.keyring import generate_key

FLOWER = [sys.executable, "-m", "flower.cli.main"]


def forms(text: str) -> list[bytes]:
    return list(
        {
            text.encode(),
            json.dumps(text)[1:-1].encode(),
            json.dumps(text, ensure_ascii=True)[1:-1].encode(),
        }
    )


def holders(runs: Path, secrets: list[str]) -> set[str]:
    found = set()
    for path in runs.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            if any(f in data for s in secrets for f in forms(s)):
                found.add(path.name)
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--seed", type=int, default=29)
    parser.add_argument("--max-delay", type=float, default=3.0)
    args = parser.parse_args()
    rnd = random.Random(args.seed)
    root = Path(tempfile.mkdtemp(prefix="flower-enc-kills-")).resolve()
    early: Counter[str] = Counter()
    after: Counter[str] = Counter()
    try:
        model = DemoModel(python=sys.executable, lang="en")
        model.release()  # never hold the worker
        script = model.script
        said = [script.request]
        words = [script.done, *[ln for ln in script.brief.splitlines() if len(ln) > 24]]
        with FakeMessagesAPI(model) as api:
            env = {
                k: v for k, v in os.environ.items() if not k.startswith(("FLOWER_", "ANTHROPIC_"))
            }
            env.update(api.env())
            env.update(
                FLOWER_LANG="en",
                FLOWER_PROBE_STRATEGY="none",
                FLOWER_SESSIONS_ENCRYPT="true",
                FLOWER_ENCRYPTION_KEY=generate_key(),
            )
            for n in range(args.rounds):
                ws = root / f"ws-{n}"
                ws.mkdir(mode=0o700)
                delay = rnd.uniform(0.0, args.max_delay)
                proc = subprocess.Popen(
                    [*FLOWER, "run", "--yes", script.request],
                    cwd=ws,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
                time.sleep(delay)
                proc.send_signal(signal.SIGKILL)
                proc.wait()
                found = holders(ws / "runs", said) if (ws / "runs").exists() else set()
                early.update(found)
                early["rounds with any"] += bool(found)
                done = subprocess.run(
                    [*FLOWER, "run", "--yes"],
                    cwd=ws,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    capture_output=True,
                    timeout=180,
                )
                found = holders(ws / "runs", said + words)
                after.update(found)
                after["rounds with any"] += bool(found)
                print(
                    json.dumps({"round": n, "delay": round(delay, 2), "finished": done.returncode}),
                    flush=True,
                )
                shutil.rmtree(ws)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"{args.rounds} early kills; files holding the request in clear: {dict(early)}")
    print(f"after a finished run; files holding said or model words in clear: {dict(after)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
