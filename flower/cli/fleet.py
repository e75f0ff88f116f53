"""``flower fleet``: many wakes on many hosts (the ``fleet`` extra, on DBOS Transact).

Imported only when a fleet command runs; DBOS is imported inside the commands, and
without the extra they say how to install it. See docs/fleet.md.
"""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, Annotated

import typer

from flower.cli.context import get_settings
from flower.cli.lazy import command_help
from flower.core.i18n import N_, _

if TYPE_CHECKING:
    from flower.fleet.places import FleetPlace
    from flower.fleet.tasks import Fleet

app = typer.Typer(
    name="fleet",
    help=N_("Run wakes of many workspaces on worker processes, on one host or many."),
    rich_markup_mode=None,
    add_completion=False,
    no_args_is_help=True,
)


def _place(ctx: typer.Context) -> FleetPlace:
    from flower.fleet.places import fleet_place

    return fleet_place(get_settings(ctx))


def _fleet(ctx: typer.Context) -> Fleet:
    place = _place(ctx)
    from flower.fleet.tasks import Fleet

    return Fleet(place)


@app.command("worker")
@command_help(
    N_(
        "Run tasks from the fleet's queue until Ctrl-C.\n"
        "\n"
        "Start one or more on every host. Ctrl-C stops the running wakes (they save their\n"
        "place) and hands them to the other workers at once."
    )
)
def worker(
    ctx: typer.Context,
    executor_id: Annotated[
        str | None,
        typer.Option(
            "--id",
            metavar="ID",
            help=N_("This worker's id in the fleet (default: HOST-PID; unique per process)."),
        ),
    ] = None,
) -> None:
    place = _place(ctx)
    from flower.fleet.worker import Worker, default_executor_id

    def say(line: str) -> None:
        print(line, flush=True)

    raise typer.Exit(Worker(place, executor_id or default_executor_id(), say).run())


@app.command("submit")
@command_help(
    N_(
        "Queue one wake of a workspace; prints the task id.\n"
        "\n"
        "The workspace must be under the fleet's workspaces root. The same --id twice is\n"
        "one task."
    )
)
def submit(
    ctx: typer.Context,
    workspace: Annotated[str, typer.Argument(metavar="WORKSPACE", help=N_("The workspace."))],
    said: Annotated[
        list[str] | None,
        typer.Argument(metavar="TEXT", help=N_('What to say (as flower "..." there).')),
    ] = None,
    task_id: Annotated[
        str | None,
        typer.Option("--id", metavar="ID", help=N_("The task id (default: a new one).")),
    ] = None,
    workflow: Annotated[
        str | None,
        typer.Option(
            "--workflow",
            metavar="MODULE:FUNCTION",
            help=N_("Run your own Workflow (a function returning one) instead of the built-in."),
        ),
    ] = None,
    priority: Annotated[
        int | None,
        typer.Option(
            "--priority",
            metavar="N",
            help=N_("Queue order: lower goes first (1 is first; default 1000); ties by age."),
        ),
    ] = None,
) -> None:
    text = " ".join(said or []).strip() or None
    with _fleet(ctx) as fleet:
        found, existed = fleet.submit(
            workspace, text, task_id=task_id, workflow=workflow, priority=priority
        )
    if existed:
        print(_("{id} (submitted before: this is that task)").format(id=found), file=sys.stderr)
    print(found)


@app.command("status")
@command_help(N_("Every task: queued, running on a host, done, failed (why) or cancelled."))
def status(
    ctx: typer.Context,
    json_out: Annotated[bool, typer.Option("--json", help=N_("Machine-readable output."))] = False,
) -> None:
    from flower.fleet.budget import fleet_report
    from flower.fleet.view import budget_said, task_said, with_progress

    with _fleet(ctx) as fleet:
        report = fleet_report(fleet.place.database, fleet.status())
    with_progress(report)
    if json_out:
        from flower.cli.output import print_json

        print_json(report)
        return
    rows = report["tasks"]
    if not rows:
        print(_("no fleet tasks"))
    now = time.time()
    for line in [*(task_said(row, now) for row in rows), *budget_said(report)]:
        print(line)


@app.command("logs")
@command_help(N_("A task's banner and step lines, as its wake printed them."))
def logs(
    ctx: typer.Context,
    task_id: Annotated[str, typer.Argument(metavar="ID", help=N_("The task id."))],
) -> None:
    from flower.fleet.logs import log_of

    with _fleet(ctx) as fleet:
        log = log_of(fleet, task_id)
    if log is None:
        print(_("task {id} has not run yet: nothing logged").format(id=task_id), file=sys.stderr)
        return
    sys.stdout.write(log.read_text(encoding="utf-8", errors="replace"))


@app.command("cancel")
@command_help(N_("Cancel a task: a queued one never runs, a running wake is stopped."))
def cancel(
    ctx: typer.Context,
    task_id: Annotated[str, typer.Argument(metavar="ID", help=N_("The task id."))],
) -> None:
    with _fleet(ctx) as fleet:
        fleet.cancel(task_id)
    print(_("{id} cancelled").format(id=task_id))


@app.command("resume")
@command_help(N_("Queue a cancelled task again; its wake carries on where it stopped."))
def resume(
    ctx: typer.Context,
    task_id: Annotated[str, typer.Argument(metavar="ID", help=N_("The task id."))],
) -> None:
    with _fleet(ctx) as fleet:
        fleet.resume(task_id)
    print(_("{id} queued again").format(id=task_id))
