"""How fast ``flower ui`` serves a store of many sessions: the list, a far page, a
search, and a session page, timed over HTTP against the real server.

A store of ``--sessions`` small sessions (a prompt, a tool call and its result, a
reply) is written in a temporary folder, all in one project (the worst case for a
session page, which looks through its project for sessions forked off it). Each
request runs ``--runs`` times; the median is reported next to what reading every
transcript once would cost (what a list that read transcripts would pay per page).

    python bench/ui_bench.py --sessions 10000 --runs 5 [--backend sqlite|jsonfs]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PROJECT = "-bench-ui"


def _session(session_id: str, n: int) -> list[dict[str, Any]]:
    base = {"sessionId": session_id, "cwd": "/bench/ui", "isSidechain": False}
    ids = [f"{session_id[:8]}-{part}" for part in ("u", "a", "r", "b")]
    usage = {"input_tokens": 1_000 + n, "output_tokens": 20}
    call = {"type": "tool_use", "id": f"t{n}", "name": "Bash", "input": {"command": "ls"}}
    return [
        {**base, "type": "user", "uuid": ids[0], "parentUuid": None,
         "message": {"role": "user", "content": f"task number {n}: list the files"}},
        {**base, "type": "assistant", "uuid": ids[1], "parentUuid": ids[0],
         "message": {"role": "assistant", "id": f"msg_{n}a", "model": "claude-sonnet-4-6",
                     "content": [call], "usage": usage}},
        {**base, "type": "user", "uuid": ids[2], "parentUuid": ids[1],
         "message": {"role": "user", "content": [
             {"type": "tool_result", "tool_use_id": f"t{n}", "content": "a\nb\nc"}]}},
        {**base, "type": "assistant", "uuid": ids[3], "parentUuid": ids[2],
         "message": {"role": "assistant", "id": f"msg_{n}b", "model": "claude-sonnet-4-6",
                     "content": [{"type": "text", "text": "three files"}], "usage": usage}},
    ]  # fmt: skip


def _median_ms(work: Callable[[], Any], runs: int) -> float:
    work()  # warm: the first request opens the store
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        work()
        times.append((time.perf_counter() - started) * 1000)
    return round(statistics.median(times), 1)


def run(sessions: int, runs: int, backend: str = "sqlite") -> dict[str, Any]:
    sys.path.insert(0, str(ROOT))
    from flower.core.config import SessionsConfig, Settings
    from flower.core.records import SessionKey
    from flower.stores.open import open_session_store
    from flower.ui.app import Viewer, build_app
    from flower.ui.server import Background, bind

    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp) / "runs"
        url = (
            f"jsonfs://{run_dir / 'transcripts'}"
            if backend == "jsonfs"
            else f"sqlite:///{run_dir / 'sessions.db'}"
        )
        settings = Settings(run_dir=str(run_dir), sessions=SessionsConfig(backend=backend, url=url))
        ids = [f"{n:08x}-0000-4000-8000-{n:012x}" for n in range(sessions)]
        started = time.perf_counter()
        with open_session_store(settings=settings) as store:
            for n, sid in enumerate(ids):
                store.append(SessionKey(PROJECT, sid), _session(sid, n))
        seeded_s = time.perf_counter() - started

        with open_session_store(settings=settings) as store:
            read_all_ms = _median_ms(
                lambda: [store.load(SessionKey(PROJECT, sid)) for sid in ids], max(1, runs // 2)
            )

        def reader() -> Any:
            return open_session_store(settings=settings, read_only=True)

        viewer = Viewer(settings, reader, url)
        served = Background(build_app(viewer), bind("127.0.0.1", 0)).start()

        def get(path: str) -> Callable[[], bytes]:
            def fetch() -> bytes:
                with urllib.request.urlopen(served.url + path, timeout=120) as response:
                    return response.read()

            return fetch

        try:
            middle = ids[len(ids) // 2]
            pages = {
                "list, page 1": "",
                "list, page 100": "?page=100",
                "search (one match)": f"?q={middle}",
                "search (every session)": "?q=0000-4000",
                "session page": f"s/{PROJECT}/{middle}",
                "session page, pruned": f"s/{PROJECT}/{middle}?view=pruned",
            }
            timings = {name: _median_ms(get(path), runs) for name, path in pages.items()}
            # past FORK_SCAN_LIMIT siblings, looking for forks off a session is asked for
            timings["session page, looking for forks (once)"] = _median_ms(
                get(f"s/{PROJECT}/{middle}?forks=all"), 1
            )
        finally:
            served.stop()
            viewer.close()
    return {
        "backend": backend,
        "sessions": sessions,
        "runs": runs,
        "seed_s": round(seeded_s, 1),
        "read_every_transcript_ms": read_all_ms,
        "requests_ms": timings,
    }


def markdown(result: dict[str, Any]) -> str:
    lines = [
        f"{result['sessions']:,} sessions on {result['backend']}, median of "
        f"{result['runs']} requests over HTTP:",
        "",
        "| request | ms |",
        "|---|---:|",
    ]
    lines += [f"| {name} | {ms} |" for name, ms in result["requests_ms"].items()]
    lines.append(f"| (reading every transcript once, for comparison) | "
                 f"{result['read_every_transcript_ms']} |")  # fmt: skip
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--backend", choices=["sqlite", "jsonfs"], default="sqlite")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    result = run(args.sessions, args.runs, args.backend)
    print(markdown(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
