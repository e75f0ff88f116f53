"""PNG figures for docs/benchmarks.md (matplotlib, Agg backend, imported lazily)."""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(plt: Any, fig: Any, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def transcript(rows: list[dict[str, Any]], out: Path) -> Path:
    plt = _plt()
    ok = [r for r in rows if r["status"] == "ok"]
    fig, axes = plt.subplots(1, 2, figsize=(13, 5))
    names = [f"{r['system']} [{r['turns']}]" for r in ok]
    for ax, figure, label in (
        (axes[0], "turns_per_s", "durable appends (turns/s, log)"),
        (axes[1], "load_ms", "load whole session (ms, log)"),
    ):
        med = [r[figure]["median"] for r in ok]
        err = [
            [m - r[figure]["min"] for m, r in zip(med, ok, strict=True)],
            [r[figure]["max"] - m for m, r in zip(med, ok, strict=True)],
        ]
        colors = [
            {"flower": "tab:green", "raw": "tab:gray", "peer": "tab:orange"}[r["kind"]] for r in ok
        ]
        ax.barh(names, med, xerr=err, color=colors)
        ax.set_xscale("log")
        ax.set_title(label)
        ax.invert_yaxis()
    axes[1].set_yticklabels([])
    fig.suptitle("One seeded agent conversation; median of runs, bars = min..max; [turns run]")
    return _save(plt, fig, out / "bench-transcript.png")


def growth(result: dict[str, Any], out: Path) -> Path:
    plt = _plt()
    fig, axes = plt.subplots(2, 2, figsize=(12, 9))
    for backend in ("sqlite", "jsonfs", "postgres"):
        size = [r for r in result["size"] if r["backend"] == backend]
        if size:
            axes[0][0].plot(
                [r["entries"] for r in size],
                [r["load_ms"] for r in size],
                "o-",
                label=f"{backend} load",
            )
            axes[0][0].plot(
                [r["entries"] for r in size],
                [r["last_usage_ms"] for r in size],
                "x--",
                label=f"{backend} last_usage",
            )
        count = [r for r in result["count"] if r["backend"] == backend]
        if count:
            axes[0][1].plot(
                [r["sessions"] for r in count], [r["list_ms"] for r in count], "o-", label=backend
            )
        writers = [r for r in result["writers"] if r["backend"] == backend]
        if writers:
            axes[1][0].plot(
                [r["writers"] for r in writers],
                [r["turns_per_s"] for r in writers],
                "o-",
                label=backend,
            )
    for flat in result["flat"]:
        lat = flat["latencies_ms"]
        step = 100
        xs = list(range(step, len(lat) + 1, step))
        axes[1][1].plot(
            xs, [statistics.median(lat[x - step : x]) for x in xs], label=flat["backend"]
        )
    axes[0][0].set(
        xscale="log",
        yscale="log",
        xlabel="entries in the session",
        ylabel="ms",
        title="load and last_usage vs session size",
    )
    axes[0][1].set(
        xscale="log",
        yscale="log",
        xlabel="sessions in the project",
        ylabel="ms",
        title="list_sessions vs session count",
    )
    axes[0][1].axhline(50, color="red", lw=0.8, ls=":", label="50 ms target")
    axes[1][0].set(
        xlabel="writer processes",
        ylabel="total durable turns/s",
        title="concurrent writers, one session each",
    )
    axes[1][1].set(
        xlabel="turn",
        ylabel="ms per append (median of 100)",
        title="per-turn append latency over one long session",
        ylim=(0, None),
    )
    for ax in axes.flat:
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
    return _save(plt, fig, out / "bench-growth.png")


def context(result: dict[str, Any], out: Path) -> Path:
    plt = _plt()
    fig, ax = plt.subplots(figsize=(11, 6))
    labels = {
        "none": "no pruning",
        "default": "default pruning chain",
        "trim": "chain + trim",
        "relay": f"chain + trim + relay at {result['threshold_tokens']:,}",
    }
    for mode, data in result["modes"].items():
        ax.plot(data["rounds"], [t / 1000 for t in data["per_round"]], label=labels[mode])
    base = result["seed_baseline"]
    first = result["modes"]["none"]["per_round"][0]
    xs = [1, result["rounds"]]
    ax.plot(
        xs,
        [(first + base["slope_per_round"] * (x - 1)) / 1000 for x in xs],
        "k:",
        lw=1,
        label="seed: ~2.2K/round",
    )
    ax.scatter(
        [70], [base["round_70"] / 1000], color="black", zorder=5, label="seed: 185.9K at round 70"
    )
    ax.axhline(result["window_tokens"] / 1000, color="red", lw=1, label="1M window")
    ax.axhline(
        result["threshold_tokens"] / 1000, color="purple", lw=0.8, ls="--", label="relay threshold"
    )
    ax.set(
        xlabel="round",
        ylabel="context sent (K tokens, est. bytes/4)",
        title=f"Context per round, simulated {result['rounds']}-round session",
    )
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    return _save(plt, fig, out / "bench-context.png")
