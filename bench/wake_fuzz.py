"""The long run of the wake-sequence fuzzer (issue 29 item 10): many seeds, one summary.

Each seed is a fresh workspace and a few wakes of the real ``flower`` console script
against the scripted API: a model behaviour (cooperative, ``OK`` only, empty text, a
question back, a refusal, cut at max_tokens, tool calls only, a 529 storm, one 401,
dropped connections) x a kill -9 at a random request or store write x a wake input
(nothing, a new sentence, ``--new``, ``rewind 1``); then one plain ``flower --yes`` with
a cooperative model, which must reach the work step and finish. Everything runs in
English; the checks are in ``tests/cli_run/workflow_fuzz.py`` (see
docs/testing-with-the-fake-api.md, "The wake-sequence fuzzer").

    python bench/wake_fuzz.py --seeds 0:200 --jobs 2

Prints one line a seed, every finding (the seed, the sequence, what happened, the tail
of the output), then the number of sequences, wakes and kills, the time, and the
violations by kind with their seeds. Exit status 1 when there was any violation.
``FUZZ_KEEP=DIR`` keeps every workspace under DIR to look at afterwards.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "cli_run"))

import workflow_fuzz

from flower.testing.signals import let_children_hear_ctrl_c


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python bench/wake_fuzz.py", description=__doc__)
    parser.add_argument(
        "--seeds", default="0:40", help="a range START:STOP of seeds (default 0:40)"
    )
    parser.add_argument("--jobs", type=int, default=2, help="sequences played at once (default 2)")
    args = parser.parse_args(argv)
    start, _, stop = args.seeds.partition(":")
    seeds = range(int(start), int(stop)) if stop else range(int(start), int(start) + 1)
    let_children_hear_ctrl_c()
    return workflow_fuzz.fuzz_wakes(seeds, args.jobs)


if __name__ == "__main__":
    sys.exit(main())
