"""Markdown tables and the target checks, written into docs/benchmarks.md."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from bench.compare import LOADS_PER_RUN, paired_ratio

START = "<!-- bench:results:start -->"
END = "<!-- bench:results:end -->"


def _mmm(cell: dict[str, float], fmt: str) -> str:
    return f"{cell['median']:{fmt}} ({cell['min']:{fmt}}–{cell['max']:{fmt}})"


def _ratio(row: dict[str, Any], name: str) -> str:
    """The ratio, and for a timed figure the min–max of the rounds' ratios."""
    ratio = row.get("ratio", {}).get(name)
    if ratio is None:
        return ""
    spread = row.get("ratio_range", {}).get(name)
    if spread is None or spread["min"] == spread["max"]:
        return f"{ratio:.2f}×"
    return f"{ratio:.2f}× ({spread['min']:.2f}–{spread['max']:.2f})"


def _paired(a: dict[str, Any], b: dict[str, Any], name: str) -> dict[str, float] | None:
    """``a``'s figure over ``b``'s, paired round by round (None when runs differ)."""
    ours, theirs = a[name].get("runs"), b[name].get("runs")
    if not ours or not theirs or len(ours) != len(theirs):
        return None
    return paired_ratio(ours, theirs)


def _times(cell: dict[str, float] | None, fallback: float) -> tuple[float, str]:
    if cell is None:
        return fallback, f"{fallback:.2f}×"
    return cell["median"], f"{cell['median']:.2f}× ({cell['min']:.2f}–{cell['max']:.2f})"


def transcript_table(rows: list[dict[str, Any]]) -> str:
    head = (
        "| system | durability | turns | turns/s | ×raw | ms/append @100 | "
        "×raw | ms/append @N | ×raw "
        "| load ms | ×raw | disk MiB | ×raw | peak MiB | ×raw |\n|" + "---|" * 15
    )
    lines = [head]
    for r in rows:
        if r["status"] != "ok":
            status = "**FAILED**" if r["status"] == "FAILED" else "skipped"
            lines.append(
                f"| {r['system']} | {r['durability']} | {r['turns']} | {status}: {r['detail']} |"
                + " |" * 11
            )
            continue
        lines.append(
            "| "
            + " | ".join(
                [
                    r["system"],
                    r["durability"],
                    str(r["turns"]),
                    _mmm(r["turns_per_s"], ",.0f"),
                    _ratio(r, "turns_per_s"),
                    _mmm(r["lat_100_ms"], ".3f"),
                    _ratio(r, "lat_100_ms"),
                    _mmm(r["lat_n_ms"], ".3f"),
                    _ratio(r, "lat_n_ms"),
                    _mmm(r["load_ms"], ".1f"),
                    _ratio(r, "load_ms"),
                    f"{r['bytes_on_disk'] / 2**20:.1f}",
                    _ratio(r, "bytes_on_disk"),
                    f"{r['peak_mib']:.1f}",
                    _ratio(r, "peak_mib"),
                ]
            )
            + " |"
        )
    return "\n".join(lines)


def growth_tables(g: dict[str, Any]) -> str:
    parts = ["| backend | entries | load ms | last_usage ms |\n|---|---|---|---|"]
    parts += [
        f"| {r['backend']} | {r['entries']:,} | {r['load_ms']:.1f} | {r['last_usage_ms']:.2f} |"
        for r in g["size"]
    ]
    parts.append("\n| backend | sessions | list_sessions ms |\n|---|---|---|")
    parts += [f"| {r['backend']} | {r['sessions']:,} | {r['list_ms']:.1f} |" for r in g["count"]]
    parts.append("\n| backend | writer processes | total turns/s |\n|---|---|---|")
    parts += [
        f"| {r['backend']} | {r['writers']} | {r['turns_per_s']:,.0f} |" for r in g["writers"]
    ]
    parts.append(
        "\n| backend | turns | ms/append at turn 100 | at 1,000 | at N | N "
        "/ 100 |\n|---|---|---|---|---|---|"
    )
    for f in g["flat"]:
        at = f["at"]
        parts.append(
            f"| {f['backend']} | {f['turns']:,} | {at.get('100', 0):.3f} | "
            f"{at.get('1000', 0):.3f} | {at[str(f['turns'])]:.3f} | {f['flat_ratio']:.2f} "
            "|"
        )
    for backend, why in g.get("skipped", {}).items():
        parts.append(f"\n{backend}: skipped ({why})")
    return "\n".join(parts)


def context_table(c: dict[str, Any]) -> str:
    lines = [
        "| mode | growth/round | at round 70 | max | at round 500 | hits 1M "
        "window at | relays | rounds ≥ threshold |\n|---|---|---|---|---|---|---|---|"
    ]
    for mode, d in c["modes"].items():
        lines.append(
            f"| {mode} | {d['slope_per_round'] / 1000:.2f}K "
            f"| {(d['at_round_70'] or 0) / 1000:.1f}K "
            f"| {d['max'] / 1000:.1f}K | {d['final'] / 1000:.1f}K "
            f"| {d['wall_round'] or 'never'} | {len(d['relays'])} | {d['rounds_over_threshold']} |"
        )
    b = c["seed_baseline"]
    lines.append(
        f"| *seed baseline* | {b['slope_per_round'] / 1000:.1f}K | {b['round_70'] / 1000:.1f}K "
        f"| | | ~{b['wall_round']} | | |"
    )
    return "\n".join(lines)


def _row(rows: list[dict[str, Any]], name: str) -> dict[str, Any] | None:
    return next((r for r in rows if r["system"] == name and r["status"] == "ok"), None)


def targets(results: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(target, measured, verdict) for every target that this run measured."""
    out: list[tuple[str, str, str]] = []
    rows = results.get("transcript", {}).get("rows", [])

    def tps(name: str) -> float | None:
        r = _row(rows, name)
        return r["turns_per_s"]["median"] if r else None

    full = tps("flower sqlite (full)")
    agents, lang = tps("openai-agents SQLiteSession"), tps("langgraph SqliteSaver")
    if full and agents:
        full_row = _row(rows, "flower sqlite (full)")
        agents_row = _row(rows, "openai-agents SQLiteSession")
        assert full_row and agents_row
        x, shown = _times(_paired(full_row, agents_row, "turns_per_s"), full / agents)
        out.append(
            (
                "flower sqlite append ≥ 2× openai-agents SQLiteSession (both fsync per commit)",
                shown,  # both at synchronous=FULL: flower at normal against it is no pair
                "met" if x >= 2 else "MISSED",
            )
        )
    if full and lang:
        x = full / lang
        out.append(
            (
                "flower sqlite far ahead of per-turn LangGraph checkpoints",
                f"{x:.1f}× (LangGraph ran only {_row(rows, 'langgraph SqliteSaver')['turns']} "
                "turns)",
                "met" if x >= 5 else "MISSED",
            )
        )
    for name in ("flower sqlite (normal)", "flower sqlite (full)"):
        r = _row(rows, name)
        if r and "ratio" in r:
            x = r["ratio"]["turns_per_s"]
            out.append(
                (
                    f"{name} append within 0.7× of raw sqlite3",
                    _ratio(r, "turns_per_s"),
                    "met" if x >= 0.7 else "MISSED",
                )
            )
            y = r["ratio"]["load_ms"]
            out.append(
                (
                    f"{name} load within 1.3× of raw sqlite3 + JSON decode",
                    _ratio(r, "load_ms"),
                    "met" if y <= 1.3 else "MISSED",
                )
            )
    g = results.get("growth")
    if g:
        for f in g["flat"]:
            out.append(
                (
                    f"{f['backend']}: per-turn append flat from turn 100 to "
                    f"turn {f['turns']:,} (≤ 1.5×)",
                    f"{f['flat_ratio']:.2f}×",
                    "met" if f["flat_ratio"] <= 1.5 else "MISSED",
                )
            )
        for r in g["count"]:
            if r["sessions"] >= 10_000 and r["backend"] in ("sqlite", "postgres"):
                out.append(
                    (
                        f"{r['backend']}: list_sessions over {r['sessions']:,} sessions < 50 ms",
                        f"{r['list_ms']:.1f} ms",
                        "met" if r["list_ms"] < 50 else "MISSED",
                    )
                )
    c = results.get("context")
    if c:
        d = c["modes"]["relay"]
        limit = c["threshold_tokens"]
        out.append(
            (
                f"relay on: context under the {limit:,} threshold for all {c['rounds']} rounds",
                f"max {d['max']:,}; {d['rounds_over_threshold']} rounds at or over it",
                "met" if d["max"] < limit else "MISSED",
            )
        )
        out.append(
            (
                f"relay on: context under the {c['window_tokens']:,} window "
                f"for all {c['rounds']} rounds",
                f"max {d['max']:,}",
                "met" if d["max"] < c["window_tokens"] else "MISSED",
            )
        )
    return out


def markdown(results: dict[str, Any]) -> str:
    meta = results["meta"]
    parts = [
        f"*Generated by `{meta['command']}` on {meta['when']} ({meta['machine']}; "
        f"mode: {meta['mode']}, {meta['runs']} runs).*\n"
    ]
    t = targets(results)
    if t:
        parts.append("### Targets\n\n| target | measured | verdict |\n|---|---|---|")
        parts += [f"| {a} | {b} | {v} |" for a, b, v in t]
    if "transcript" in results:
        tr = results["transcript"]
        parts.append(
            f"\n### One conversation, every system\n\n{tr['turns']} turns ({2 * tr['turns']} "
            "entries), one durable append per turn, then the whole session loaded "
            f"(a run's load: the median of {LOADS_PER_RUN}). Median (min–max) of "
            f"{meta['runs']} runs; ×raw = ratio to raw sqlite3 at the same durability "
            "and turns (raw psycopg for postgres), the median (min–max) over runs of "
            "each run's own ratio (the systems take turns, run by run).\n\n"
            "![transcript](img/bench-transcript.png)\n"
        )
        parts.append(transcript_table(tr["rows"]))
    if "growth" in results:
        parts.append("\n### How cost grows\n\n![growth](img/bench-growth.png)\n")
        parts.append(growth_tables(results["growth"]))
    if "context" in results:
        c = results["context"]
        parts.append(
            f"\n### Context economy\n\nTokens estimated as {c['token_estimate']} "
            f"({c['system_tokens']:,}).\n\n![context](img/bench-context.png)\n"
        )
        parts.append(context_table(c))
    return "\n".join(parts) + "\n"


def write_into(page: Path, body: str) -> None:
    """Replace the generated block of ``page`` (between the markers), or append one."""
    text = page.read_text(encoding="utf-8") if page.exists() else ""
    block = f"{START}\n{body}{END}"
    if START in text and END in text:
        text = re.sub(re.escape(START) + ".*?" + re.escape(END), lambda _m: block, text, flags=re.S)
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    page.write_text(text, encoding="utf-8")
