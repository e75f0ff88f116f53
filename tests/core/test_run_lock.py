"""The run directory's lock: one holder across processes, nested holds in one process; and
the check that a run can write where it works."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import pytest

from flower.core.i18n import language
from flower.core.run_lock import BusyError, RunDirError, require_run_dirs, run_lock


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


def test_require_run_dirs_names_the_first_place_a_run_cannot_write(tmp_path: Path) -> None:
    require_run_dirs(tmp_path, tmp_path / "runs" / "deeper")  # creatable: fine, made not
    assert not (tmp_path / "runs").exists()
    (tmp_path / "file").write_text("x")
    with language("en"), pytest.raises(RunDirError) as err:
        require_run_dirs(tmp_path, tmp_path / "file" / "runs")
    assert str(err.value) == (
        f"the run directory {str(tmp_path / 'file' / 'runs')!r} cannot be created: "
        f"{str(tmp_path / 'file')!r} is not a directory"
    )
    with language("en"), pytest.raises(RunDirError, match=r"^the workspace "):
        require_run_dirs(tmp_path / "file", tmp_path)
