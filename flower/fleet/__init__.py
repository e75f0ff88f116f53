"""``flower fleet``: many wakes on many hosts, on DBOS Transact (the ``fleet`` extra).

A layer above :mod:`flower.workflow` that the CLI calls; the workflow and the stores
never import DBOS, and nothing here is imported unless a fleet command runs. A fleet
task is one wake of one workspace (what ``flower "..." --yes`` runs there, or a user's
own ``Workflow`` named by ``module:function``); DBOS keeps the queue, the task's state
and its small result; the conversation stays in the workspace's session store.

Python use::

    from flower.fleet import Fleet
    fleet = Fleet.from_settings(settings)
    task_id = fleet.submit("/shared/work/a", "do this", task_id="nightly-a")
    fleet.status()

See docs/fleet.md.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from flower.fleet.places import FleetError, UnknownTaskError

if TYPE_CHECKING:
    from flower.core.config import Settings
    from flower.core.protocols import CallGate


def shared_gate(settings: Settings) -> CallGate | None:
    """The fleet's shared budget (:func:`flower.fleet.budget.gate_for`) for a run with
    ``settings``: when it is a fleet task's wake, or ``[tool.flower.fleet] share_limits``
    is on; else None (calls go at once, and the budget's SQLAlchemy is not imported)."""
    if not os.environ.get("FLOWER_FLEET_DATABASE") and not settings.fleet.share_limits:
        return None
    from flower.fleet.budget import gate_for

    return gate_for(settings)


__all__ = ["FleetError", "UnknownTaskError", "shared_gate"]
