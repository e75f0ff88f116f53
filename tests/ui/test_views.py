"""The pieces a page is made of: the workflow view of a run directory, a transcript's
items (boundaries, images, thinking) and the context per round."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

from ui_helpers import PROJECT, WORKING, Transcript, serve, settings_for, working_session

from flower.core.i18n import translations
from flower.stores.lineage import load_lineage
from flower.ui import chart, conversation, runs

PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJ"
    + "AAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


def test_the_workflow_view_shows_lineage_and_the_manifests_step_runs(tmp_path: Path) -> None:
    run_dir = tmp_path / "runs"
    settings = settings_for(f"sqlite:///{run_dir / 'sessions.db'}", run_dir)
    lineage = load_lineage(tmp_path, settings=settings)
    lineage.bump_woke()
    lineage.bump_woke()
    lineage.record_session("干活", WORKING)
    rows = [
        {"step": "干活", "session_id": WORKING, "ok": False, "attempts": 3, "cost_usd": 0.25,
         "errors": [{"message": "529 overloaded"}], "error": "killed", "resumed": False,
         "duration_s": 61.5, "started_at": "2026-11-30T10:00:00", "retired": []},
        {"step": "干活", "session_id": WORKING, "ok": True, "attempts": 1, "cost_usd": 0.125,
         "errors": [], "resumed": True, "duration_s": 12.0, "started_at": "2026-11-30T11:00:00",
         "retired": ["0ld5e551-0000-4000-8000-000000000000"]},
        "not a row",
    ]  # fmt: skip
    (run_dir / "manifest.json").write_text(
        "".join(
            (json.dumps(r, ensure_ascii=False) if isinstance(r, dict) else r) + "\n" for r in rows
        )
    )
    served = serve(settings)
    try:
        with urllib.request.urlopen(served.url + "run", timeout=10) as page:
            html = page.read().decode()
    finally:
        served.stop()
        served.viewer.close()  # type: ignore[attr-defined]
    assert "woke 2 times" in html
    lineage_table = html[html.index('id="lineage"') : html.index('id="manifest"')]
    assert "<td>work</td>" in lineage_table and WORKING in lineage_table  # the page speaks en
    manifest = html[html.index('id="manifest"') :]
    first, second = manifest.split('<tr class="')[1:3]
    assert first.startswith("failed") and "529 overloaded" in first and "killed" in first
    assert ">3<" in first and "$0.2500" in first and "61.5 s" in first
    assert second.startswith("ok") and "resumed" in second and "$0.1250" in second
    assert "0ld5e551" in second  # the session a relay retired
    assert runs.relayed_to(run_dir, "0ld5e551-0000-4000-8000-000000000000") == WORKING
    assert runs.relayed_to(run_dir, WORKING) == ""


def test_boundaries_images_and_thinking_become_their_own_items() -> None:
    t = Transcript("s")
    t.add("user", {"role": "user", "content": "go on"}, relayFrom="old-session")
    t.add("system", {}, subtype="compact_boundary")
    t.add("user", {"role": "user", "content": "summary of before"}, isCompactSummary=True)
    t.reply([{"type": "thinking", "thinking": "hmm"}, {"type": "text", "text": "ok"}], 10)
    t.add("user", {"role": "user", "content": [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
        {"type": "image", "source": {"type": "base64", "media_type": "text/html", "data": "PGI+"}},
    ]})  # fmt: skip
    items = conversation.items(t.entries)
    assert items[0].relay_from == "old-session"
    assert items[1].role == "compaction"
    assert items[2].label == "compaction summary"
    assert [b.kind for b in items[3].blocks] == ["thinking", "text"]
    image, not_image = items[4].blocks
    assert image.image is not None and image.image.media_type == "image/png"
    assert not_image.kind == "other"  # no data: URL of a type that is no image


def test_a_result_without_its_call_is_shown_on_its_own() -> None:
    t = Transcript("s")
    t.tool_round("toolu_1", "out", 10)
    call_only, result_only = t.entries
    assert [b.kind for b in conversation.items([call_only])[0].blocks] == ["thinking", "tool"]
    (item,) = conversation.items([result_only])
    assert item.blocks[0].kind == "result" and item.blocks[0].result.text == "out"
    both = conversation.items(t.entries)
    assert len(both) == 1 and both[0].blocks[1].result.text == "out"


def test_a_round_is_measured_by_its_last_request() -> None:
    entries = working_session(WORKING)
    points = chart.rounds(entries)
    assert [(p.round_no, p.tokens, p.requests) for p in points] == [(1, 12_400, 2), (2, 30_000, 1)]
    svg = chart.context_svg(points, 160_000, translations("en"))
    assert svg.count("<circle") == 2 and "relay at 160K" in svg
    assert chart.rounds([]) == []
    assert "<polyline" not in chart.context_svg([], 160_000, translations("en"))


def test_the_title_is_the_first_thing_said() -> None:
    t = Transcript("s")
    t.add("user", {"role": "user", "content": "<command-name>"}, isMeta=True)
    t.prompt("  Fix   the\\ntests  ")
    assert conversation.title_of(t.entries) == "Fix the\\ntests"
    assert PROJECT  # the helpers' project key is what the pages are served under
