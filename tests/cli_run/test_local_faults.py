"""A full disk under flower's own files is the machine's fault: one line naming the file
and that nothing stored was lost, exit 1, no retries of the API; once space is freed the
next ``flower`` carries on. On a small tmpfs (CI runs as root). A read-only file system
and a spent quota take the same path (tests/runtime/test_engine.py)."""

from __future__ import annotations

import errno
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_run_helpers import REQUEST, Flower, ScriptedModel

from flower.core.fileperms import local_fault_error
from flower.core.i18n import _, language
from flower.testing.fake_api import FakeMessagesAPI


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 4 MB tmpfs of its own, unmounted after the test."""
    if os.geteuid() != 0:
        pytest.fail("mounting a tmpfs needs root (CI runs as root)")
    mount = tmp_path / "mnt"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)], check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(mount: Path) -> Path:
    filler = mount / "filler"
    with open(filler, "wb") as out:
        try:
            while True:
                out.write(b"x" * 65536)
                out.flush()
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
    return filler


def expected_line(reason: int, path: str) -> str:
    with language(os.environ.get("FLOWER_LANG", "zh_CN")):
        return "flower: error: " + str(local_fault_error(OSError(reason, "x"), path))


@pytest.mark.parametrize("backend", ["jsonfs", "sqlite"])
def test_a_disk_full_mid_run_is_one_line_and_the_next_flower_goes_on(
    flower: Flower, api: FakeMessagesAPI, model: ScriptedModel, tmpfs: Path, backend: str
) -> None:
    ws = tmpfs / "proj"
    ws.mkdir()
    retries = {"FLOWER_RESILIENCE_MAX_ATTEMPTS": "6", "FLOWER_RESILIENCE_BASE_DELAY": "0.1"}
    here = Flower(ws, {**flower.env, **retries, "FLOWER_SESSIONS_BACKEND": backend})
    model.hold_worker = True  # the work step waits for its first tool's answer
    with here.spawn("--yes", REQUEST) as proc:
        try:
            deadline = time.monotonic() + 60
            while not model.worker_held.is_set():
                assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
                time.sleep(0.02)
            filler = fill(tmpfs)
        finally:
            model.release()
        out, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, err
    assert "Traceback" not in err, err
    api_error = _("API error ({kind}): {error}; attempt {attempt} of {attempts} in {delay:.1f} s")
    assert api_error.split("(")[0] not in out + err  # not taken for the API's fault
    reason = errno.ENOSPC
    errors = [line for line in err.splitlines() if line.startswith("flower: error:")]
    assert len(errors) == 1, err
    transcripts = ws / "runs" / "transcripts"
    if backend == "sqlite":
        assert errors[0] == expected_line(reason, "runs/sessions.db")
    else:
        (project,) = transcripts.iterdir()
        named = errors[0].split(str(project) + "/", 1)[-1].split(".jsonl", 1)[0]
        assert errors[0] == expected_line(reason, str(project / f"{named}.jsonl"))
    # space freed: the next plain flower carries on the work step to the judge's verdict
    # (the files the model's tools could not write on the full disk may leave goals open:
    # exit 0, or the documented "goals not met" code)
    filler.unlink()
    model.hold_worker = False
    again = here("--yes")
    assert again.returncode in (0, 4), again.stderr
    assert "Traceback" not in again.stderr and "flower: error" not in again.stderr
    with language(os.environ.get("FLOWER_LANG", "zh_CN")):
        carrying_on = _("<- carrying on")
    assert carrying_on in again.stdout
