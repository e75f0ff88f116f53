"""manifest.json: every field, one run stamp per process, other processes' lines kept."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from workflow_helpers import SEED_FIELDS

from flower.core.manifest import Manifest, read_manifest, result_line, run_id
from flower.runtime.spec import StepResult


def _result(step: str, **kw: object) -> StepResult:
    return StepResult(
        step=step,
        started_at="2026-09-07T01:00:00+00:00",
        ended_at="2026-09-07T01:00:02.500000+00:00",
        **kw,
    )  # type: ignore[arg-type]


def test_run_id_shape_and_stable() -> None:
    assert re.fullmatch(r"\d{8}-\d{6}-[0-9a-f]{6}", run_id())
    assert run_id() == run_id()


def test_line_has_every_field(in_tmp: Path) -> None:
    row = result_line(_result("干活", session_id="s", retired=["old"]))
    assert set(row) == SEED_FIELDS
    assert row["duration_s"] == 2.5
    assert row["retired"] == ["old"]


def test_lines_accumulate_and_are_rewritten_not_duplicated(in_tmp: Path) -> None:
    man = Manifest(in_tmp / "runs")
    man.record(_result("a"))
    man.record(_result("a·判定#1"))
    man.record(_result("a#round2"))
    rows = read_manifest(in_tmp / "runs")
    assert [r["step"] for r in rows] == ["a", "a·判定#1", "a#round2"]
    assert {r["run"] for r in rows} == {run_id()}
    text = (in_tmp / "runs" / "manifest.json").read_text(encoding="utf-8")
    assert "判定" in text  # written as UTF-8, not \\u escapes


def test_other_runs_and_unparsable_lines_are_kept(in_tmp: Path) -> None:
    path = in_tmp / "runs" / "manifest.json"
    path.parent.mkdir()
    foreign = json.dumps({"step": "x", "run": "20260101-000000-abcdef"})
    path.write_text(f"{foreign}\nnot json at all\n", encoding="utf-8")
    man = Manifest(in_tmp / "runs")
    man.record(_result("mine"))
    man.record(_result("mine#retry1"))
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[0] == foreign
    assert lines[1] == "not json at all"
    assert [json.loads(ln)["step"] for ln in lines[2:]] == ["mine", "mine#retry1"]


def test_lines_that_are_not_utf8_are_kept_byte_for_byte(in_tmp: Path) -> None:
    path = in_tmp / "runs" / "manifest.json"
    path.parent.mkdir()
    foreign = json.dumps({"step": "x", "run": "20260101-000000-abcdef"}).encode()
    separator = json.dumps({"step": "y\u2028z", "run": "r2"}, ensure_ascii=False).encode()
    path.write_bytes(foreign + b"\n\xff\n" + separator + b"\n\xc3(latin \xe9t\xe9)\r\n")
    man = Manifest(in_tmp / "runs")
    man.record(_result("mine"))
    lines = path.read_bytes().split(b"\n")
    assert lines[:4] == [foreign, b"\xff", separator, b"\xc3(latin \xe9t\xe9)\r"]
    assert json.loads(lines[4])["step"] == "mine" and lines[5:] == [b""]
    assert [r["step"] for r in read_manifest(in_tmp / "runs")] == ["x", "y\u2028z", "mine"]


_WRITER = """
import sys, time
from flower.core.manifest import Manifest
from flower.runtime.spec import StepResult
man = Manifest(sys.argv[1])
for i in range(int(sys.argv[2])):
    man.record(StepResult(step=f"{sys.argv[3]}{i}"))
print(man.run)
"""


def test_two_processes_keep_both_sets_of_lines(in_tmp: Path) -> None:
    run_dir = in_tmp / "runs"
    count = 40
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(run_dir), str(count), tag],
            stdout=subprocess.PIPE,
            text=True,
        )
        for tag in ("p", "q")
    ]
    runs = [p.communicate(timeout=60)[0].strip() for p in procs]
    assert all(p.returncode == 0 for p in procs)
    rows = read_manifest(run_dir)
    assert len(rows) == 2 * count
    for tag, run in zip(("p", "q"), runs, strict=True):
        mine = [r["step"] for r in rows if r["run"] == run]
        assert mine == [f"{tag}{i}" for i in range(count)]
    assert not list(run_dir.glob("*.tmp"))
