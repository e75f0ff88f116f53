"""``python -m bench.prune_bench`` on small sessions (the seeded one first compacts at
entry 1,960): both shapes are measured, and the chain needs no repair (the bench turns
a repair warning into an error)."""

from __future__ import annotations

from pathlib import Path

from bench import prune_bench


def test_the_prune_bench_measures_a_compacted_and_a_whole_session(tmp_path: Path) -> None:
    compacted = prune_bench.measure(2100, 1, tmp_path, compaction=True)
    whole = prune_bench.measure(300, 1, tmp_path, compaction=False)
    assert 0 < compacted["context"] < compacted["entries"] / 2  # the chain: from the boundary
    assert whole["context"] > whole["entries"] * 0.8  # never compacted: most of it
    for figures in (compacted, whole):
        assert figures["raw"] > 0 and figures["view"] > 0 and figures["view_trim"] > 0


def test_the_prune_bench_prints_one_row_per_session(capsys) -> None:  # type: ignore[no-untyped-def]
    prune_bench.main(["--sizes", "400", "--runs", "1"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:2] == ["entries", "context"]
    assert len(lines) == 3
