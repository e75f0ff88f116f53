"""The store contract, through the encryption wrapper, on every built-in backend."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable
from pathlib import Path

import pytest

from flower.core.config import SessionsConfig, Settings
from flower.core.lease import LeasingStore
from flower.core.protocols import SessionStoreBase
from flower.stores.encrypt import EncryptedSessionStore
from flower.stores.keyring import generate_key, parse_keys
from flower.stores.open import open_encrypted_url, open_session_store
from flower.testing.contract import LEASE_CASES, SESSION_CASES, Case, run_in_pytest

BACKENDS = ["jsonfs", "sqlite", "postgres"]
# the fleet takes its lease in the raw store, never through the encryption wrapper
CASES = [case for case in SESSION_CASES if case not in LEASE_CASES]


class EncryptedFactory:
    """Fresh encrypted stores over one backend, each reopenable in another process."""

    def __init__(self, make_url: Callable[[int], str], settings: Settings) -> None:
        self.make_url = make_url
        self.settings = settings
        self.key = generate_key()
        self.counter = itertools.count()
        self.urls: dict[int, str] = {}

    def __call__(self) -> SessionStoreBase:
        url = self.make_url(next(self.counter))
        inner = open_session_store(url, settings=self.settings)
        store = EncryptedSessionStore(inner, parse_keys(self.key, "test key"))
        self.urls[id(store)] = url
        return store

    def reopen(self, store: SessionStoreBase) -> Callable[[], SessionStoreBase]:
        return functools.partial(open_encrypted_url, self.urls[id(store)], self.key)


@pytest.fixture
def encrypted_factory(request: pytest.FixtureRequest, tmp_path: Path) -> EncryptedFactory:
    backend = request.param
    if backend == "jsonfs":
        return EncryptedFactory(lambda n: f"jsonfs://{tmp_path}/t{n}", Settings())
    if backend == "sqlite":
        return EncryptedFactory(lambda n: f"sqlite:///{tmp_path}/s{n}.db", Settings())
    pg_url = request.getfixturevalue("pg_url")
    settings = Settings(sessions=SessionsConfig(backend="postgres", auto_migrate=True))
    return EncryptedFactory(lambda n: pg_url, settings)


@pytest.mark.parametrize("encrypted_factory", BACKENDS, indirect=True)
@pytest.mark.parametrize("case", CASES, ids=str)
def test_contract_through_encryption(
    case: Case[SessionStoreBase], encrypted_factory: EncryptedFactory
) -> None:
    run_in_pytest(case, encrypted_factory, encrypted_factory.reopen)


@pytest.mark.parametrize("encrypted_factory", ["sqlite"], indirect=True)
def test_the_encryption_wrapper_holds_no_lease(encrypted_factory: EncryptedFactory) -> None:
    store = encrypted_factory()
    try:
        assert not isinstance(store, LeasingStore)
    finally:
        store.close()
