"""The fleet page of ``flower ui`` (issue 31): the tasks by state and the shared budget,
read through flower.fleet's API; its JSON, its live stream, and what it says when there
is no fleet to show. Real DBOS on a SQLite fleet database; no worker runs here (the
fleet tests drive the page's JSON over real workers)."""

from __future__ import annotations

import json
import sqlite3
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient
from ui_helpers import serve, settings_for

from flower.core.config import FleetConfig, FleetLimits, Settings
from flower.ui.app import Viewer, build_app

pytest.importorskip("dbos")  # the fleet extra: installed with the dev extras


def fleet_settings(tmp_path: Path, **fleet: object) -> Settings:
    settings = settings_for(f"sqlite:///{tmp_path / 'runs' / 'sessions.db'}", tmp_path / "runs")
    return Settings(
        run_dir=settings.run_dir,
        sessions=settings.sessions,
        fleet=FleetConfig(**fleet),  # type: ignore[arg-type]
    )


def seed_fleet(tmp_path: Path, settings: Settings) -> None:
    """Three tasks (t1 and t2 queued, t3 cancelled), a budget of 10 requests a minute,
    and one call of t1 settled: 1,200 input and 300 output tokens, $0.25."""
    from flower.fleet.budget import Budget
    from flower.fleet.places import FleetPlace
    from flower.fleet.tasks import Fleet

    place = FleetPlace.from_settings(settings, cwd=tmp_path)
    with Fleet(place) as fleet:
        for name in ("t1", "t2", "t3"):
            (tmp_path / name).mkdir()
            fleet.submit(tmp_path / name, "hi", task_id=name)
        fleet.cancel("t3")
    budget = Budget(place.database, "t1")
    budget.set_limits(FleetLimits(requests_per_minute=10, output_tokens_per_minute=5000))
    ticket = budget.reserve(1000, 100).ticket
    assert ticket is not None
    budget.settle(ticket, {"input_tokens": 1200, "output_tokens": 300}, {}, 0.25)
    budget.close()


def client_for(tmp_path: Path, settings: Settings, language: str = "en") -> TestClient:
    viewer = Viewer(settings, lambda: None, settings.sessions_url(), workspace=tmp_path)
    return TestClient(build_app(viewer, language=language))


@pytest.fixture
def fleet_here(tmp_path: Path) -> Settings:
    settings = fleet_settings(tmp_path)
    seed_fleet(tmp_path, settings)
    return settings


def test_the_json_holds_the_tasks_and_the_budget(tmp_path: Path, fleet_here: Settings) -> None:
    answer = client_for(tmp_path, fleet_here).get("/fleet.json")
    assert answer.status_code == 200
    report = answer.json()
    states = {row["id"]: row["state"] for row in report["tasks"]}
    assert states == {"t1": "queued", "t2": "queued", "t3": "cancelled"}
    t1 = next(row for row in report["tasks"] if row["id"] == "t1")
    assert (t1["requests"], t1["input_tokens"], t1["output_tokens"]) == (1, 1200, 300)
    assert t1["cost_so_far_usd"] == 0.25
    assert t1["workspace"] == str(tmp_path / "t1")
    assert report["totals"]["requests"] == 1 and report["totals"]["tasks"] == 3
    budget = report["budget"]
    assert budget["effective"] == {"requests": 10, "input_tokens": None, "output_tokens": 5000}
    assert budget["used_last_minute"]["requests"] == 1
    # the last minute, every 5 s: the newest point holds the call, the oldest does not
    points = report["per_minute"]
    assert len(points) == 13
    assert points[-1]["requests"] == 1 and points[-1]["output_tokens"] == 300
    assert points[0]["requests"] == 0


def test_the_page_shows_tasks_by_state_and_the_budget_chart(
    tmp_path: Path, fleet_here: Settings
) -> None:
    page = client_for(tmp_path, fleet_here).get("/fleet")
    assert page.status_code == 200
    html = page.text
    assert html.index('data-state="queued"') < html.index('data-state="cancelled"')
    assert 'data-task="t1"' in html and 'data-task="t3"' in html
    assert f'href="/run?workspace={str(tmp_path / "t1").replace("/", "%2F")}"' in html
    assert 'class="budget-chart"' in html
    assert "requests per minute · 1 of 10" in html
    assert "output tokens per minute · 300 of 5,000" in html
    assert "input tokens per minute · 1,200, no limit" in html
    assert "1 requests, 1,200 input and 300 output tokens" in html
    assert 'data-events="/fleet/events"' in html


def test_the_page_speaks_chinese(tmp_path: Path, fleet_here: Settings) -> None:
    html = client_for(tmp_path, fleet_here, "zh_CN").get("/fleet").text
    assert '<html lang="zh-CN">' in html
    assert "<h3>排队中 <small>(2)</small></h3>" in html  # the states, the chart: its words
    assert "每分钟请求 · 1 / 10" in html and "requests per minute" not in html
    assert "1 次请求,输入 1,200 个、输出 300 个 token" in html


def test_a_task_workspace_opens_its_workflow_and_no_other(
    tmp_path: Path, fleet_here: Settings
) -> None:
    client = client_for(tmp_path, fleet_here)
    found = client.get("/run", params={"workspace": str(tmp_path / "t1")})
    assert found.status_code == 200
    assert f"workspace <code>{tmp_path / 't1'}</code>" in found.text
    other = client.get("/run", params={"workspace": "/etc"})
    assert other.status_code == 404
    assert "no fleet task works in /etc" in other.text


def test_the_live_stream_sends_the_tasks_and_a_new_one(
    tmp_path: Path, fleet_here: Settings
) -> None:
    from flower.fleet.places import FleetPlace
    from flower.fleet.tasks import Fleet

    served = serve(fleet_here)
    served.viewer.workspace = tmp_path  # type: ignore[attr-defined]
    try:
        with urllib.request.urlopen(f"{served.url}fleet/events", timeout=20) as stream:
            assert stream.headers["Content-Type"].startswith("text/event-stream")
            assert stream.readline().startswith(b"retry:")
            events = _events(stream)
            first = next(events)
            assert first["status"] == 200 and 'data-task="t2"' in first["tasks"]
            assert 'data-task="t4"' not in first["tasks"]
            assert "budget-chart" in first["chart"]
            (tmp_path / "t4").mkdir()
            with Fleet(FleetPlace.from_settings(fleet_here, cwd=tmp_path)) as fleet:
                fleet.submit(tmp_path / "t4", "more", task_id="t4")
            assert any(
                'data-task="t4"' in event["tasks"]
                for _, event in zip(range(50), events, strict=False)
            )
    finally:
        served.stop()
        served.viewer.close()  # type: ignore[attr-defined]


def _events(stream: object) -> object:
    """The ``fleet`` events of an open stream, decoded (idle lines skipped)."""
    name = None
    for raw in stream:  # type: ignore[attr-defined]
        line = raw.decode().rstrip("\n")
        if line.startswith("event: "):
            name = line.removeprefix("event: ")
        elif line.startswith("data: ") and name == "fleet":
            yield json.loads(line.removeprefix("data: "))


def test_no_fleet_database_is_said_not_created(tmp_path: Path) -> None:
    settings = fleet_settings(tmp_path)
    client = client_for(tmp_path, settings)
    page = client.get("/fleet")
    assert page.status_code == 200
    database = tmp_path / "runs" / "fleet.sqlite"
    assert f"no fleet here yet: {database} does not exist" in page.text
    answer = client.get("/fleet.json")
    assert answer.status_code == 200 and answer.json()["error"].startswith("no fleet here yet")
    assert not (tmp_path / "runs").exists()  # nothing made


def test_without_the_fleet_extra_the_page_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "dbos", None)  # as if not installed
    page = client_for(tmp_path, fleet_settings(tmp_path)).get("/fleet")
    assert page.status_code == 200
    assert "the fleet page needs the fleet extra: pip install &#39;flower[fleet]&#39;" in page.text


def test_a_fleet_database_that_cannot_be_read_is_a_503_that_says_so(tmp_path: Path) -> None:
    settings = fleet_settings(
        tmp_path, database="postgresql+psycopg://nobody:secret@127.0.0.1:1/fleet"
    )
    client = client_for(tmp_path, settings)
    page = client.get("/fleet")
    assert page.status_code == 503
    assert "the fleet&#39;s database postgresql+psycopg://nobody:***@127.0.0.1:1/fleet" in page.text
    assert "secret" not in page.text
    answer = client.get("/fleet.json")
    assert answer.status_code == 503 and "cannot be read" in answer.json()["error"]


@pytest.mark.slow  # a few seconds: a real browser
def test_in_the_browser_the_page_shows_the_fleet_and_follows_it(
    browser: Any, tmp_path: Path, fleet_here: Settings
) -> None:
    from selenium.webdriver.common.by import By
    from test_browser import wait_for

    from flower.fleet.places import FleetPlace
    from flower.fleet.tasks import Fleet

    served = serve(fleet_here)
    served.viewer.workspace = tmp_path  # type: ignore[attr-defined]
    try:
        browser.get(served.url)
        browser.find_element(By.LINK_TEXT, "fleet").click()
        wait_for(lambda: browser.current_url.endswith("/fleet"))
        browser.execute_script("window.__same_page = true")

        def seen() -> dict[str, Any]:
            """What the page shows now, read at once (the live stream replaces its parts)."""
            return browser.execute_script(  # type: ignore[no-any-return]
                """
                const rows = [...document.querySelectorAll(
                  'section.fleet-state[data-state="queued"] tr.task-row')];
                const panels = [...document.querySelectorAll('#budget-chart g.budget-panel')];
                const use = panels.length ? panels[0].querySelector('polyline.use') : null;
                return {
                  queued: rows.map(r => r.dataset.task),
                  cost: rows.length ? rows[0].querySelector('td.cost').textContent : '',
                  kinds: panels.map(p => p.dataset.kind),
                  width: use ? use.getBBox().width : 0,
                  title: panels.length ? panels[0].textContent : '',
                };
                """
            )

        shown = seen()
        assert shown["queued"] == ["t1", "t2"]
        assert "1 request" in shown["cost"]
        assert shown["kinds"] == ["requests", "input_tokens", "output_tokens"]
        assert shown["width"] > 300  # drawn across the last minute
        assert "1 of 10" in shown["title"]
        # a task submitted while the page is open appears in it, without a reload
        (tmp_path / "t4").mkdir()
        with Fleet(FleetPlace.from_settings(fleet_here, cwd=tmp_path)) as fleet:
            fleet.submit(tmp_path / "t4", "more", task_id="t4")
        assert wait_for(
            lambda: browser.find_elements(By.CSS_SELECTOR, 'tr.task-row[data-task="t4"]'), 20
        ), "the new task never appeared"
        assert browser.execute_script("return window.__same_page") is True
        assert browser.find_element(By.ID, "live").text.startswith("live: updated")
        # its workspace link opens its workflow
        browser.execute_script("document.querySelector('tr[data-task=\"t1\"] a.workflow').click()")
        wait_for(lambda: "/run?workspace=" in browser.current_url)
        assert f"workspace {tmp_path / 't1'}" in browser.find_element(By.ID, "run").text
    finally:
        browser.get("about:blank")  # closes the event stream before the server stops
        served.stop()
        served.viewer.close()  # type: ignore[attr-defined]


@pytest.fixture
def empty_postgres() -> Iterator[str]:
    """A new Postgres database with no table in it."""
    import uuid

    import sqlalchemy as sa

    from flower.testing.postgres import server_url

    base = sa.make_url(server_url())
    admin = sa.create_engine(base, isolation_level="AUTOCOMMIT")
    name = f"fleet_empty_{uuid.uuid4().hex[:10]}"
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    yield base.set(database=name).render_as_string(hide_password=False)
    with admin.connect() as conn:
        conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


def test_a_database_without_fleet_tables_is_no_fleet_yet(tmp_path: Path) -> None:
    database = tmp_path / "empty.sqlite"
    sqlite3.connect(database).close()
    client = client_for(tmp_path, fleet_settings(tmp_path, database=f"sqlite:///{database}"))
    answer = client.get("/fleet.json")
    assert answer.status_code == 200
    assert "holds no fleet tasks" in answer.json()["error"]


def test_a_postgres_database_without_fleet_tables_is_no_fleet_yet(
    tmp_path: Path, empty_postgres: str
) -> None:
    client = client_for(tmp_path, fleet_settings(tmp_path, database=empty_postgres))
    answer = client.get("/fleet.json")
    assert answer.status_code == 200
    assert "holds no fleet tasks" in answer.json()["error"]
