"""The fleet's shared budget of model calls: requests and tokens per minute, and parks.

DBOS's queue limiter counts workflow starts, not model calls or tokens, so the budget
is the fleet's own table in the fleet's database (DBOS's system database, SQLite or
Postgres): every model call of every wake reserves one request and its expected
tokens in a rolling 60-second window before it is sent, and settles the reservation
with the usage the API reported. A 429 that names a wait parks every caller until
that time (one row). The engine asks through :class:`flower.core.protocols.CallGate`;
this module is that gate. Only SQLAlchemy here, no DBOS: a plain ``flower`` run
(``share_limits``) and every wake of the fleet open it.

Atomic across processes: each reservation first updates the one state row (a row
lock on Postgres, the write lock on SQLite), then reads the window and inserts.
"""

from __future__ import annotations

import contextlib
import os
import socket
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from flower.core.config import FleetLimits, Settings
from flower.core.protocols import GateAnswer

if TYPE_CHECKING:
    from sqlalchemy.engine.interfaces import DBAPIConnection
    from sqlalchemy.pool import ConnectionPoolEntry

WINDOW_MS = 60_000
"""The budget's window: a minute, as the API counts."""
MARGIN_MS = 2_000
"""A reservation counts this much longer than the window: the request it stands for
reaches the API a moment after it is made (on a loaded machine, 0.5 s was not always
enough: bench/fleet_budget.py saw one 429 in 43)."""
NAME = "default"
KINDS = ("requests", "input_tokens", "output_tokens")

metadata = sa.MetaData()

state = sa.Table(
    "flower_fleet_budget",
    metadata,
    sa.Column("name", sa.Text, primary_key=True),
    sa.Column("turn", sa.BigInteger, nullable=False),  # bumped by every reservation: the lock
    sa.Column("parked_until_ms", sa.BigInteger, nullable=False),
    sa.Column("parked_by", sa.Text, nullable=True),
    sa.Column("requests", sa.BigInteger, nullable=True),  # the configured limits
    sa.Column("input_tokens", sa.BigInteger, nullable=True),
    sa.Column("output_tokens", sa.BigInteger, nullable=True),
    sa.Column("api_requests", sa.BigInteger, nullable=True),  # the API's, from its headers
    sa.Column("api_input_tokens", sa.BigInteger, nullable=True),
    sa.Column("api_output_tokens", sa.BigInteger, nullable=True),
)

calls = sa.Table(
    "flower_fleet_calls",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("at_ms", sa.BigInteger, nullable=False, index=True),
    sa.Column("task", sa.Text, nullable=False),
    sa.Column("input_tokens", sa.BigInteger, nullable=False),
    sa.Column("output_tokens", sa.BigInteger, nullable=False),
)

usage = sa.Table(
    "flower_fleet_usage",
    metadata,
    sa.Column("task", sa.Text, primary_key=True),
    sa.Column("requests", sa.BigInteger, nullable=False),
    sa.Column("input_tokens", sa.BigInteger, nullable=False),
    sa.Column("output_tokens", sa.BigInteger, nullable=False),
    sa.Column("cost_usd", sa.Float, nullable=True),
    sa.Column("updated_ms", sa.BigInteger, nullable=False),
)

waiters = sa.Table(
    "flower_fleet_waiters",
    metadata,
    sa.Column("who", sa.Text, primary_key=True),
    sa.Column("since_ms", sa.BigInteger, nullable=False),  # when its call was first refused
    sa.Column("seen_ms", sa.BigInteger, nullable=False),  # its last ask
)
"""Callers waiting for the budget: a freed request goes to the one that waited longest."""

STALE_MS = 5_000
"""A waiter not seen this long has gone (its process died or its call went elsewhere)."""
TURN_WAIT = 0.2
"""Seconds a caller waits while an older waiter has the next turn."""

_HEADERS = {
    "requests": "anthropic-ratelimit-requests",
    "input_tokens": "anthropic-ratelimit-input-tokens",
    "output_tokens": "anthropic-ratelimit-output-tokens",
}


def _now_ms() -> int:
    return int(time.time() * 1000)


def _int(value: object) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


def _reset_ms(value: str | None) -> int | None:
    """An ``anthropic-ratelimit-*-reset`` time (RFC 3339) in epoch milliseconds."""
    if not value:
        return None
    try:
        return int(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return None


@dataclass(frozen=True)
class Ticket:
    call_id: int
    input_tokens: int
    output_tokens: int


class Budget:
    """The budget in the fleet's database ``url``; ``task`` names whose calls these are."""

    def __init__(self, url: str, task: str, clock: Callable[[], int] = _now_ms) -> None:
        kwargs: dict[str, object] = {"pool_pre_ping": True}
        if url.startswith("sqlite"):
            kwargs = {"connect_args": {"timeout": 30}}
        self.engine = sa.create_engine(url, **kwargs)
        if url.startswith("sqlite"):
            sa.event.listen(self.engine, "connect", _no_fsync_per_commit)
        self.task = task
        self.clock = clock
        self.who = f"{task}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._since: int | None = None
        self._ready = False
        with contextlib.suppress(sa.exc.DBAPIError):  # away now: the first call waits for it
            self._prepare()

    def _prepare(self) -> None:
        """Create the tables and the state row, once (raises while the database is away)."""
        if self._ready:
            return
        for attempt in (1, 2):
            try:
                metadata.create_all(self.engine, checkfirst=True)
                self._ensure_row()
                break
            except sa.exc.DBAPIError:  # another process created it at the same moment
                if attempt == 2:
                    raise
        self._ready = True

    def close(self) -> None:
        """Leave the line (if waiting) and let the connections go."""
        if self._since is not None:
            with contextlib.suppress(sa.exc.DBAPIError), self.engine.begin() as conn:
                conn.execute(sa.delete(waiters).where(waiters.c.who == self.who))
        self.engine.dispose()

    def _ensure_row(self) -> None:
        with self.engine.begin() as conn:
            found = conn.execute(sa.select(state.c.name).where(state.c.name == NAME)).first()
            if found is None:
                conn.execute(sa.insert(state).values(name=NAME, turn=0, parked_until_ms=0))

    def set_limits(self, limits: FleetLimits) -> None:
        """The configured limits every caller follows (a worker sets its own at start)."""
        self._prepare()
        with self.engine.begin() as conn:
            conn.execute(
                sa.update(state)
                .where(state.c.name == NAME)
                .values(
                    requests=limits.requests_per_minute,
                    input_tokens=limits.input_tokens_per_minute,
                    output_tokens=limits.output_tokens_per_minute,
                )
            )

    # -- the gate ------------------------------------------------------------------

    def reserve(self, input_tokens: int, output_tokens: int) -> GateAnswer:
        want = {"requests": 1, "input_tokens": input_tokens, "output_tokens": output_tokens}
        try:
            self._prepare()
            with self.engine.begin() as conn:
                now = self.clock()
                conn.execute(
                    sa.update(state).where(state.c.name == NAME).values(turn=state.c.turn + 1)
                )
                row = conn.execute(sa.select(state).where(state.c.name == NAME)).one()
                if row.parked_until_ms > now:
                    return GateAnswer(
                        wait=(row.parked_until_ms - now) / 1000,
                        parked_until=row.parked_until_ms / 1000,
                    )
                limits = _effective(row)
                window: Sequence[Any] = []
                if any(limits.values()):  # with no limit, a minute of calls is not read
                    since = now - WINDOW_MS - MARGIN_MS
                    window = conn.execute(
                        sa.select(calls.c.at_ms, calls.c.input_tokens, calls.c.output_tokens)
                        .where(calls.c.at_ms > since)
                        .order_by(calls.c.at_ms)
                    ).all()
                wait_ms = max(
                    (_wait_ms(window, i, limits[kind], want[kind], now) for i, kind in _kinds()),
                    default=0,
                )
                if wait_ms == 0 and self._older_waiters(conn, now) >= _free(window, limits):
                    wait_ms = int(TURN_WAIT * 1000)  # an older waiter has this turn
                if wait_ms > 0:
                    self._wait_in_line(conn, now)
                    return GateAnswer(wait=wait_ms / 1000)
                if self._since is not None:
                    conn.execute(sa.delete(waiters).where(waiters.c.who == self.who))
                    self._since = None
                inserted = conn.execute(
                    sa.insert(calls).values(
                        at_ms=now,
                        task=self.task,
                        input_tokens=input_tokens,
                        output_tokens=output_tokens,
                    )
                ).inserted_primary_key
                assert inserted is not None
                call_id = inserted[0]
                conn.execute(sa.delete(calls).where(calls.c.at_ms < now - 2 * WINDOW_MS))
            return GateAnswer(ticket=Ticket(int(call_id), input_tokens, output_tokens))
        except sa.exc.DBAPIError:
            return GateAnswer(wait=1.0)  # the database is away: wait for it, send nothing

    def _older_waiters(self, conn: sa.Connection, now: int) -> int:
        """Live callers that have waited longer than this one (than now if it is new)."""
        since = self._since if self._since is not None else now
        found = conn.execute(
            sa.select(sa.func.count())
            .select_from(waiters)
            .where(
                waiters.c.since_ms < since,
                waiters.c.seen_ms > now - STALE_MS,
                waiters.c.who != self.who,
            )
        ).scalar()
        return int(found or 0)

    def _wait_in_line(self, conn: sa.Connection, now: int) -> None:
        if self._since is None:
            self._since = now
        done = conn.execute(sa.update(waiters).where(waiters.c.who == self.who).values(seen_ms=now))
        if not done.rowcount:
            conn.execute(sa.insert(waiters).values(who=self.who, since_ms=self._since, seen_ms=now))
        conn.execute(sa.delete(waiters).where(waiters.c.seen_ms < now - 10 * STALE_MS))

    def settle(
        self, ticket: object, used: dict[str, Any], limits: dict[str, str], cost_usd: float | None
    ) -> None:
        if not isinstance(ticket, Ticket):
            return
        sent = _int(used.get("input_tokens")) + _int(used.get("cache_creation_input_tokens"))
        output = _int(used.get("output_tokens"))
        api = {kind: _header_limit(limits, kind) for kind in KINDS}
        resets = [
            _reset_ms(limits.get(f"{_HEADERS[kind]}-reset"))
            for kind in KINDS
            if limits.get(f"{_HEADERS[kind]}-remaining") == "0"
        ]
        park_to = max((r for r in resets if r is not None), default=None)
        with contextlib.suppress(sa.exc.DBAPIError):
            self._prepare()
            with self.engine.begin() as conn:
                conn.execute(
                    sa.update(calls)
                    .where(calls.c.id == ticket.call_id)
                    .values(input_tokens=sent, output_tokens=output)
                )
                if any(value is not None for value in api.values()):
                    conn.execute(
                        sa.update(state)
                        .where(state.c.name == NAME)
                        .values(**{f"api_{kind}": value for kind, value in api.items()})
                    )
                if park_to is not None:
                    self._park(conn, park_to)
                self._count(conn, sent, output, cost_usd)

    def park(self, seconds: float) -> bool:
        try:
            self._prepare()
            with self.engine.begin() as conn:
                self._park(conn, self.clock() + int(seconds * 1000))
        except sa.exc.DBAPIError:
            return False
        return True

    def _park(self, conn: sa.Connection, until_ms: int) -> None:
        conn.execute(
            sa.update(state)
            .where(state.c.name == NAME, state.c.parked_until_ms < until_ms)
            .values(parked_until_ms=until_ms, parked_by=self.task)
        )

    def _count(self, conn: sa.Connection, sent: int, output: int, cost: float | None) -> None:
        now = self.clock()
        done = conn.execute(
            sa.update(usage)
            .where(usage.c.task == self.task)
            .values(
                requests=usage.c.requests + 1,
                input_tokens=usage.c.input_tokens + sent,
                output_tokens=usage.c.output_tokens + output,
                cost_usd=usage.c.cost_usd + (cost or 0.0),
                updated_ms=now,
            )
        )
        if not done.rowcount:
            conn.execute(
                sa.insert(usage).values(
                    task=self.task,
                    requests=1,
                    input_tokens=sent,
                    output_tokens=output,
                    cost_usd=cost or 0.0,
                    updated_ms=now,
                )
            )

    # -- what status shows ---------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        """The limits, the use of the last minute, the park, and each task's totals."""
        self._prepare()
        now = self.clock()
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(state).where(state.c.name == NAME)).one()
            window = conn.execute(
                sa.select(calls.c.at_ms, calls.c.input_tokens, calls.c.output_tokens).where(
                    calls.c.at_ms > now - WINDOW_MS
                )
            ).all()
            tasks = conn.execute(sa.select(usage)).all()
        return {
            "limits": {kind: getattr(row, kind) for kind in KINDS},
            "api_limits": {kind: getattr(row, f"api_{kind}") for kind in KINDS},
            "effective": _effective(row),
            "used_last_minute": {
                "requests": len(window),
                "input_tokens": sum(r.input_tokens for r in window),
                "output_tokens": sum(r.output_tokens for r in window),
            },
            "parked_until": row.parked_until_ms / 1000 if row.parked_until_ms > now else None,
            "tasks": {
                t.task: {
                    "requests": t.requests,
                    "input_tokens": t.input_tokens,
                    "output_tokens": t.output_tokens,
                    "cost_usd": round(t.cost_usd or 0.0, 6),
                }
                for t in tasks
            },
        }

    def per_minute(self, step_s: int = 5) -> list[dict[str, float]]:
        """The budget's use over the last minute, as the limiter saw it: every
        ``step_s`` seconds from a minute ago to now, the requests and tokens in the 60 s
        that ended there (the table keeps two minutes of calls). ``at`` is epoch seconds."""
        self._prepare()
        now = self.clock()
        with self.engine.connect() as conn:
            found = conn.execute(
                sa.select(calls.c.at_ms, calls.c.input_tokens, calls.c.output_tokens).where(
                    calls.c.at_ms > now - 2 * WINDOW_MS
                )
            ).all()
        points = []
        for ends in range(now - WINDOW_MS, now + 1, step_s * 1000):
            inside = [r for r in found if ends - WINDOW_MS < r.at_ms <= ends]
            points.append(
                {
                    "at": ends / 1000,
                    "requests": len(inside),
                    "input_tokens": sum(r.input_tokens for r in inside),
                    "output_tokens": sum(r.output_tokens for r in inside),
                }
            )
        return points


def _no_fsync_per_commit(dbapi_connection: DBAPIConnection, _record: ConnectionPoolEntry) -> None:
    """The budget's SQLite commits are not fsynced one by one (WAL, ``synchronous =
    NORMAL``): a power cut may lose the last reservations and usage counts, never the
    file's consistency, and a reservation is a minute's bookkeeping. With an fsync each,
    a model call's reservation and settlement took about 18 ms on a loaded 2-core
    machine, without about 9 (bench/fleet.py's steps spend it on every call)."""
    dbapi_connection.execute("PRAGMA synchronous=NORMAL")


def _kinds() -> list[tuple[int, str]]:
    return [(1, "requests"), (2, "input_tokens"), (3, "output_tokens")]


def _free(window: Sequence[Any], limits: dict[str, int | None]) -> int:
    """Requests the window has room for now (one when only tokens are limited)."""
    limit = limits["requests"]
    return max(limit - len(window), 0) if limit else 1


def _effective(row: sa.Row[Any]) -> dict[str, int | None]:
    """The smaller of the configured limit and the API's own, per kind."""
    out: dict[str, int | None] = {}
    for kind in KINDS:
        found = [v for v in (getattr(row, kind), getattr(row, f"api_{kind}")) if v]
        out[kind] = min(found) if found else None
    return out


def _header_limit(limits: dict[str, str], kind: str) -> int | None:
    raw = limits.get(f"{_HEADERS[kind]}-limit")
    try:
        return int(raw) if raw else None
    except ValueError:
        return None


def _wait_ms(window: Sequence[Any], column: int, limit: int | None, want: int, now: int) -> int:
    """Milliseconds until ``want`` more fits under ``limit`` in the window (0: now).
    A request bigger than the whole limit goes when the window is empty."""
    if limit is None:
        return 0
    want = min(want, limit)
    used = sum(int(r[column - 1]) for r in window) if column > 1 else len(window)
    if used + want <= limit:
        return 0
    for row in window:
        used -= 1 if column == 1 else int(row[column - 1])
        if used + want <= limit:
            return max(row[0] + WINDOW_MS + MARGIN_MS - now, 1)
    return WINDOW_MS


def caller_name() -> str:
    """Whose calls these are: the fleet task a wake runs for, else this process."""
    task = os.environ.get("FLOWER_FLEET_TASK")
    return task or f"flower@{socket.gethostname()}-{os.getpid()}"


def gate_for(settings: Settings) -> Budget | None:
    """The fleet's budget for a run with ``settings``: in a fleet task's wake (its
    worker says where the database is), or in a plain ``flower`` run whose
    ``[tool.flower.fleet] share_limits`` is on; else None."""
    url = os.environ.get("FLOWER_FLEET_DATABASE")
    if not url and settings.fleet.share_limits:
        from flower.fleet.places import FleetPlace

        url = FleetPlace.from_settings(settings).database
    if not url:
        return None
    budget = Budget(url, caller_name())
    limits = settings.fleet.limits
    if not os.environ.get("FLOWER_FLEET_DATABASE") and any(
        getattr(limits, f) is not None
        for f in ("requests_per_minute", "input_tokens_per_minute", "output_tokens_per_minute")
    ):
        budget.set_limits(limits)
    return budget


def fleet_report(database: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """``flower fleet status --json``: the tasks with their tokens and cost so far (and
    parked-until while running), the totals, and the budget's last minute."""
    budget = Budget(database, "status")
    try:
        snap = budget.snapshot()
    finally:
        budget.close()
    tasks = snap.pop("tasks")
    for row in rows:
        used = tasks.get(row["id"], {})
        row["requests"] = used.get("requests", 0)
        row["input_tokens"] = used.get("input_tokens", 0)
        row["output_tokens"] = used.get("output_tokens", 0)
        row["cost_so_far_usd"] = used.get("cost_usd", 0.0)
        row["parked_until"] = snap["parked_until"] if row["state"] == "running" else None
    totals = {
        kind: sum(row[kind] for row in rows)
        for kind in ("requests", "input_tokens", "output_tokens")
    }
    totals["cost_usd"] = round(sum(row["cost_so_far_usd"] for row in rows), 6)
    totals["tasks"] = len(rows)
    return {"tasks": rows, "totals": totals, "budget": snap}


__all__ = [
    "MARGIN_MS",
    "WINDOW_MS",
    "Budget",
    "Ticket",
    "caller_name",
    "fleet_report",
    "gate_for",
]
