"""One writer per session: the fleet's lease on a workspace's sessions.

A fleet worker takes the lease of a workspace's project key in its session store
before it wakes the workspace, renews it while the wake runs, and hands the wake
process the lease's fencing token in :data:`LEASE_VARIABLE`. A store that supports
leases (the SQL stores) then checks, in the same transaction as every append, that
the token is still the current one: a worker that lost its task (paused past a
takeover, partitioned, then back) gets :class:`LeaseLostError` and writes nothing.

The wake's writes outside the store (the run directory's ``lineage.json``,
``manifest.json`` and ``said.json``, and a lineage store's) go through :func:`fenced`:
the store that holds the lease checks the token in a write transaction that stays open
while the file is written (on PostgreSQL under a share lock on the lease row, on SQLite
under its write lock), so a takeover waits for the write, or the write sees the
takeover and is refused. A fleet wake's lease comes with that store
(:func:`holding`), so its first write is checked like its last.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Protocol, TypeVar, runtime_checkable

from flower.core.errors import FlowerError
from flower.core.i18n import _

T = TypeVar("T")

LEASE_VARIABLE = "FLOWER_FLEET_LEASE"
"""The fencing token a fleet worker gives the wake it starts (a decimal integer)."""
PROJECT_VARIABLE = "FLOWER_FLEET_PROJECT"
"""The project key whose lease that token is (the wake's workspace)."""
KEY_CHECK_PROJECT = "flower-encryption"
"""The encryption key check's project (``flower.stores.encrypt.CHECK_KEY``): a sealed
marker per key id, no conversation, written by any process that holds the key. Its
appends are not fenced (no lease is ever taken on it)."""


class LeaseLostError(FlowerError):
    """An append carried a fencing token that is no longer the session's current one:
    another worker took the task over. Nothing was written."""

    exit_code = 75

    def __init__(self, project_key: str, token: int) -> None:
        super().__init__(
            _(
                "this process lost the fleet lease on {project} (token {token}): another "
                "worker took the task over, so nothing was written; the task goes on there"
            ).format(project=project_key, token=token)
        )
        self.project_key = project_key
        self.token = token


@dataclass
class _Held:
    """The lease of the wake running in this context: its token, its project, and the
    stores opened in it that hold the lease (the fences of its run-directory writes)."""

    token: int
    project: str
    fences: list[Fence] = field(default_factory=list)


_HELD: ContextVar[_Held | None] = ContextVar("flower_fleet_lease", default=None)


class LeaseStore(Protocol):
    """A store that holds fleet leases (the SQL session store): what checks a token."""

    def under_lease(self, project_key: str, token: int, write: Callable[[], T]) -> T:
        """Run ``write`` in a write transaction that first checks that ``token`` is still
        ``project_key``'s lease (and holds it until ``write`` is done);
        :class:`LeaseLostError` (``write`` not run) when another worker took it over."""
        ...


@runtime_checkable
class LeasingStore(LeaseStore, Protocol):
    """A store a fleet worker takes, renews and releases leases in (the SQL session
    store); a worker refuses a session store that is not one.
    :mod:`flower.testing.contract` has cases for every method (``LEASE_CASES``)."""

    def take_lease(
        self, project_key: str, holder: str, ttl_s: float
    ) -> tuple[int, str | None] | float:
        """Take ``project_key``'s lease for ``holder`` for ``ttl_s`` seconds: the new
        fencing token and the previous holder (None if none, or ``holder`` itself), or,
        while another live holder has it, the seconds until its lease expires."""
        ...

    def renew_lease(self, project_key: str, token: int, ttl_s: float) -> bool:
        """Extend the lease ``token`` holds; False when it no longer holds it."""
        ...

    def release_lease(self, project_key: str, token: int) -> None:
        """Let the lease ``token`` holds go at once."""
        ...


@dataclass(frozen=True)
class _LeaseFence:
    """The fence of a wake's lease from its first write: ``store`` checks ``token``."""

    store: LeaseStore
    project: str
    token: int

    def fenced(self, write: Callable[[], T]) -> T:
        return self.store.under_lease(self.project, self.token, write)


@contextlib.contextmanager
def holding(token: int, project: str, store: LeaseStore) -> Iterator[None]:
    """The fleet lease of the wake run inside (in this thread, and in the tasks it
    starts): ``token`` on ``project``, held in ``store`` (the store the worker took it
    in). A fleet worker runs several wakes in its own process, so their leases are not
    the process's environment but each wake's own: stores opened inside append with
    ``token``, and every write of the wake to its run directory is fenced, from the
    first one on (``store`` checks it until a store opened inside does)."""
    reset = _HELD.set(_Held(token, project, [_LeaseFence(store, project, token)]))
    try:
        yield
    finally:
        _HELD.reset(reset)


def lease_token(environ: Mapping[str, str] | None = None) -> int | None:
    """The fencing token of this wake (:func:`holding`), else the one this process was
    given, or None outside the fleet."""
    held = _HELD.get()
    if held is not None and environ is None:
        return held.token
    raw = (os.environ if environ is None else environ).get(LEASE_VARIABLE, "").strip()
    if not raw:
        return None
    try:
        return int(raw)
    except ValueError:
        raise LeaseLostError("?", -1) from None


def lease_project(environ: Mapping[str, str] | None = None) -> str | None:
    """The project key this wake's (or else this process's) lease is on (None outside
    the fleet)."""
    held = _HELD.get()
    if held is not None and environ is None:
        return held.project
    raw = (os.environ if environ is None else environ).get(PROJECT_VARIABLE, "")
    return raw or None


class Fence(Protocol):
    """A store that holds this process's lease (the SQL session store given a token)."""

    def fenced(self, write: Callable[[], T]) -> T:
        """Run ``write`` while the lease is checked and held; :class:`LeaseLostError`
        (``write`` not run) when another worker took it over."""
        ...


_fences: list[Fence] = []
_fences_lock = threading.Lock()


def _fence_list() -> list[Fence]:
    """This wake's fences (:func:`holding`), else the process's."""
    held = _HELD.get()
    return held.fences if held is not None else _fences


def register_fence(fence: Fence) -> None:
    with _fences_lock:
        _fence_list().append(fence)


def unregister_fence(fence: Fence) -> None:
    with _fences_lock:
        for fences in (_fence_list(), _fences):
            for n in range(len(fences) - 1, -1, -1):
                if fences[n] is fence:
                    del fences[n]
                    return


def fenced(write: Callable[[], T]) -> T:
    """Run ``write`` (a write to the run directory) under this wake's fleet lease:
    outside the fleet it just runs. A fleet wake (:func:`holding`) always has a fence;
    a process given its lease in the environment has one once its store is open."""
    if lease_token() is None:
        return write()
    with _fences_lock:
        fences = _fence_list()
        fence = fences[-1] if fences else None
    return write() if fence is None else fence.fenced(write)


__all__ = [
    "KEY_CHECK_PROJECT",
    "LEASE_VARIABLE",
    "PROJECT_VARIABLE",
    "Fence",
    "LeaseLostError",
    "LeaseStore",
    "LeasingStore",
    "fenced",
    "holding",
    "lease_project",
    "lease_token",
    "register_fence",
    "unregister_fence",
]
