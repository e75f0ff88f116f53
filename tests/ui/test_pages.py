"""The viewer's pages over HTTP: what each shows, and how it says no."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from ui_helpers import HOSTILE, PROJECT, SCRIPT_TEXT, TOOL_OUTPUT, WORKING, serve, settings_for

from flower.core.config import Settings


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_the_list_shows_each_session_with_its_title_and_context(viewer_url: str) -> None:
    status, html = get(viewer_url)
    assert status == 200
    assert WORKING in html and HOSTILE in html
    assert "List the files of the demo project" in html
    assert "30,000" in html  # the context of the last request (the index's last_usage)
    assert "2 sessions" in html


def test_search_keeps_the_rows_whose_id_holds_the_words(viewer_url: str) -> None:
    _, html = get(viewer_url + "?q=000000000002")
    assert HOSTILE in html and WORKING not in html
    assert "1 session matching" in html


def test_a_session_page_shows_the_tool_call_with_its_result(viewer_url: str) -> None:
    status, html = get(f"{viewer_url}s/{PROJECT}/{WORKING}")
    assert status == 200
    call = html.index('data-tool-id="toolu_ls1"')
    assert "Bash" in html[call : call + 300]
    assert TOOL_OUTPUT.splitlines()[0] in html[call:]
    assert '<details class="thinking">' in html
    assert "API Error: 529" in html  # stored: every entry as written
    assert "removed by synthetic-errors" in html  # ...marked with what the view does


def test_the_pruned_view_leaves_out_the_synthetic_error(viewer_url: str) -> None:
    _, html = get(f"{viewer_url}s/{PROJECT}/{WORKING}?view=pruned")
    assert "API Error: 529" not in html
    assert "There are two files." in html
    assert "1 entry removed by synthetic-errors" in html


def test_the_chart_has_a_point_per_round_on_an_axis_that_fits_the_session(
    viewer_url: str,
) -> None:
    _, html = get(f"{viewer_url}s/{PROJECT}/{WORKING}")
    svg = html[html.index("<svg") : html.index("</svg>")]
    assert svg.count('<circle class="round"') == 2
    assert "round 2: 30,000 tokens" in svg
    # 30K tokens at most: the 160K relay threshold and the 1M window are far above
    assert "relay at 160K" not in svg and "1M window" not in svg


def test_html_in_a_transcript_is_escaped(viewer_url: str) -> None:
    _, html = get(f"{viewer_url}s/{PROJECT}/{HOSTILE}")
    assert SCRIPT_TEXT not in html
    assert "&lt;script&gt;window.__pwned = true&lt;/script&gt;" in html


def test_an_unknown_session_is_a_404_page(viewer_url: str) -> None:
    status, html = get(f"{viewer_url}s/{PROJECT}/no-such-session")
    assert status == 404
    assert "no session no-such-session" in html and "Traceback" not in html
    status, _ = get(f"{viewer_url}s/{PROJECT}/..")
    assert status == 404
    status, _ = get(f"{viewer_url}nowhere")
    assert status == 404


def test_a_store_that_cannot_be_opened_is_said_on_the_page(tmp_path: Path) -> None:
    (tmp_path / "not-a-db").write_text("this is no database")
    settings = settings_for(f"sqlite:///{tmp_path / 'not-a-db'}", tmp_path / "runs")
    served = serve(settings)
    try:
        status, html = get(served.url)
    finally:
        served.stop()
    assert status == 503
    assert "the store cannot be opened" in html
    assert "flower: error:" in html and "Traceback" not in html


def test_the_live_stream_sends_what_is_appended(seeded: Settings) -> None:
    from ui_helpers import Transcript

    from flower.core.records import SessionKey
    from flower.stores.open import open_session_store

    data: dict[str, str] = {}
    served = serve(seeded)
    try:
        url = f"{served.url}s/{PROJECT}/{WORKING}/events?after=7"
        with urllib.request.urlopen(url, timeout=10) as stream:
            assert stream.headers["Content-Type"].startswith("text/event-stream")
            assert stream.readline().startswith(b"retry:")
            more = Transcript(WORKING)
            more.prompt("and one more thing")
            with open_session_store(settings=seeded) as store:
                store.append(SessionKey(PROJECT, WORKING), more.entries)
            for _, line in zip(range(500), stream, strict=False):  # idle lines: 10 per second
                if line.startswith(b"data: "):
                    data = json.loads(line[6:])
                    break
    finally:
        served.stop()
        served.viewer.close()  # type: ignore[attr-defined]
    assert data["count"] == 8
    assert "and one more thing" in data["html"]


def test_with_a_token_a_request_without_it_is_refused(seeded: Settings) -> None:
    served = serve(seeded, token="s3cret")
    try:
        assert get(served.url)[0] == 403
        status, html = get(served.url + "?token=s3cret")
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor())
        with opener.open(served.url + "?token=s3cret", timeout=10):
            pass
        with opener.open(f"{served.url}s/{PROJECT}/{WORKING}", timeout=10) as page:
            followed = page.status  # the cookie carries the token to the next page
    finally:
        served.stop()
        served.viewer.close()  # type: ignore[attr-defined]
    assert status == 200 and WORKING in html
    assert followed == 200


@pytest.mark.parametrize("page", ["", "s/{p}/{s}", "s/{p}/{s}?view=pruned", "run"])
def test_the_pages_are_served_offline(viewer_url: str, page: str) -> None:
    """Every asset a page links comes from the viewer itself (no CDN)."""
    _, html = get(viewer_url + page.format(p=PROJECT, s=WORKING))
    for attribute in ('src="', 'href="'):
        for part in html.split(attribute)[1:]:
            link = part.split('"', 1)[0]
            assert not link.startswith(("http:", "https:", "//")), link


def test_forks_show_where_they_left_and_where_others_left(seeded: Settings) -> None:
    from flower.core.fork import fork
    from flower.core.records import SessionKey
    from flower.runtime.pricing import price_table
    from flower.stores.open import open_session_store
    from flower.ui import listing

    source = SessionKey(PROJECT, WORKING)
    with open_session_store(settings=seeded) as store:
        at = store.load(source)[3]["uuid"]  # the reply after the tool call
        forked = fork(store, source, at, session_id="f0f0f0f0-0000-4000-8000-00000000000f")
    served = serve(seeded)
    try:
        _, sessions_page = get(served.url)
        _, parent = get(f"{served.url}s/{PROJECT}/{WORKING}")
        _, child = get(f"{served.url}s/{PROJECT}/{forked.session_id}")
    finally:
        served.stop()
        served.viewer.close()  # type: ignore[attr-defined]
    row = sessions_page[sessions_page.index(f'data-session="{forked.session_id}"') :]
    assert f'from <a href="/s/{PROJECT}/{WORKING}"' in row[: row.index("</tr>")]
    forked_here = parent[: parent.index("was forked here")]
    assert f'id="e-{at}"' in forked_here[forked_here.rindex("<article") :]
    assert child.count("fork point: copied up to here") == 1
    with open_session_store(settings=seeded) as store:
        copied = listing.summarize_entries(store.load(forked) or [], {})
        prices = price_table()
        source = listing.summarize_entries(store.load(SessionKey(PROJECT, WORKING)) or [], prices)
        fork_cost = listing.summarize_entries(store.load(forked) or [], prices).cost_usd
    assert copied.context_tokens == 12_400  # the context it starts from
    assert source.cost_usd is not None and fork_cost is None  # copied replies: not its cost
    assert f'forked from <a href="/s/{PROJECT}/{WORKING}#e-{at}"' in child


def test_past_the_scan_limit_forks_are_looked_for_on_request(
    seeded: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    from flower.core.fork import fork
    from flower.core.records import SessionKey
    from flower.stores.open import open_session_store
    from flower.ui import app

    with open_session_store(settings=seeded) as store:
        fork(store, SessionKey(PROJECT, WORKING))
    monkeypatch.setattr(app, "FORK_SCAN_LIMIT", 2)  # the project has three sessions
    served = serve(seeded)
    try:
        _, page = get(f"{served.url}s/{PROJECT}/{WORKING}")
        _, asked = get(f"{served.url}s/{PROJECT}/{WORKING}?forks=all")
    finally:
        served.stop()
        served.viewer.close()  # type: ignore[attr-defined]
    assert "was forked here" not in page
    assert "its project has 3 sessions to look through" in page and 'id="find-forks"' in page
    assert "was forked here" in asked and 'id="find-forks"' not in asked


def test_a_relayed_session_says_where_its_work_went_on(seeded: Settings) -> None:
    from ui_helpers import Transcript

    from flower.core.records import SessionKey
    from flower.stores.open import open_session_store

    successor = "5ucce550-0000-4000-8000-000000000003"
    seed = Transcript(successor, first_extra={"relayFrom": WORKING})
    seed.prompt("handoff: two files listed, README read")
    with open_session_store(settings=seeded) as store:
        store.append(SessionKey(PROJECT, successor), seed.entries)
    run_dir = Path(seeded.run_dir)
    line = {"step": "干活", "session_id": successor, "ok": True, "retired": [WORKING]}
    (run_dir / "manifest.json").write_text(json.dumps(line, ensure_ascii=False) + "\n")
    served = serve(seeded)
    try:
        _, old = get(f"{served.url}s/{PROJECT}/{WORKING}")
        _, new = get(f"{served.url}s/{PROJECT}/{successor}")
    finally:
        served.stop()
        served.viewer.close()  # type: ignore[attr-defined]
    relay = old[old.index('id="relayed-to"') :]
    assert f'href="/s/{PROJECT}/{successor}"' in relay[: relay.index("</p>")]
    assert f"relay boundary: goes on from <code>{WORKING}</code>" in new
    assert f'relayed from <a href="/s/{PROJECT}/{WORKING}"' in new
