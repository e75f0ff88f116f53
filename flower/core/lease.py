"""One writer per session: the fleet's lease on a workspace's sessions.

A fleet worker takes the lease of a workspace's project key in its session store
before it wakes the workspace, renews it while the wake runs, and hands the wake
process the lease's fencing token in :data:`LEASE_VARIABLE`. A store that supports
leases (the SQL stores) then checks, in the same transaction as every append, that
the token is still the current one: a worker that lost its task (paused past a
takeover, partitioned, then back) gets :class:`LeaseLostError` and writes nothing.

The wake's writes outside the store (the run directory's ``lineage.json`` and
``manifest.json``) go through :func:`fenced`: the store open in the process checks
the token in a write transaction that stays open while the file is written (on
PostgreSQL under a share lock on the lease row, on SQLite under its write lock), so a
takeover waits for the write, or the write sees the takeover and is refused.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping
from typing import Protocol, TypeVar

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


def lease_token(environ: Mapping[str, str] | None = None) -> int | None:
    """The fencing token this process was given, or None outside the fleet."""
    raw = (os.environ if environ is None else environ).get(LEASE_VARIABLE, "").strip()
    if not raw:
        return None
    try:
        return int(raw)
    except ValueError:
        raise LeaseLostError("?", -1) from None


def lease_project(environ: Mapping[str, str] | None = None) -> str | None:
    """The project key this process's lease is on (None outside the fleet)."""
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


def register_fence(fence: Fence) -> None:
    with _fences_lock:
        _fences.append(fence)


def unregister_fence(fence: Fence) -> None:
    with _fences_lock:
        for n in range(len(_fences) - 1, -1, -1):
            if _fences[n] is fence:
                del _fences[n]
                break


def fenced(write: Callable[[], T]) -> T:
    """Run ``write`` (a write to the run directory) under this process's fleet lease:
    outside the fleet, or before a store holding the lease was opened, it just runs."""
    if lease_token() is None:
        return write()
    with _fences_lock:
        fence = _fences[-1] if _fences else None
    return write() if fence is None else fence.fenced(write)


__all__ = [
    "KEY_CHECK_PROJECT",
    "LEASE_VARIABLE",
    "PROJECT_VARIABLE",
    "Fence",
    "LeaseLostError",
    "fenced",
    "lease_project",
    "lease_token",
    "register_fence",
    "unregister_fence",
]
