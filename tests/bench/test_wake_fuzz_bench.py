"""``bench/wake_fuzz.py``: the long run of the wake-sequence fuzzer reads a seed range,
says how many sequences it played, and sums the violations up by kind with their seeds
(the sequences themselves are played in tests/cli_run/test_workflow_fuzz.py)."""

from __future__ import annotations

from collections import Counter

import pytest

from bench import wake_fuzz

workflow_fuzz = wake_fuzz.workflow_fuzz


def test_an_empty_range_plays_nothing_and_passes(capsys: pytest.CaptureFixture[str]) -> None:
    assert wake_fuzz.main(["--seeds", "7:7", "--jobs", "1"]) == 0
    assert "0 sequences, 0 wakes, 0 killed, 0 violations" in capsys.readouterr().out


def test_violations_are_summed_up_by_kind_with_their_seeds(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def played(seed: int) -> tuple[list[workflow_fuzz.Finding], Counter[str]]:
        plan = workflow_fuzz.make_sequence(seed)
        found = [workflow_fuzz.Finding(seed, 0, "stuck: did not reach the work step", plan)]
        return (found if seed % 2 else []), Counter(wakes=len(plan) + 1)

    monkeypatch.setattr(workflow_fuzz, "run_sequence", played)
    assert wake_fuzz.main(["--seeds", "4:8", "--jobs", "1"]) == 1
    out = capsys.readouterr().out
    assert "seed 4: ok" in out and "seed 5: stuck" in out
    assert "4 sequences" in out and "2 violations" in out
    assert "  stuck: 2 (seeds 5, 7)" in out
