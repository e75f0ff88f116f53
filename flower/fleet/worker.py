"""``flower fleet worker``: runs queued tasks, heartbeats, and takes over dead workers.

Each task's wake runs in the worker's process (flower/fleet/wake.py), on a DBOS thread
and an event loop of its own, each flower step a DBOS step, holding the workspace's
session lease: the worker takes it before the wake starts, renews it with every
heartbeat and after every step (before DBOS keeps the step), and the wake's store checks
its fencing token on every append. A worker that finds it was taken over (it was paused
or cut off longer than ``takeover_after``) stops: its wakes' writes are refused by then
anyway, and no step of theirs is kept.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import msgspec

from flower.core.errors import FlowerError, SchemaOutOfDateError
from flower.core.i18n import N_, SOURCE_LANGUAGE, _, speaking
from flower.core.keys import project_key
from flower.core.lease import LeasingStore
from flower.fleet import engine
from flower.fleet.board import Board
from flower.fleet.outage import unreachable
from flower.fleet.places import FleetError, FleetPlace, said_of, workspace_settings
from flower.fleet.wake import Unrecorded, Wake, run_wake

if TYPE_CHECKING:
    from types import FrameType

    from flower.core.config import Settings
    from flower.core.protocols import SessionStoreBase

T = TypeVar("T")
TASK_VARIABLE = "FLOWER_FLEET_TASK"
"""The id of the fleet task a wake runs for (unset outside the fleet)."""
ZOMBIE_EXIT = 75
"""A worker that finds it was taken over exits with this code (EX_TEMPFAIL: restart it)."""


def default_executor_id() -> str:
    return f"{socket.gethostname()}-{os.getpid()}"


def task_log(workspace: Path, run_dir: str, task_id: str) -> Path:
    """Where a task's wake writes what it prints: under the workspace's run directory."""
    base = Path(run_dir)
    base = base if base.is_absolute() else workspace / base
    return base / "fleet" / f"{task_id}.log"


@dataclass
class Worker:
    place: FleetPlace
    executor_id: str = field(default_factory=default_executor_id)
    say: Callable[[str], None] = print
    host: str = field(default_factory=socket.gethostname)

    def __post_init__(self) -> None:
        self.board: Board | None = None
        self.running: dict[str, Wake] = {}
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.zombie = False
        self.active: set[str] = set()
        """Tasks whose workflow function runs in this process now."""
        self.orphans: dict[str, float] = {}
        """PENDING tasks of this worker that run nowhere here, since when (monotonic)."""

    # -- the process ---------------------------------------------------------------

    def run(self) -> int:
        import faulthandler

        faulthandler.register(signal.SIGUSR1, all_threads=True)  # where is it stuck?
        engine.migrate(self.place.database)
        self.board = self._wait_for_database()
        self.board.join(self.executor_id, self.host, os.getpid())
        _set_limits(self.place)
        engine.register(self.run_task, self.active)
        engine.launch(self.place.database, self.executor_id, self.place.concurrency)
        self.say(
            _("worker {worker} on {host}: at most {n} tasks at a time, database {db}").format(
                worker=self.executor_id,
                host=self.host,
                n=self.place.concurrency,
                db=_shown(self.place.database),
            )
        )
        stop = threading.Event()

        def on_signal(signum: int, frame: FrameType | None) -> None:
            stop.set()

        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, on_signal)
        beat = threading.Thread(target=self._beat_loop, args=(stop,), daemon=True)
        beat.start()
        while not stop.wait(0.2):
            pass
        return self._leave()

    def _wait_for_database(self) -> Board:
        """Connect, or wait and probe with one status line, as the engine does offline."""
        said = False
        while True:
            try:
                board = Board(self.place.database)
                if said:
                    self.say(_("the fleet's database is back"))
                return board
            except Exception as exc:
                if not said:
                    self.say(
                        _("the fleet's database cannot be reached ({error}); retrying").format(
                            error=type(exc).__name__
                        )
                    )
                    said = True
                time.sleep(min(5.0, self.place.heartbeat * 2))

    def _leave(self) -> int:
        """Stop the wakes (they save their place), say the tasks are handed over, go."""
        self.stopping.set()
        with self.lock:
            running = list(self.running.values())
        if self.zombie:  # its wakes are refused at their next write: let them learn it
            deadline = time.monotonic() + self.place.takeover_after
            while time.monotonic() < deadline and not all(w.done.is_set() for w in running):
                time.sleep(0.1)
        for wake in running:
            if self.zombie and wake.lost_at is None:
                wake.lost_at = time.monotonic()
            wake.leaving = True
            wake.stop()
        for wake in running:
            wake.done.wait(timeout=30)
            if not self.zombie and wake.done.is_set():
                with contextlib.suppress(Exception):  # the next worker need not wait it out
                    wake.store.release_lease(wake.project, wake.token)
        assert self.board is not None
        if not self.zombie:
            with contextlib.suppress(Exception):
                self.board.leave(self.executor_id)
        if running and not self.zombie:
            self.say(
                _("worker stopped: its unfinished tasks ({n}) go on with the other workers").format(
                    n=len(running)
                )
            )
        else:
            self.say(_("worker stopped"))
        sys.stdout.flush()
        # DBOS must not record the interrupted wakes as finished: leave without unwinding
        os._exit(ZOMBIE_EXIT if self.zombie else 0)

    # -- heartbeat, leases, cancellations, takeovers ---------------------------------

    def _beat_loop(self, stop: threading.Event) -> None:
        said_offline = False
        while not stop.is_set():
            try:
                self._beat(stop)
                if said_offline:
                    self.say(_("the fleet's database is back"))
                    said_offline = False
            except Exception as exc:
                if not said_offline:
                    self.say(
                        _("the fleet's database cannot be reached ({error}); retrying").format(
                            error=type(exc).__name__
                        )
                    )
                    said_offline = True
            stop.wait(self.place.heartbeat)

    def _beat(self, stop: threading.Event) -> None:
        assert self.board is not None
        if not self.board.beat(self.executor_id):
            self.zombie = True
            self.say(
                _(
                    "this worker was taken over: it was paused or cut off for more than "
                    "{seconds:g} s, its tasks run on other workers now; stopping (restart it "
                    "to take new tasks)"
                ).format(seconds=self.place.takeover_after)
            )
            stop.set()
            return
        self._renew_leases()
        self._drop_lost(grace=self.place.heartbeat)
        self._check_cancelled()
        self._hand_back_orphans()
        for dead in self.board.claim_dead(self.executor_id, self.place.takeover_after):
            ids = engine.pending_of(dead.executor_id)
            if ids:
                engine.hand_back(ids)
                self.say(
                    _("took over the tasks of {worker} on {host} (no heartbeat): {n}").format(
                        n=len(ids), worker=dead.executor_id, host=dead.host
                    )
                )

    def _hand_back_orphans(self) -> None:
        """Tasks DBOS has PENDING on this worker that run nowhere in it (an execution
        that died on a database error, as when Postgres restarts mid-recovery: DBOS
        #716) go back on the queue once they have been so for ``takeover_after``."""
        now = time.monotonic()
        idle = [i for i in engine.pending_of(self.executor_id) if i not in self.active]
        self.orphans = {i: self.orphans.get(i, now) for i in idle}
        due = [i for i, since in self.orphans.items() if now - since >= self.place.takeover_after]
        if due:
            engine.hand_back(due)
            for task_id in due:
                self.orphans.pop(task_id, None)
                self.say(_("task {task}: its run here was lost; queued again").format(task=task_id))

    def _renew_leases(self) -> None:
        with self.lock:
            running = list(self.running.values())
        for wake in running:
            if wake.lost_at is not None:
                continue
            try:
                renewed = wake.store.renew_lease(
                    wake.project, wake.token, self.place.takeover_after
                )
            except Exception as exc:
                if not unreachable(exc):
                    raise
                continue  # its store is away: the wake waits it out and renews then
            if not renewed:
                wake.lose()

    def _drop_lost(self, grace: float) -> None:
        """Stop the wakes whose lease is gone, after ``grace`` seconds (a write they try
        meanwhile is refused by the store, which is what they should learn)."""
        with self.lock:
            running = list(self.running.values())
        for wake in running:
            if self.zombie and wake.lost_at is None:
                wake.lost_at = time.monotonic()
            if wake.lost_at is not None and time.monotonic() - wake.lost_at >= grace:
                wake.stop()

    def _check_cancelled(self) -> None:
        with self.lock:
            running = list(self.running.values())
        for wake in running:
            if not wake.cancelled and engine.status_of(wake.task_id) == "CANCELLED":
                wake.cancelled = True
                self.say(_("task {task}: cancelled; stopping its wake").format(task=wake.task_id))
                wake.stop()

    # -- one task ----------------------------------------------------------------------

    def run_task(self, task_id: str, task: dict[str, Any]) -> dict[str, Any]:
        """The task's workflow function: its wake, here, each flower step a DBOS step;
        the task's small result."""
        workspace = Path(task["workspace"])
        try:
            settings = workspace_settings(workspace)
            said = said_of(task, task_id, settings)  # sealed when the sessions are encrypted
            store = self._patiently(task_id, lambda: _lease_store(settings))
            if not isinstance(store, LeasingStore):
                store.close()
                raise _cannot_lease(settings)
        except Exception as exc:
            self.say(_("task {task}: {error}").format(task=task_id, error=exc))
            return {"ok": False, "why": str(exc)}
        project = project_key(workspace)
        token, previous = self._patiently(task_id, lambda: self._take_lease(store, project))
        wake = Wake(
            task_id,
            workspace,
            store,
            project,
            token,
            self.place.takeover_after,
            say=self.say,
            pause=self.place.heartbeat,
        )
        with self.lock:
            self.running[task_id] = wake
        try:
            result = self._wake(wake, task, said, settings, previous)
        except _Unkept:
            with contextlib.suppress(Exception):
                store.close()
            raise
        finally:
            with self.lock:
                self.running.pop(task_id, None)
            wake.done.set()
        if result is None and not self.stopping.is_set() and not self.zombie:
            # cancelled, or taken over: DBOS keeps nothing of this run over the owner's
            result = {"ok": False, "why": _("cancelled") if wake.cancelled else None}
        if result is None or self.stopping.is_set():
            _park()  # the process leaves without recording the task
        assert result is not None
        self._patiently(task_id, lambda: store.release_lease(project, token))
        store.close()
        if wake.lost_at is None:  # else it said it dropped the task
            done = _("done") if result["ok"] else _("failed")
            self.say(_("task {task}: {state}").format(task=task_id, state=done))
        return result

    def _patiently(self, task_id: str, call: Callable[[], T]) -> T:
        """``call()``, again and again while a database it needs cannot be reached (a
        server restarting): an error raised out of the step would be recorded by DBOS as
        the task's end (the trap of DBOS #716), while DBOS itself waits out the outage."""
        said = False
        while True:
            try:
                return call()
            except Exception as exc:
                if not unreachable(exc):
                    raise
                if not said:
                    self.say(
                        _("task {task}: a database cannot be reached ({error}); retrying").format(
                            task=task_id,
                            error=exc if isinstance(exc, FlowerError) else type(exc).__name__,
                        )
                    )
                    said = True
            time.sleep(self.place.heartbeat)

    def _wake(
        self,
        wake: Wake,
        task: dict[str, Any],
        said: str | None,
        settings: Settings,
        previous: str | None,
    ) -> dict[str, Any] | None:
        """Run the wake (None: it was stopped before it ended, and nothing is kept)."""
        if not self._wait_for_run_lock(wake, settings.run_dir):
            return None
        # the task's first DBOS step, once the wake can start: the worker that first ran
        # it, and the token its words are said under. Every execution passes the words
        # on under that token: the said journal and lineage know it, so words an earlier
        # execution recorded are not said again, and none are lost to a kill before then.
        first_executor, first_run, said_token = engine.start(self.executor_id)
        log_path = task_log(wake.workspace, settings.run_dir, wake.task_id)
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(log_path, "a", encoding="utf-8") as log:
            if previous is not None or not first_run:
                assert self.board is not None
                board, holder = self.board, previous or first_executor
                host = self._patiently(wake.task_id, lambda: board.host_of(holder))
                line = N_("taken over from {host}")
                with speaking(settings.language or SOURCE_LANGUAGE):  # the task's, in its log
                    log.write(_(line).format(host=host) + "\n")
                self.say(f"{wake.task_id}: {_(line).format(host=host)}")
            else:
                self.say(
                    _("task {task}: started in {path}").format(
                        task=wake.task_id, path=wake.workspace
                    )
                )
            log.flush()
            try:
                return run_wake(
                    wake,
                    task,
                    said=said,
                    said_token=said_token,
                    settings=settings,
                    database=self.place.database,
                    log=log,
                    through=engine.step,
                )
            except Unrecorded:
                return None
            except Exception as exc:  # the wake failed: the task fails, and says why
                log.write(f"{type(exc).__name__}: {exc}\n")
                if unreachable(exc):
                    # a database went away outside a step (a step waits its outage
                    # out): this run ends, DBOS keeps nothing of it, and the task is
                    # queued again once it has been idle here for takeover_after
                    wake.met_outage(exc)
                    raise _Unkept from exc
                return {"ok": False, "exit": 1, "why": str(exc) or type(exc).__name__}

    def _wait_for_run_lock(self, wake: Wake, run_dir: str) -> bool:
        """Wait while another ``flower`` works in the workspace (a person's own run, or a
        wake this one took over that has not noticed yet: its next write is refused).
        False: the wake was stopped meanwhile."""
        from flower.core.run_lock import BusyError, run_lock

        said = False
        while wake.holds():
            try:
                with run_lock(run_dir):
                    return True
            except BusyError:
                if not said:
                    self.say(
                        _(
                            "task {task}: another flower is running in {path}; waiting for it"
                        ).format(task=wake.task_id, path=wake.workspace)
                    )
                    said = True
                time.sleep(self.place.heartbeat)
        return False

    def _take_lease(self, store: LeasingStore, project: str) -> tuple[int, str | None]:
        """The workspace's lease, waiting while another live holder has it (a wake
        taken over waits out the old holder's lease, at most ``takeover_after``)."""
        while True:
            got = store.take_lease(project, self.executor_id, self.place.takeover_after)
            if isinstance(got, tuple):
                return int(got[0]), got[1]
            time.sleep(min(float(got), self.place.heartbeat) + 0.05)


class _Unkept(BaseException):
    """This run of the task ends and DBOS keeps nothing of it (DBOS keeps a workflow's
    ``Exception`` as its outcome, not this): the task stays PENDING on this worker,
    runs nowhere, and :meth:`Worker._hand_back_orphans` queues it again."""


def _park() -> NoReturn:
    """Hold a DBOS thread until the process leaves (``os._exit``), so DBOS records
    nothing of the task it runs."""
    while True:
        threading.Event().wait()


def _set_limits(place: FleetPlace) -> None:
    """This worker's ``[tool.flower.fleet.limits]`` become the fleet's budget."""
    from flower.fleet.budget import Budget

    budget = Budget(place.database, "worker")
    try:
        budget.set_limits(place.limits)
    finally:
        budget.close()


def _shown(url: str) -> str:
    from flower.core.redact import redact_text

    return redact_text(url)


_OPENING = threading.Lock()
"""Stores are opened one at a time: a first open migrates, and Alembic is not
thread-safe."""


def _lease_store(settings: Settings) -> SessionStoreBase:
    """The workspace's session store, raw (leases need no encryption): its lease is
    taken in it if it is a :class:`LeasingStore` (:func:`_cannot_lease` if not)."""
    with _OPENING:
        return _open_lease_store(settings)


def _open_lease_store(settings: Settings) -> SessionStoreBase:
    from flower.stores.open import open_session_store

    plain = msgspec.structs.replace(
        settings, sessions=msgspec.structs.replace(settings.sessions, encrypt=False)
    )
    try:
        return open_session_store(settings=plain)
    except SchemaOutOfDateError:
        # an empty database gets flower's schema on first use (under the migration
        # lock); an older one still asks for `flower db upgrade`
        if not _no_flower_tables(plain.sessions_url()):
            raise
        migrating = msgspec.structs.replace(plain.sessions, auto_migrate=True)
        return open_session_store(settings=msgspec.structs.replace(plain, sessions=migrating))


def _cannot_lease(settings: Settings) -> FleetError:
    """Why the fleet refuses a session store that is no :class:`LeasingStore`."""
    return FleetError(
        _(
            "the {backend} session store cannot guarantee one writer per session, so the "
            "fleet does not use it: set [tool.flower.sessions] backend to sqlite (one "
            "machine) or postgres (many hosts)"
        ).format(backend=settings.sessions.backend)
    )


def _no_flower_tables(url: str) -> bool:
    import sqlalchemy as sa

    engine = sa.create_engine(url)
    try:
        names = set(sa.inspect(engine).get_table_names())
    finally:
        engine.dispose()
    return not names & {"flower_alembic_version", "flower_sessions"}


__all__ = ["TASK_VARIABLE", "ZOMBIE_EXIT", "Worker", "default_executor_id", "task_log"]
