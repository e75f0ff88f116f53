"""``bench/prune_floor.py``'s pass does the work its lower bound claims: it drops the
synthetic errors, marks ephemeral results, and its rough check tells a call left
unanswered."""

from __future__ import annotations

from bench import prune_floor
from bench.prune_bench import TranscriptBuilder, make_session  # (tests/pruning's builder)
from flower.core.config import Settings
from flower_plugins.pruning import STALE_NOTE, is_synthetic_error


def test_the_floor_pass_drops_errors_and_marks_ephemeral_results() -> None:
    entries = make_session(600, compaction=False)
    ephemeral = tuple(Settings().pruning.ephemeral_commands)
    out, valid = prune_floor.one_pass(entries, ephemeral)
    synthetic = [e for e in entries if is_synthetic_error(e)]
    assert synthetic and not any(is_synthetic_error(e) for e in out)
    assert len(out) == len(entries) - len(synthetic)
    survivors = {e.get("uuid") for e in out}
    assert all(e.get("parentUuid") in survivors or e.get("parentUuid") is None for e in out)
    marked = [
        b
        for e in out
        if e.get("type") == "user" and isinstance(e["message"].get("content"), list)
        for b in e["message"]["content"]
        if b.get("type") == "tool_result" and str(b.get("content")).startswith(STALE_NOTE)
    ]
    assert marked
    assert not valid  # the session has cut calls, which only `interrupted` answers
    assert entries == make_session(600, compaction=False)  # the input is left as it was


def test_the_floor_check_passes_a_clean_session_and_fails_a_cut_call() -> None:
    b = TranscriptBuilder(session_id="floor", streamed=True, seed=3)
    b.user("go")
    b.tool_round([("Bash", {"command": "git status"}, "clean", False)], text="Checking.")
    b.api_error()
    b.user("continue")
    b.assistant([{"type": "text", "text": "Done."}])
    ephemeral = tuple(Settings().pruning.ephemeral_commands)
    assert prune_floor.one_pass(b.entries, ephemeral)[1]
    b.cut("ls")
    assert not prune_floor.one_pass(b.entries, ephemeral)[1]


def test_the_floor_bench_prints_its_row(capsys) -> None:  # type: ignore[no-untyped-def]
    prune_floor.main(["--size", "300", "--runs", "1"])
    header, row = capsys.readouterr().out.splitlines()
    assert header.split()[0] == "entries" and row.split()[-1].endswith("%")
