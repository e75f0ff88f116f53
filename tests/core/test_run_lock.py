"""The run directory's lock: one holder across processes, nested holds in one process."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import pytest

from flower.core.run_lock import BusyError, run_lock


def _free(run_dir: Path) -> bool:
    """Whether another open of the lock file (as another process would) can take it."""
    fd = os.open(run_dir / "flower.lock", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(fd)
    return True


def test_a_holder_holds_it_again_and_lets_go_at_the_outer_end(tmp_path: Path) -> None:
    run_dir = tmp_path / "runs"
    with run_lock(run_dir):
        with run_lock(run_dir):  # the CLI around Lineage.rewind or Workflow.run
            assert not _free(run_dir)
        assert not _free(run_dir)  # the inner end did not let go
        assert (run_dir / "flower.lock").read_text() == str(os.getpid())
    assert _free(run_dir)


def test_another_holder_is_busy(tmp_path: Path) -> None:
    run_dir = tmp_path / "runs"
    with run_lock(run_dir):
        pass
    other = os.open(run_dir / "flower.lock", os.O_RDWR)
    try:
        fcntl.flock(other, fcntl.LOCK_EX)
        os.pwrite(other, b"4242", 0)
        with pytest.raises(BusyError, match=r"pid 4242"), run_lock(run_dir):
            pass
    finally:
        os.close(other)
    with run_lock(run_dir):  # a refusal leaves nothing held
        assert not _free(run_dir)
