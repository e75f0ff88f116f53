"""The store contract suite: the cases every session and lineage store must pass, and
the fleet's lease cases for a session store that holds leases.

A third-party backend runs it from its own tests::

    from flower.testing.contract import check_session_store

    def test_my_store_passes_the_contract(tmp_path):
        counter = iter(range(1_000_000))
        check_session_store(lambda: MyStore(tmp_path / f"s{next(counter)}"))

``factory()`` must return a fresh, empty store on every call. One case
(``concurrent_processes``) opens the same store again in two child processes: it
uses ``reopen(store)`` (a picklable zero-argument callable opening the same data) or,
failing that, ``store.url`` through :func:`flower.open_session_store`; without
either it is skipped with that reason. See docs/contract.md.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from flower.core.protocols import LineageStore, SessionStoreBase
from flower.testing.contract.fork import FORK_CASES
from flower.testing.contract.leases import LEASE_CASES
from flower.testing.contract.lineage import LINEAGE_CASES
from flower.testing.contract.runner import (
    Case,
    CaseResult,
    ContractFailure,
    ContractReport,
    ContractSkip,
    run_all,
    run_case,
    run_in_pytest,
    select,
)
from flower.testing.contract.sessions import SESSION_CASES as STORE_CASES

SESSION_CASES = [*STORE_CASES, *FORK_CASES, *LEASE_CASES]
"""Every session store case: the store's own, then :func:`flower.core.fork.fork` on it,
then the fleet's lease (skipped for a store that is no
:class:`~flower.core.lease.LeasingStore`)."""

__all__ = [
    "FORK_CASES",
    "LEASE_CASES",
    "LINEAGE_CASES",
    "SESSION_CASES",
    "Case",
    "CaseResult",
    "ContractFailure",
    "ContractReport",
    "ContractSkip",
    "check_lineage_store",
    "check_session_store",
    "lineage_case",
    "lineage_case_names",
    "run_case",
    "run_in_pytest",
    "session_case",
    "session_case_names",
]

SessionFactory = Callable[[], SessionStoreBase]
Reopen = Callable[[SessionStoreBase], Callable[[], SessionStoreBase]]


def check_session_store(
    factory: SessionFactory,
    only: Iterable[str] | str | None = None,
    *,
    reopen: Reopen | None = None,
) -> ContractReport:
    """Run the session store contract (or the cases named in ``only``).

    Returns the report when nothing failed; raises :class:`ContractFailure` (an
    ``AssertionError``) listing every failed case otherwise.
    """
    return run_all(SESSION_CASES, factory, only, reopen)


def check_lineage_store(
    factory: Callable[[], LineageStore], only: Iterable[str] | str | None = None
) -> ContractReport:
    """Run the lineage store contract; same reporting as :func:`check_session_store`."""
    return run_all(LINEAGE_CASES, factory, only, None)


def session_case_names() -> list[str]:
    return [case.name for case in SESSION_CASES]


def lineage_case_names() -> list[str]:
    return [case.name for case in LINEAGE_CASES]


def session_case(name: str) -> Case[SessionStoreBase]:
    return select(SESSION_CASES, name)[0]


def lineage_case(name: str) -> Case[LineageStore]:
    return select(LINEAGE_CASES, name)[0]
