"""The bench's quick path on a tiny workload: correct systems pass, a broken one is
FAILED (never timed), a missing peer is skipped with its install command."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from bench import compare, peers, report
from bench.skipped import Skipped
from bench.systems import BY_NAME, Spec
from bench.transcript_bench import RawSqlite
from bench.workload import make_turns

TURNS = 20


class DropsLastEntry(RawSqlite):
    """A store that loses the newest entry: what the correctness check must catch."""

    def load(self) -> list[dict]:
        return super().load()[:-1]


class Reorders(RawSqlite):
    def load(self) -> list[dict]:
        loaded = super().load()
        loaded[0], loaded[1] = loaded[1], loaded[0]
        return loaded


def _missing_peer(folder: Path) -> RawSqlite:
    raise Skipped("not installed (langgraph)", peers.INSTALL["langgraph"])


BROKEN = [
    Spec("broken: drops last", "full", lambda d: DropsLastEntry(d / "x.db", "FULL"), None, "raw"),
    Spec("broken: reorders", "full", lambda d: Reorders(d / "y.db", "FULL"), None, "raw"),
]


def _specs() -> list[Spec]:
    names = ["flower sqlite (normal)", "flower jsonfs", "raw sqlite3 (normal)", "raw jsonl + fsync"]
    if importlib.util.find_spec("agents") is not None:
        names.append("openai-agents SQLiteSession")
    return [BY_NAME[n] for n in names]


def test_quick_path_reports_broken_systems_failed(tmp_path: Path) -> None:
    missing = Spec("absent peer", "full", _missing_peer, None, "peer")
    outcomes = compare.run(TURNS, 1, specs=[*_specs(), *BROKEN, missing], base=tmp_path)
    rows = {r["system"]: r for r in compare.rows(outcomes)}

    for spec in _specs():
        row = rows[spec.name]
        assert row["status"] == "ok", row
        assert row["runs"] == 1 and row["turns"] == TURNS
        assert row["bytes_on_disk"] > 0 and row["peak_mib"] > 0
    assert rows["flower sqlite (normal)"]["baseline"] == "raw sqlite3 (normal)"
    assert rows["flower sqlite (normal)"]["ratio"]["turns_per_s"] > 0

    drops = rows["broken: drops last"]
    assert drops["status"] == "FAILED" and "turns_per_s" not in drops
    assert f"loaded {2 * TURNS - 1} entries, expected {2 * TURNS}" in drops["detail"]
    reorders = rows["broken: reorders"]
    assert reorders["status"] == "FAILED" and "first difference at entry 0" in reorders["detail"]

    absent = rows["absent peer"]
    assert absent["status"] == "skipped" and "pip install" in absent["detail"]

    table = report.transcript_table(list(rows.values()))
    assert "| broken: drops last | full | 20 | **FAILED**" in table
    assert "skipped: not installed (langgraph)" in table


def test_peer_items_convert_back_exactly() -> None:
    entries = [e for batch in make_turns(5) for e in batch]
    entries.append({"type": "user", "uuid": "u", "message": {"role": "user", "content": "hi"}})
    entries.append(
        {"type": "assistant", "uuid": "a", "message": {"role": "assistant", "content": []}}
    )
    items = [item for entry in entries for item in peers.entry_to_items(entry)]
    assert {"function_call", "function_call_output", "message"} <= {i["type"] for i in items}
    assert peers.items_to_entries(items) == entries


def test_results_block_replaced_in_place(tmp_path: Path) -> None:
    page = tmp_path / "benchmarks.md"
    page.write_text("# Benchmarks\n\nintro\n", encoding="utf-8")
    report.write_into(page, "first\n")
    report.write_into(page, "second\n")
    text = page.read_text(encoding="utf-8")
    assert text.count(report.START) == 1 and "second" in text and "first" not in text
    assert text.startswith("# Benchmarks\n\nintro\n")


def test_latency_window_is_the_median_around_the_turn() -> None:
    latencies = [i / 1000 for i in range(150)]  # turn t took t-1 ms
    assert compare.window_ms(latencies, 100) == pytest.approx(99.5)  # turns 91..110
    assert compare.window_ms(latencies, 150) == pytest.approx(139.5)  # the last 20
    assert compare.window_ms(latencies[:5], 100) == pytest.approx(2.0)  # clipped to the run


class SpeaksItsOwnFormat(RawSqlite):
    """A peer whose format is not flower's: it must be given and checked in its own,
    converted outside the timed region."""

    def prepare(self, batch: list[dict]) -> list[tuple[str, dict]]:
        return [("native", entry) for entry in batch]

    def to_entries(self, loaded: list[tuple[str, dict]]) -> list[dict]:
        return [entry for _tag, entry in loaded]

    def append(self, batch: list[tuple[str, dict]]) -> None:
        assert all(tag == "native" for tag, _entry in batch), "converted inside the timing"
        super().append([entry for _tag, entry in batch])

    def load(self) -> list[tuple[str, dict]]:
        return [("native", entry) for entry in super().load()]


def test_a_peer_is_timed_on_its_own_format(tmp_path: Path) -> None:
    spec = Spec("own format", "full", lambda d: SpeaksItsOwnFormat(d / "n.db", "FULL"), None)
    (outcome,) = compare.run(TURNS, 1, specs=[spec], base=tmp_path)
    assert outcome.status == "ok", outcome.detail
    assert len(outcome.samples) == 1


def test_agents_sessions_get_items_and_give_back_the_same_entries() -> None:
    """The Agents peers are timed on Responses items: the conversion, done outside the
    timed region, must lose nothing (their session stores the items as they are)."""
    turn = make_turns(1)[0]
    items = peers.AgentsSQLiteSession.prepare(turn)
    assert {i["type"] for i in items} >= {"function_call", "function_call_output"}
    assert peers.AgentsSQLiteSession.to_entries(items) == turn


def test_a_ratio_compares_runs_of_the_same_length(tmp_path: Path) -> None:
    lang = BY_NAME["langgraph SqliteSaver"]
    assert BY_NAME[lang.baseline or ""].max_turns == lang.max_turns  # type: ignore[attr-defined]
    raw = Spec("raw", "full", lambda d: RawSqlite(d / "r.db", "FULL"), None, "raw")
    short = Spec("short", "full", lambda d: RawSqlite(d / "s.db", "FULL"), "raw", max_turns=5)
    rows = {
        r["system"]: r for r in compare.rows(compare.run(8, 1, specs=[raw, short], base=tmp_path))
    }
    assert rows["short"]["turns"] == 5 and rows["raw"]["turns"] == 8
    assert "ratio" not in rows["short"]  # 5 turns against 8 would be no ratio at all


def test_ratios_pair_the_runs_of_one_round() -> None:
    # the machine slowed down in round 2: both sides moved, the ratio did not
    ratio = compare.paired_ratio([10.0, 5.0, 10.0], [20.0, 10.0, 16.0])
    assert ratio == {"median": 0.5, "min": 0.5, "max": 0.625}
    # a ratio of medians would read 10 / 16 = 0.625
    row = {"ratio": {"load_ms": 0.5}, "ratio_range": {"load_ms": ratio}}
    assert report._ratio(row, "load_ms") == "0.50× (0.50–0.62)"


class LeavesAJournalWhileOpen(RawSqlite):
    """Like SQLite's WAL: a file that exists while the store is open, gone at rest."""

    def __init__(self, path: Path, synchronous: str) -> None:
        super().__init__(path, synchronous)
        self.journal = path.with_name("journal")
        self.journal.write_bytes(b"x" * 1_000_000)

    def close(self) -> None:
        super().close()
        self.journal.unlink()


def test_bytes_on_disk_are_those_of_the_store_at_rest(tmp_path: Path) -> None:
    plain = Spec("plain", "full", lambda d: RawSqlite(d / "p.db", "FULL"), None, "raw")
    journal = Spec("journal", "full", lambda d: LeavesAJournalWhileOpen(d / "j.db", "FULL"), None)
    rows = {
        r["system"]: r
        for r in compare.rows(compare.run(5, 1, specs=[plain, journal], base=tmp_path))
    }
    assert rows["journal"]["bytes_on_disk"] == rows["plain"]["bytes_on_disk"] < 1_000_000


def test_transcript_bench_pairs_its_ratios_by_round() -> None:
    from bench import transcript_bench as tb

    flower, raw = tb.SPECS[0], next(s for s in tb.SPECS if s.name == tb.SPECS[0].baseline)
    ours = tb.Result(flower, append_s=[2.0, 4.0, 2.0], load_s=[1.0, 2.0, 1.0])
    base = tb.Result(raw, append_s=[1.0, 2.0, 1.6], load_s=[1.0, 2.0, 0.8])
    row = tb.rows([ours, base], turns=10)[0]
    assert row["append_ratio"] == 0.5 and row["load_ratio"] == 1.0


def test_the_agents_target_pairs_only_the_same_durability() -> None:
    def row(name: str, runs: list[float]) -> dict:
        cell = {"median": sorted(runs)[1], "min": min(runs), "max": max(runs), "runs": runs}
        return {"system": name, "status": "ok", "turns": 10, "turns_per_s": cell}

    rows = [
        row("flower sqlite (normal)", [900.0, 900.0, 900.0]),
        row("flower sqlite (full)", [300.0, 200.0, 300.0]),
        row("openai-agents SQLiteSession", [100.0, 100.0, 150.0]),
    ]
    (target,) = report.targets({"transcript": {"rows": rows}})
    assert target[1] == "2.00× (2.00–3.00)"  # paired per run; nothing at normal against FULL
    assert target[2] == "met"
