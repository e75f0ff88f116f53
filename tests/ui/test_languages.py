"""The viewer's pages speak the language flower ui was started in (Jinja2's i18n
extension over flower's catalogs), rendered through Starlette's TestClient."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from starlette.testclient import TestClient
from ui_helpers import PROJECT, WORKING

from flower.core.config import Settings
from flower.core.i18n import language, translations
from flower.stores.open import open_session_store
from flower.ui import chart
from flower.ui.app import Viewer, build_app


def client(settings: Settings, lang: str | None) -> TestClient:
    viewer = Viewer(
        settings,
        lambda: open_session_store(settings=settings, read_only=True),
        settings.sessions_url(),
        workspace=Path(settings.run_dir).parent,
    )
    return TestClient(build_app(viewer, language=lang) if lang else build_app(viewer))


def html_lang(html: str) -> str:
    found = re.search(r'<html lang="([^"]+)">', html)
    assert found, html[:200]
    return found.group(1)


def test_the_pages_in_english(seeded: Settings) -> None:
    web = client(seeded, "en")
    listing = web.get("/").text
    assert html_lang(listing) == "en"
    assert '<span class="count">2 sessions</span>' in listing
    assert "<th>last active (UTC)</th>" in listing and "7 entries · 2.7 KB" in listing
    page = web.get(f"/s/{PROJECT}/{WORKING}").text
    assert "<h2>context per round</h2>" in page
    assert f"session <code>{WORKING}</code> · project <code>{PROJECT}</code>" in page
    assert "7 entries · " in page and "<summary>thinking</summary>" in page
    assert "1 entry removed by synthetic-errors" in page
    assert 'data-entries="live: {count} entries"' in page
    assert "工作流" not in web.get("/run").text
    missing = web.get(f"/s/{PROJECT}/nope")
    assert missing.status_code == 404 and "<h1>not found</h1>" in missing.text
    assert f"flower: error: no session nope in project {PROJECT}" in missing.text


def test_the_pages_in_chinese(seeded: Settings) -> None:
    web = client(seeded, "zh_CN")
    listing = web.get("/").text
    assert html_lang(listing) == "zh-CN"
    assert '<span class="count">2 个会话</span>' in listing
    assert "<th>最后活动(UTC)</th>" in listing and "7 条记录 · 2.7 KB" in listing
    assert (
        '<nav><a href="/">会话</a> <a href="/run">工作流</a> <a href="/fleet">集群</a></nav>'
        in listing
    )
    page = web.get(f"/s/{PROJECT}/{WORKING}").text
    assert "<h2>每轮的上下文</h2>" in page and "<summary>思考</summary>" in page
    assert f"会话 <code>{WORKING}</code> · 项目 <code>{PROJECT}</code>" in page
    assert "context per round" not in page and "session <code>" not in page
    assert 'data-entries="实时:{count} 条记录"' in page  # the live line viewer.js writes
    assert "还没有谱系(下次运行从头开始)" in web.get("/run").text
    missing = web.get(f"/s/{PROJECT}/nope")
    assert missing.status_code == 404 and "<h1>找不到</h1>" in missing.text
    assert f"flower: error: 项目 {PROJECT} 里没有会话 nope" in missing.text  # the prefix stays


@pytest.mark.parametrize(
    ("lang", "said"), [("en", "no sessions match “{q}” in"), ("zh_CN", "里没有匹配“{q}”的会话")]
)
def test_what_the_user_typed_is_escaped_inside_a_translated_sentence(
    seeded: Settings, lang: str, said: str
) -> None:
    html = client(seeded, lang).get("/", params={"q": "<b>x</b>"}).text
    assert said.format(q="&lt;b&gt;x&lt;/b&gt;") in html
    assert "<b>x</b>" not in html


def test_without_a_language_the_app_speaks_the_one_active_when_built(seeded: Settings) -> None:
    """flower ui chooses the language as every command does, then builds the app."""
    with language("zh_CN"):
        web = client(seeded, None)
    with language("en"):  # what is active later does not change the pages
        assert html_lang(web.get("/").text) == "zh-CN"
    with language("en"):
        web = client(seeded, None)
    assert html_lang(web.get("/").text) == "en"


def test_the_token_gate_refuses_in_the_pages_language(seeded: Settings) -> None:
    viewer = Viewer(seeded, lambda: None, seeded.sessions_url())
    refused = TestClient(build_app(viewer, token="s3cret", language="zh_CN")).get("/")
    assert refused.status_code == 403
    assert html_lang(refused.text) == "zh-CN"
    assert "403: 打开 flower ui 打印的网址(它带着令牌)" in refused.text
    english = TestClient(build_app(viewer, token="s3cret", language="en")).get("/")
    assert "403: open the URL flower ui printed (it carries the token)" in english.text


@pytest.mark.parametrize(
    ("lang", "shown", "not_shown"),
    [
        ("en", ["<td>work·judge#1</td>", "1 of 2 goals met", "not met: 1", "wake 1"], "干活"),
        ("zh_CN", ["<td>干活·判定#1</td>", "2 个目标达成 1 个", "未达成:1", "第 1 次唤醒"], "work"),
    ],
)
def test_the_workflow_page_shows_step_names_in_its_language(
    seeded: Settings, lang: str, shown: list[str], not_shown: str
) -> None:
    """Step names are stored as their keys (干活·判定#1); the page shows them the way the
    CLI does, in the page's language, and the judge's verdict too."""
    import json

    line = {
        "step": "干活·判定#1",
        "session_id": WORKING,
        "ok": True,
        "verdict": {"goals": 2, "met": 1, "unmet": [1]},
    }
    (Path(seeded.run_dir) / "manifest.json").write_text(
        json.dumps(line, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    page = client(seeded, lang).get("/run").text
    for words in shown:
        assert words in page
    assert not_shown not in page[page.index('id="manifest"') :]


def chart_of(html: str) -> str:
    return html[html.index("<svg") : html.index("</svg>")]


@pytest.mark.parametrize(
    ("lang", "said"),
    [
        (
            "en",
            [
                "<title>context size per round</title>",
                "<title>round 1: 12,400 tokens (2 requests)</title>",
                "<title>round 2: 30,000 tokens (1 request)</title>",  # not "1 requests"
                ">round (1-2)</text>",
            ],
        ),
        (
            "zh_CN",
            [
                "<title>每轮的上下文大小</title>",
                "<title>第 1 轮:12,400 token(2 次请求)</title>",
                "<title>第 2 轮:30,000 token(1 次请求)</title>",
                ">轮次(1-2)</text>",
            ],
        ),
    ],
)
def test_the_context_chart_speaks_the_pages_language(
    seeded: Settings, lang: str, said: list[str]
) -> None:
    svg = chart_of(client(seeded, lang).get(f"/s/{PROJECT}/{WORKING}").text)
    for words in said:
        assert words in svg
    # the relay threshold and the window are marked once a session comes near them
    big = chart.context_svg([chart.RoundContext(1, 900_000, 1)], 160_000, translations(lang))
    marks = {
        "en": (">1M window</text>", ">relay at 160K</text>"),
        "zh_CN": (">1M 窗口</text>", ">160K 时接力</text>"),
    }
    assert all(mark in big for mark in marks[lang])
    svg += big
    if lang != "en":  # no English word left among the chart's words (its class names are)
        shown = " ".join(re.findall(r">([^<>]+)</(?:title|text)>", svg))
        assert not re.search(r"round|relay|window|request|context", shown), shown
