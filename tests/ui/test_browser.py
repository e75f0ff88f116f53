"""The viewer as a person uses it: in a real headless chromium."""

from __future__ import annotations

import time
from typing import Any

import pytest
from ui_helpers import HOSTILE, PROJECT, WORKING, Transcript, serve

from flower.core.config import Settings
from flower.core.records import SessionKey
from flower.stores.open import open_session_store

pytestmark = pytest.mark.slow  # a few seconds: a real browser


def wait_for(condition: Any, timeout: float = 10.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.05)


def test_the_list_shows_the_seeded_sessions(browser: Any, viewer_url: str) -> None:
    from selenium.webdriver.common.by import By

    browser.get(viewer_url)
    rows = browser.find_elements(By.CSS_SELECTOR, "tr.session-row")
    assert {row.get_attribute("data-session") for row in rows} == {WORKING, HOSTILE}
    titles = [row.find_element(By.CSS_SELECTOR, "td.title a").text for row in rows]
    assert "List the files of the demo project" in titles


def test_a_session_shows_a_tool_call_and_its_result(browser: Any, viewer_url: str) -> None:
    from selenium.webdriver.common.by import By

    browser.get(viewer_url)
    browser.find_element(By.LINK_TEXT, "List the files of the demo project").click()
    tool = browser.find_element(By.CSS_SELECTOR, '.tool[data-tool-id="toolu_ls1"]')
    assert tool.find_element(By.CSS_SELECTOR, ".tool-name").text == "Bash"
    assert "README.md" in tool.find_element(By.CSS_SELECTOR, ".result pre").text
    thinking = browser.find_element(By.CSS_SELECTOR, "details.thinking")
    assert thinking.get_attribute("open") is None  # folded
    assert not thinking.find_element(By.CSS_SELECTOR, ".text").is_displayed()


def test_the_pruned_toggle_hides_the_synthetic_api_error(browser: Any, viewer_url: str) -> None:
    from selenium.webdriver.common.by import By

    browser.get(f"{viewer_url}s/{PROJECT}/{WORKING}")
    errors = browser.find_elements(By.CSS_SELECTOR, "article.api-error")
    assert len(errors) == 1 and "API Error: 529" in errors[0].text
    assert "removed by synthetic-errors" in errors[0].text
    browser.find_element(By.ID, "view-pruned").click()
    wait_for(lambda: "view=pruned" in browser.current_url)
    assert browser.find_elements(By.CSS_SELECTOR, "article.api-error") == []
    assert "There are two files." in browser.find_element(By.ID, "conversation").text
    browser.find_element(By.ID, "view-stored").click()
    wait_for(lambda: "view=stored" in browser.current_url)
    assert len(browser.find_elements(By.CSS_SELECTOR, "article.api-error")) == 1


def test_the_chart_renders(browser: Any, viewer_url: str) -> None:
    from selenium.webdriver.common.by import By

    browser.get(f"{viewer_url}s/{PROJECT}/{WORKING}")
    svg = browser.find_element(By.CSS_SELECTOR, "#chart svg.context-chart")
    assert svg.size["width"] > 300 and svg.size["height"] > 100
    line = browser.find_element(By.CSS_SELECTOR, "#chart polyline.context")
    assert len(line.get_attribute("points").split()) == 2
    box = browser.execute_script("return arguments[0].getBBox()", line)
    assert box["width"] > 100  # drawn across the plot, not a point
    # the axis fits the session (30K tokens at most): its rounds rise through the plot,
    # not a flat line under a 1M axis; the threshold and window far above are not drawn
    assert box["height"] > 80
    assert not browser.find_elements(By.CSS_SELECTOR, "#chart line.threshold")
    assert not browser.find_elements(By.CSS_SELECTOR, "#chart line.window")


def test_a_live_append_appears_without_reload(browser: Any, seeded: Settings) -> None:
    from selenium.webdriver.common.by import By

    served = serve(seeded)
    try:
        browser.get(f"{served.url}s/{PROJECT}/{WORKING}")
        browser.execute_script("window.__same_page = true")
        before = len(browser.find_elements(By.CSS_SELECTOR, "#conversation article"))
        more = Transcript(WORKING)
        more.prompt("a message written while the page is open")
        more.tool_round("toolu_live", "live output", 40_000)
        with open_session_store(settings=seeded) as store:
            store.append(SessionKey(PROJECT, WORKING), more.entries)
        text = wait_for(
            lambda: (
                "a message written while the page is open"
                in browser.find_element(By.ID, "conversation").text
            )
        )
        assert text, "the appended message never appeared"
        tool = browser.find_element(By.CSS_SELECTOR, '.tool[data-tool-id="toolu_live"]')
        assert "live output" in tool.text
        after = len(browser.find_elements(By.CSS_SELECTOR, "#conversation article"))
        assert after == before + 2  # the prompt, the call with its result inside
        assert browser.execute_script("return window.__same_page") is True  # no reload
    finally:
        browser.get("about:blank")  # closes the event stream before the server stops
        served.stop()
        served.viewer.close()  # type: ignore[attr-defined]


def test_a_script_in_a_transcript_does_not_run(browser: Any, viewer_url: str) -> None:
    from selenium.webdriver.common.by import By

    browser.get(f"{viewer_url}s/{PROJECT}/{HOSTILE}")
    assert (
        "<script>window.__pwned = true</script>" in browser.find_element(By.ID, "conversation").text
    )
    time.sleep(0.2)  # an onerror handler would have run by now
    assert browser.execute_script("return window.__pwned === undefined") is True
    assert browser.find_elements(By.CSS_SELECTOR, "#conversation script") == []
    assert browser.find_elements(By.CSS_SELECTOR, "#conversation img[src='x']") == []


def test_an_unknown_session_shows_the_404_page(browser: Any, viewer_url: str) -> None:
    from selenium.webdriver.common.by import By

    browser.get(f"{viewer_url}s/{PROJECT}/missing-session")
    assert "no session missing-session" in browser.find_element(By.ID, "error").text


def test_the_live_line_speaks_the_pages_language(browser: Any, seeded: Settings) -> None:
    """viewer.js writes the live line with the words the page gives it (zh_CN here)."""
    from selenium.webdriver.common.by import By

    served = serve(seeded, language="zh_CN")
    try:
        browser.get(f"{served.url}s/{PROJECT}/{WORKING}")
        assert browser.find_element(By.ID, "live").text == "实时:等待新记录"
        more = Transcript(WORKING)
        more.prompt("一条页面打开时写下的消息")
        with open_session_store(settings=seeded) as store:
            store.append(SessionKey(PROJECT, WORKING), more.entries)
            total = len(store.load(SessionKey(PROJECT, WORKING)) or [])
        shown = wait_for(lambda: browser.find_element(By.ID, "live").text == f"实时:{total} 条记录")
        assert shown, browser.find_element(By.ID, "live").text
    finally:
        browser.get("about:blank")
        served.stop()
        served.viewer.close()  # type: ignore[attr-defined]
