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

from flower.fleet.places import FleetError, UnknownTaskError

__all__ = ["FleetError", "UnknownTaskError"]
