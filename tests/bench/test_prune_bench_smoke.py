"""``python -m bench.prune_bench`` on small sessions (the seeded one first compacts at
entry 1,960): both shapes are measured against the sqlite3 + json.loads baseline, the
chain needs no repair (the bench turns a repair warning into an error), and the peak
RSS and the split of a view's time are reported."""

from __future__ import annotations

from pathlib import Path

from bench import prune_bench


def test_the_prune_bench_measures_a_compacted_and_a_whole_session(tmp_path: Path) -> None:
    compacted = prune_bench.measure(2100, 1, tmp_path, compaction=True)
    whole = prune_bench.measure(300, 1, tmp_path, compaction=False)
    assert 0 < compacted["chain"] < compacted["entries"] / 2  # the chain: from the boundary
    assert whole["chain"] > whole["entries"] * 0.8  # never compacted: most of it
    for figures in (compacted, whole):
        assert figures["baseline"] > 0 and figures["view"] > 0 and figures["view_trim"] > 0
        assert figures["view/baseline"] > 0


def test_the_baseline_reads_the_rows_the_store_loads(tmp_path: Path) -> None:
    from flower.core.config import Settings
    from flower.core.records import SessionKey
    from flower.stores.open import open_session_store

    db, name, count = prune_bench.write_session(tmp_path, 200, compaction=False)
    store = open_session_store(f"sqlite:///{db}", settings=Settings())
    loaded = store.load(SessionKey(prune_bench.PROJECT, name))
    store.close()
    assert prune_bench.baseline_load(db, name) == loaded and len(loaded or []) == count


def test_the_prune_bench_prints_its_rows_the_rss_and_the_steps(capsys) -> None:  # type: ignore[no-untyped-def]
    prune_bench.main(["--sizes", "300", "400", "--runs", "1", "--rss-size", "300"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:3] == ["shape", "entries", "chain"]
    assert len([line for line in lines if line.split()[0] in ("compacted", "whole")]) == 4
    assert any(line.startswith("linear (whole)") for line in lines)
    assert lines[-1].startswith("peak RSS, 301 entries")
    prune_bench.main(["--steps", "200", "--runs", "1"])
    steps = capsys.readouterr().out
    assert "walk" in steps and "interrupted" in steps and "check" in steps
