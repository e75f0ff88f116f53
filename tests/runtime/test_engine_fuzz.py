"""Whole runs against random scripts, faults and cuts (see engine_fuzz.py): a fixed seed
budget, so a failure here reproduces with ``python tests/runtime/engine_fuzz.py
--seeds N:N+1 --shrink``."""

from __future__ import annotations

from pathlib import Path

import pytest
from engine_fuzz import Harness

from flower.testing.fake_api import FakeMessagesAPI

SEEDS = range(60)


@pytest.mark.slow
def test_random_runs_with_faults_and_cuts_keep_every_invariant(
    fake_api: FakeMessagesAPI, in_tmp: Path
) -> None:
    harness = Harness(in_tmp, fake_api)
    try:
        findings = [found for seed in SEEDS if (found := harness.trial(seed)) is not None]
    finally:
        harness.close()
    assert not findings, "\n".join(map(str, findings))
