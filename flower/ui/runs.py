"""The workflow view of a run directory: its lineage and its manifest's step runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from flower.core.config import Settings
from flower.core.labels import label_parts
from flower.core.manifest import MANIFEST_NAME, read_manifest
from flower.workflow.verdict import RoundVerdict, recorded_verdict


class StepRun(msgspec.Struct):
    """One manifest line: a step's run."""

    step: str
    session_id: str
    ok: bool
    attempts: int
    errors: list[str]
    error: str
    resumed: bool
    cost_usd: float | None
    duration_s: float
    started_at: str
    stop: str
    retired: list[str]
    run: str = ""  # the process stamp: one per wake
    judge: bool = False  # a judge's round
    verdict: RoundVerdict | None = None  # what that round's judge found


class Wake(msgspec.Struct):
    """The step runs of one wake (one process: the manifest's ``run`` stamp), in order."""

    number: int
    run: str
    started_at: str
    runs: list[StepRun]


class RunView(msgspec.Struct):
    run_dir: str
    workspace: str
    lineage_found: bool
    woke: int
    steps: dict[str, str]  # step -> session id (lineage)
    runs: list[StepRun]
    manifest: str  # the manifest's path
    wakes: list[Wake] = msgspec.field(default_factory=list)


def _errors(raw: object) -> list[str]:
    if not isinstance(raw, list):
        return []
    out = []
    for item in raw:
        if isinstance(item, dict):
            words = item.get("message") or item.get("error") or item.get("kind") or item
            out.append(str(words))
        else:
            out.append(str(item))
    return out


def _number(value: object, default: float = 0.0) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return default


def step_run(row: dict[str, Any], goals: list[str] | None = None) -> StepRun:
    """One manifest row; a judge's with its verdict (``goals``: the goals file as it is
    now, to read the text of a row written before rows recorded the verdict)."""
    cost = row.get("cost_usd")
    judge = label_parts(str(row.get("step", ""))).judge
    return StepRun(
        step=str(row.get("step", "?")),
        session_id=str(row.get("session_id") or ""),
        ok=row.get("ok") is True,
        attempts=int(_number(row.get("attempts"), 1)),
        errors=_errors(row.get("errors")),
        error=str(row.get("error") or ""),
        resumed=row.get("resumed") is True,
        cost_usd=_number(cost) if cost is not None else None,
        duration_s=_number(row.get("duration_s")),
        started_at=str(row.get("started_at") or ""),
        stop=str(row.get("stop") or ""),
        retired=[str(s) for s in row.get("retired") or [] if isinstance(s, str)],
        run=str(row.get("run") or ""),
        judge=judge,
        verdict=recorded_verdict(row, goals) if judge else None,
    )


def by_wake(runs: list[StepRun]) -> list[Wake]:
    """The step runs grouped by the wake (process) that ran them, in manifest order."""
    wakes: list[Wake] = []
    for run in runs:
        if not wakes or wakes[-1].run != run.run:
            wakes.append(Wake(len(wakes) + 1, run.run, run.started_at, []))
        wakes[-1].runs.append(run)
    return wakes


def run_view(settings: Settings, workspace: Path) -> RunView:
    """Lineage (read only, a fresh start's empty record when none matches) and the
    manifest of ``settings``' run directory."""
    from flower.stores.lineage import load_lineage

    lineage = load_lineage(workspace, settings=settings)
    run_dir = settings.run_path
    goals = _goals_now(workspace, settings)
    runs = [step_run(row, goals) for row in read_manifest(run_dir)]
    return RunView(
        run_dir=str(run_dir),
        workspace=str(workspace),
        lineage_found=lineage.found,
        woke=lineage.woke,
        steps=dict(lineage.steps),
        runs=runs,
        manifest=str(run_dir / MANIFEST_NAME),
        wakes=by_wake(runs),
    )


def _goals_now(workspace: Path, settings: Settings) -> list[str]:
    """The goals file's goals as it is now ([] without one)."""
    from flower.workflow.documents import documents, read_goals

    return read_goals(documents(workspace, settings).goals) or []


def relayed_to(run_dir: Path, session_id: str) -> str:
    """The session a relay handed ``session_id``'s work to, as the manifest records it
    (the new session's step run lists the old one in ``retired``); ``""`` when none."""
    for row in reversed(read_manifest(run_dir)):
        retired = row.get("retired")
        if isinstance(retired, list) and session_id in retired and row.get("session_id"):
            return str(row["session_id"])
    return ""
