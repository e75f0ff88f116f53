"""The pieces a page is made of: the workflow view of a run directory, a transcript's
items (boundaries, images, thinking) and the context per round."""

from __future__ import annotations

import json
import re
import urllib.request
from pathlib import Path

from ui_helpers import PROJECT, WORKING, Transcript, serve, settings_for, working_session

from flower.core.i18n import translations
from flower.core.records import SessionKey
from flower.stores.lineage import load_lineage
from flower.stores.open import open_session_store
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
    assert svg.count("<circle") == 2
    assert chart.rounds([]) == []
    assert "<polyline" not in chart.context_svg([], 160_000, translations("en"))


def _circles_y(svg: str) -> list[float]:
    return [float(y) for y in re.findall(r'<circle class="round" cx="[^"]+" cy="([^"]+)"', svg)]


def test_the_context_chart_scales_to_the_session() -> None:
    """Issue 29 item 9: a small session fills the plot instead of lying flat under a 1M
    axis; the relay threshold and the window are marked when they are in range."""
    en = translations("en")
    plot_bottom = chart.HEIGHT - chart.BOTTOM
    plot_h = chart.HEIGHT - chart.TOP - chart.BOTTOM
    small = chart.context_svg(chart.rounds(working_session(WORKING)), 160_000, en)
    low, high = sorted(_circles_y(small), reverse=True)  # 12,400 then 30,000 tokens
    assert plot_bottom - high > plot_h * 0.7  # the top round near the top of the plot
    assert low - high > plot_h * 0.3  # and the two rounds far apart
    assert "relay at" not in small and "1M window" not in small  # far above: no marks
    ticks = re.findall(r'class="tick" text-anchor="end">([^<]+)<', small)
    assert ticks[0] == "0" and ticks[-1] == "35K"

    near = [chart.RoundContext(n, tokens, 1) for n, tokens in enumerate((40_000, 120_000), 1)]
    svg = chart.context_svg(near, 160_000, en)
    assert "relay at 160K" in svg and "1M window" not in svg  # within reach: marked
    [threshold] = re.findall(r'<line [^>]*y1="([^"]+)"[^>]*class="threshold"', svg)
    assert float(threshold) > chart.TOP  # inside the plot, above the highest round
    assert float(threshold) < min(_circles_y(svg))

    full = [chart.RoundContext(1, 300_000, 1), chart.RoundContext(2, 950_000, 1)]
    svg = chart.context_svg(full, 160_000, en)
    assert "relay at 160K" in svg and "1M window" in svg


def test_the_title_is_the_first_thing_said() -> None:
    t = Transcript("s")
    t.add("user", {"role": "user", "content": "<command-name>"}, isMeta=True)
    t.prompt("  Fix   the\\ntests  ")
    assert conversation.title_of(t.entries) == "Fix the\\ntests"
    assert PROJECT  # the helpers' project key is what the pages are served under


def _rows(html: str) -> dict[str, str]:
    """The sessions page's rows by session id, as their cells' text."""
    found = {}
    for row in re.findall(r'<tr class="session-row" data-session="([^"]+)">(.*?)</tr>', html, re.S):
        cells = re.findall(r"<td[^>]*>(.*?)</td>", row[1], re.S)
        found[row[0]] = " | ".join(" ".join(re.sub("<[^>]+>", " ", c).split()) for c in cells)
    return found


def test_a_workflows_sessions_show_their_role_step_and_the_users_request(
    tmp_path: Path,
) -> None:
    """Issue 29 item 9: every session of a run says who it was, and its title is what
    the user asked, not flower's own prompt ("Check one by one whether the goals...")."""
    from ui_helpers import REQUEST, workflow_run

    from flower.core.keys import project_key
    from flower.core.labels import label_parts
    from flower.core.manifest import read_manifest

    settings = workflow_run(tmp_path, ["1. not met — no a.html yet\n2. met", "1. met\n2. met"])
    with open_session_store(settings=settings) as store:  # one the manifest does not know
        store.append(SessionKey(PROJECT, WORKING), working_session(WORKING))
    rows = read_manifest(tmp_path / "runs")
    judges = [r["session_id"] for r in rows if label_parts(r["step"]).judge]
    served = serve(settings)
    try:
        with urllib.request.urlopen(served.url, timeout=10) as page:
            listed = _rows(page.read().decode())
        url = f"{served.url}s/{project_key(tmp_path)}/{judges[1]}"
        with urllib.request.urlopen(url, timeout=10) as page:
            judge_page = page.read().decode()
        with urllib.request.urlopen(served.url + "run", timeout=10) as page:
            run_page = page.read().decode()
    finally:
        served.stop()
        served.viewer.close()  # type: ignore[attr-defined]
    assert listed.pop(WORKING).startswith("List the files of the demo project |  |  |")
    shown = sorted(row.split(" | ")[:3] for row in listed.values())
    assert shown == sorted(
        [
            [REQUEST, "clarifier", "confirm the brief"],
            [REQUEST, "goals", "set goals"],
            [REQUEST, "worker", "work"],
            [REQUEST, "judge", "work·judge#1"],
            [REQUEST, "judge", "work·judge#2"],
        ]
    )
    assert "Check one by one" not in " ".join(listed.values())
    # a session's own page is headed the same way
    assert f"<h1>{REQUEST}</h1>" in judge_page
    assert '<span class="badge role">judge</span> work·judge#2' in judge_page

    # the workflow page: the wake's step runs, and what the judge found each round
    [wake] = re.findall(r'<section class="wake".*?</section>', run_page, re.S)
    cells = [
        " ".join(re.sub("<[^>]+>", " ", row).split())
        for row in re.findall(r"<tr class=.*?</tr>", wake, re.S)
    ]
    judged = [c for c in cells if c.startswith("work·judge")]
    assert judged[0].startswith("work·judge#1") and "1 of 2 goals met not met: 1" in judged[0]
    assert judged[1].startswith("work·judge#2") and "2 of 2 goals met" in judged[1]
    assert '<tr class="unmet judge">' in wake and '<tr class="ok judge">' in wake


def test_the_workflow_page_groups_step_runs_by_wake(tmp_path: Path) -> None:
    """Each wake (the manifest's run stamp) is a section of its own; a judge row written
    before rows kept the verdict is read from its text against the goals file."""
    run_dir = tmp_path / "runs"
    run_dir.mkdir()
    settings = settings_for(f"sqlite:///{run_dir / 'sessions.db'}", run_dir)
    (tmp_path / "goals.md").write_text("# Goals\n\n1. a\n2. b\n3. c\n", encoding="utf-8")
    rows = [
        {"step": "干活", "session_id": "w", "ok": True, "run": "20261201-100000-aaaaaa"},
        {"step": "干活·判定#1", "session_id": "j1", "ok": True, "run": "20261201-100000-aaaaaa",
         "text": "1. met\n2. not met — no\n3. met"},
        {"step": "干活", "session_id": "w", "ok": True, "run": "20261202-090000-bbbbbb"},
        {"step": "干活·判定#1", "session_id": "j2", "ok": True, "run": "20261202-090000-bbbbbb",
         "verdict": {"goals": 3, "met": 3, "unmet": []}},
        {"step": "干活·判定#2", "session_id": "j3", "ok": False, "run": "20261202-090000-bbbbbb",
         "error": "529 overloaded"},
    ]  # fmt: skip
    (run_dir / "manifest.json").write_text("".join(json.dumps(r) + "\n" for r in rows))
    view = runs.run_view(settings, tmp_path)
    assert [(w.number, w.run, [r.session_id for r in w.runs]) for w in view.wakes] == [
        (1, "20261201-100000-aaaaaa", ["w", "j1"]),
        (2, "20261202-090000-bbbbbb", ["w", "j2", "j3"]),
    ]
    old, new, failed = view.wakes[0].runs[1], view.wakes[1].runs[1], view.wakes[1].runs[2]
    assert (old.verdict.met, old.verdict.goals, old.verdict.unmet) == (2, 3, (2,))  # type: ignore[union-attr]
    assert new.verdict is not None and new.verdict.all_met
    assert failed.verdict is None and not failed.ok
