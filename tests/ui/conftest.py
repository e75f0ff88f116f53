"""Fixtures of the viewer's tests: a seeded store, the viewer served on loopback, and
a headless chromium (which must be there when CI=true or FLOWER_REQUIRE_BROWSER=1)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ui_helpers import (
    HOSTILE,
    PROJECT,
    WORKING,
    hostile_session,
    serve,
    settings_for,
    working_session,
)

from flower.core.config import Settings
from flower.core.records import SessionKey
from flower.stores.open import open_session_store

CHROMIUM = os.environ.get("FLOWER_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("FLOWER_CHROMEDRIVER", "/usr/bin/chromedriver")


def require_browser() -> bool:
    return os.environ.get("CI") == "true" or os.environ.get("FLOWER_REQUIRE_BROWSER") == "1"


@pytest.fixture
def seeded(tmp_path: Path) -> Settings:
    """A SQLite store with a working session and a hostile one."""
    settings = settings_for(f"sqlite:///{tmp_path / 'runs' / 'sessions.db'}", tmp_path / "runs")
    with open_session_store(settings=settings) as store:
        store.append(SessionKey(PROJECT, WORKING), working_session(WORKING))
        store.append(SessionKey(PROJECT, HOSTILE), hostile_session(HOSTILE))
    return settings


@pytest.fixture
def viewer_url(seeded: Settings) -> Iterator[str]:
    served = serve(seeded)
    try:
        yield served.url
    finally:
        served.stop()
        served.viewer.close()  # type: ignore[attr-defined]


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """Debian's headless chromium through its chromedriver (no browser download)."""
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not shutil.which(p)]
    webdriver = None
    try:
        from selenium import webdriver
    except ImportError:
        missing.append("selenium (pip install -e '.[dev]')")
    if missing:
        why = f"no browser for the viewer's tests: {', '.join(missing)} missing"
        if require_browser():
            pytest.fail(f"{why} (apt-get install chromium chromium-driver)")
        pytest.skip(why)
    assert webdriver is not None
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(flag)
    options.add_argument("--window-size=1280,900")
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(20)
    try:
        yield driver
    finally:
        driver.quit()
