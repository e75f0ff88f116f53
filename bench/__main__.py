"""``python -m bench [transcript|growth|context|all] [--quick] [--runs N] [--json FILE]``.

Writes PNGs into docs/img/ and the results block of docs/benchmarks.md (``--no-docs``
to skip). Exit status 1 when any system FAILED its correctness check.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def _say(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "suite", nargs="?", default="all", choices=["transcript", "growth", "context", "all"]
    )
    parser.add_argument(
        "--quick", action="store_true", help="small sizes: about two minutes in all"
    )
    parser.add_argument(
        "--runs", type=int, default=None, help="timed runs per system (default 3 quick, 5 full)"
    )
    parser.add_argument(
        "--turns",
        type=int,
        default=None,
        help="turns in the transcript suite (200 quick, 2000 full)",
    )
    parser.add_argument(
        "--json", type=Path, default=None, help="also write every figure to this JSON file"
    )
    parser.add_argument(
        "--no-docs", action="store_true", help="do not write docs/img and docs/benchmarks.md"
    )
    args = parser.parse_args(argv)

    from bench import compare, context, growth, plots, report

    runs = args.runs or (3 if args.quick else 5)
    turns = args.turns or (200 if args.quick else 2000)
    suites = ["transcript", "growth", "context"] if args.suite == "all" else [args.suite]
    started = time.perf_counter()
    results: dict[str, Any] = {
        "meta": {
            "command": "python -m bench " + " ".join(argv if argv is not None else sys.argv[1:]),
            "when": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"),
            "machine": f"{platform.system()} {platform.machine()}, {os.cpu_count()} "
            f"cores, Python {platform.python_version()}",
            "mode": "quick" if args.quick else "full",
            "runs": runs,
        }
    }
    if "transcript" in suites:
        outcomes = compare.run(turns, runs, progress=_say)
        results["transcript"] = {"turns": turns, "rows": compare.rows(outcomes)}
    if "growth" in suites:
        results["growth"] = growth.run(growth.QUICK if args.quick else growth.FULL, _say)
    if "context" in suites:
        results["context"] = context.run(500, every=5 if args.quick else 1, progress=_say)
    results["meta"]["seconds"] = round(time.perf_counter() - started, 1)

    body = report.markdown(results)
    print(body)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1), encoding="utf-8")
    if not args.no_docs:
        img = ROOT / "docs" / "img"
        img.mkdir(parents=True, exist_ok=True)
        if "transcript" in results:
            plots.transcript(results["transcript"]["rows"], img)
        if "growth" in results:
            plots.growth(results["growth"], img)
        if "context" in results:
            plots.context(results["context"], img)
        report.write_into(ROOT / "docs" / "benchmarks.md", body)
    _say(f"done in {results['meta']['seconds']} s")
    failed = [r for r in results.get("transcript", {}).get("rows", []) if r["status"] == "FAILED"]
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
