"""Every built-in backend against the store contract, one test per (backend, case)."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from flower.core.config import LineageConfig, SessionsConfig, Settings
from flower.core.protocols import LineageStore, SessionStoreBase
from flower.stores.open import open_lineage_store, open_session_store
from flower.testing.contract import (
    LEASE_CASES,
    LINEAGE_CASES,
    SESSION_CASES,
    Case,
    check_lineage_store,
    check_session_store,
    run_in_pytest,
)
from flower.testing.contract.runner import open_session_url

SESSION_BACKENDS = ["jsonfs", "sqlite", "postgres"]
LEASING_BACKENDS = {"sqlite", "postgres"}  # the fleet's lease is the SQL store's
SESSION_PAIRS = [
    pytest.param(backend, case, id=f"{case}-{backend}")
    for case in SESSION_CASES
    for backend in SESSION_BACKENDS
    if case not in LEASE_CASES or backend in LEASING_BACKENDS
]
LINEAGE_BACKENDS = ["json", "sqlite"]


class UrlFactory:
    """Fresh stores from URLs, remembering each store's URL so it can be reopened."""

    def __init__(self, make_url: Callable[[int], str], settings: Settings) -> None:
        self.make_url = make_url
        self.settings = settings
        self.counter = itertools.count()
        self.urls: dict[int, str] = {}

    def __call__(self) -> SessionStoreBase:
        url = self.make_url(next(self.counter))
        store = open_session_store(url, settings=self.settings)
        self.urls[id(store)] = url
        return store

    def reopen(self, store: SessionStoreBase) -> Callable[[], SessionStoreBase]:
        return functools.partial(open_session_url, self.urls[id(store)])


@pytest.fixture
def session_factory(request: pytest.FixtureRequest, tmp_path: Path) -> UrlFactory:
    backend = request.param
    if backend == "jsonfs":
        return UrlFactory(lambda n: f"jsonfs://{tmp_path}/t{n}", Settings())
    if backend == "sqlite":
        return UrlFactory(lambda n: f"sqlite:///{tmp_path}/s{n}.db", Settings())
    # One private schema per test; every case opens the store once, so it starts empty.
    pg_url = request.getfixturevalue("pg_url")
    settings = Settings(sessions=SessionsConfig(backend="postgres", auto_migrate=True))
    return UrlFactory(lambda n: pg_url, settings)


@pytest.mark.parametrize(("session_factory", "case"), SESSION_PAIRS, indirect=["session_factory"])
def test_session_store_contract(case: Case[SessionStoreBase], session_factory: UrlFactory) -> None:
    run_in_pytest(case, session_factory, session_factory.reopen)


@pytest.fixture
def lineage_factory(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], LineageStore]:
    backend = request.param
    counter = itertools.count()

    def make() -> LineageStore:
        n = next(counter)
        if backend == "json":
            return open_lineage_store(f"file://{tmp_path}/l{n}/lineage.json", settings=Settings())
        settings = Settings(lineage=LineageConfig(backend=backend, workspace_id=None))
        return open_lineage_store(f"sqlite:///{tmp_path}/l{n}.db", settings=settings)

    return make


@pytest.mark.parametrize("lineage_factory", LINEAGE_BACKENDS, indirect=True)
@pytest.mark.parametrize("case", LINEAGE_CASES, ids=str)
def test_lineage_store_contract(
    case: Case[LineageStore], lineage_factory: Callable[[], LineageStore]
) -> None:
    run_in_pytest(case, lineage_factory)


def test_check_session_store_in_one_call(tmp_path: Path) -> None:
    """The one-call form a third-party backend uses, with a selection of cases."""
    factory = UrlFactory(lambda n: f"jsonfs://{tmp_path}/t{n}", Settings())
    report = check_session_store(factory, only=["append_then_load", "delete_cascades"])
    assert report.passed == ["append_then_load", "delete_cascades"]
    assert report.failed == [] and report.skipped == []


def test_a_store_without_leases_has_the_lease_cases_skipped_saying_why(tmp_path: Path) -> None:
    factory = UrlFactory(lambda n: f"jsonfs://{tmp_path}/t{n}", Settings())
    report = check_session_store(factory, only=[case.name for case in LEASE_CASES])
    assert report.passed == [] and report.failed == []
    assert report.skipped == [case.name for case in LEASE_CASES]
    assert all("the fleet does not run on this store" in r.detail for r in report.results)


def test_check_lineage_store_in_one_call(tmp_path: Path) -> None:
    counter = itertools.count()

    def factory() -> Any:
        return open_lineage_store(
            f"file://{tmp_path}/{next(counter)}/lineage.json", settings=Settings()
        )

    report = check_lineage_store(factory)
    assert len(report.passed) == len(LINEAGE_CASES)
