"""One writer per session: the fleet's lease on a workspace's sessions.

A fleet worker takes the lease of a workspace's project key in its session store
before it wakes the workspace, renews it while the wake runs, and hands the wake
process the lease's fencing token in :data:`LEASE_VARIABLE`. A store that supports
leases (the SQL stores) then checks, in the same transaction as every append, that
the token is still the current one: a worker that lost its task (paused past a
takeover, partitioned, then back) gets :class:`LeaseLostError` and writes nothing.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from flower.core.errors import FlowerError
from flower.core.i18n import _

LEASE_VARIABLE = "FLOWER_FLEET_LEASE"
"""The fencing token a fleet worker gives the wake it starts (a decimal integer)."""


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


__all__ = ["LEASE_VARIABLE", "LeaseLostError", "lease_token"]
