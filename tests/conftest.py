from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from flower.core.i18n import language, set_language
from flower.testing.postgres import PostgresUnavailable, require_postgres, temporary_schema
from flower.testing.signals import let_children_hear_ctrl_c

# Files the tests write themselves (fixtures, copied transcripts) are private like the
# ones flower writes, so flower's warnings about readable files mean something here.
os.umask(0o077)
# Tests press Ctrl-C on the flowers they start, even when the suite runs as a
# background job of a script.
let_children_hear_ctrl_c()


@pytest.fixture(scope="session", autouse=True)
def private_cache_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Whatever a test starts that keeps a cache by the XDG convention keeps it in this
    run's temporary folder, not in the user's ~/.cache (flower itself caches nothing)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg-cache")))
        yield


TEST_LANGUAGE = "zh_CN"
"""The language the suite's exact-text tests were written in (the seed page's); the
English ones ask for ``en`` themselves (tests/i18n), whatever LANG the suite runs under."""
# before any test module is imported: the prompts they translate at import
# (_(prompts.HANDOFF_PROMPT)...) and the agents they build are in the language active then
os.environ["FLOWER_LANG"] = TEST_LANGUAGE
set_language(TEST_LANGUAGE)


@pytest.fixture(scope="session", autouse=True)
def seed_language() -> Iterator[None]:
    """Speak the seed page's Chinese here and in every flower a test starts."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("FLOWER_LANG", TEST_LANGUAGE)
        set_language(TEST_LANGUAGE)
        yield


@pytest.fixture(autouse=True)
def seed_language_again() -> None:
    """Each test starts in the seed page's language, whichever one a test before it left
    active (a command run in-process speaks the language its settings choose)."""
    set_language(TEST_LANGUAGE)


@pytest.fixture
def english(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Speak English in the test and in every flower it starts: for the tests whose
    expected text is flower's English output (``pytestmark = pytest.mark.usefixtures(
    "english")``); the seed page's Chinese stays pinned everywhere else."""
    monkeypatch.setenv("FLOWER_LANG", "en")
    with language("en"):
        yield


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A SQLAlchemy URL to a fresh, private schema on the test PostgreSQL server."""
    try:
        with temporary_schema() as url:
            yield url
    except PostgresUnavailable as exc:
        if require_postgres():
            pytest.fail(f"FLOWER_REQUIRE_POSTGRES=1 but {exc}")
        pytest.skip(str(exc))


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run the test with the working directory in a fresh temporary folder."""
    monkeypatch.chdir(tmp_path)
    for var in list(os.environ):
        if var.startswith("FLOWER_") and var not in (
            "FLOWER_REQUIRE_POSTGRES",
            "FLOWER_TEST_PG",
            "FLOWER_LANG",
        ):
            monkeypatch.delenv(var)
    return tmp_path
