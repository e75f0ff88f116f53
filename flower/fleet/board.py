"""The fleet's own small table beside DBOS's: one row per worker, its heartbeat.

DBOS knows which executor runs a workflow but not whether that executor is alive (in
the open-source library only Conductor watches executors). Every worker writes its
heartbeat here; a worker whose heartbeat is older than ``takeover_after`` (or that
left) is claimed by one survivor, compare-and-set, and that survivor hands its PENDING
workflows back to the queue through DBOS's public API. A claimed worker can never
heartbeat again: if it was only paused, it learns it is a zombie and stops.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import sqlalchemy as sa

metadata = sa.MetaData()

workers = sa.Table(
    "flower_fleet_workers",
    metadata,
    sa.Column("executor_id", sa.Text, primary_key=True),
    sa.Column("host", sa.Text, nullable=False),
    sa.Column("pid", sa.Integer, nullable=False),
    sa.Column("started_ms", sa.BigInteger, nullable=False),
    sa.Column("heartbeat_ms", sa.BigInteger, nullable=False),
    sa.Column("state", sa.Text, nullable=False),  # running | left
    sa.Column("taken_over_by", sa.Text, nullable=True),
)


def _now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True)
class WorkerRow:
    executor_id: str
    host: str
    pid: int
    heartbeat_ms: int
    state: str
    taken_over_by: str | None


class Board:
    """The workers table in the fleet's database (DBOS's system database)."""

    def __init__(self, url: str) -> None:
        kwargs: dict[str, object] = {"pool_pre_ping": True}
        if url.startswith("sqlite"):
            kwargs = {"connect_args": {"timeout": 30}}
        self.engine = sa.create_engine(url, **kwargs)
        for attempt in (1, 2):
            try:
                metadata.create_all(self.engine, checkfirst=True)
                break
            except sa.exc.DBAPIError:  # another worker created it at the same moment
                if attempt == 2:
                    raise

    def close(self) -> None:
        self.engine.dispose()

    def join(self, executor_id: str, host: str, pid: int) -> None:
        now = _now_ms()
        with self.engine.begin() as conn:
            conn.execute(sa.delete(workers).where(workers.c.executor_id == executor_id))
            conn.execute(
                sa.insert(workers).values(
                    executor_id=executor_id,
                    host=host,
                    pid=pid,
                    started_ms=now,
                    heartbeat_ms=now,
                    state="running",
                    taken_over_by=None,
                )
            )

    def beat(self, executor_id: str) -> bool:
        """Record a heartbeat; False when this worker was taken over (a zombie)."""
        update = (
            sa.update(workers)
            .where(
                workers.c.executor_id == executor_id,
                workers.c.taken_over_by.is_(None),
                workers.c.state == "running",
            )
            .values(heartbeat_ms=_now_ms())
        )
        with self.engine.begin() as conn:
            return bool(conn.execute(update).rowcount)

    def leave(self, executor_id: str) -> None:
        """This worker stops: its unfinished tasks may be taken over at once."""
        with self.engine.begin() as conn:
            conn.execute(
                sa.update(workers)
                .where(workers.c.executor_id == executor_id)
                .values(state="left", heartbeat_ms=0)
            )

    def rows(self) -> list[WorkerRow]:
        with self.engine.connect() as conn:
            found = conn.execute(
                sa.select(
                    workers.c.executor_id,
                    workers.c.host,
                    workers.c.pid,
                    workers.c.heartbeat_ms,
                    workers.c.state,
                    workers.c.taken_over_by,
                )
            ).all()
        return [WorkerRow(*row) for row in found]

    def claim_dead(self, me: str, takeover_after: float) -> list[WorkerRow]:
        """The dead workers this one is responsible for: gone longer than
        ``takeover_after`` (or left), and unclaimed or claimed by a worker that is
        itself dead. Each is claimed compare-and-set; ones claimed before stay ours,
        so a takeover cut short (the database restarted midway) is finished later."""
        now = _now_ms()
        cutoff = now - int(takeover_after * 1000)
        rows = {row.executor_id: row for row in self.rows()}

        def dead(row: WorkerRow | None) -> bool:
            return row is None or row.state != "running" or row.heartbeat_ms < cutoff

        mine: list[WorkerRow] = []
        for row in rows.values():
            if row.executor_id == me or not dead(row):
                continue
            if row.taken_over_by == me:
                mine.append(row)
                continue
            holder = rows.get(row.taken_over_by) if row.taken_over_by else None
            if row.taken_over_by is not None and not dead(holder):
                continue
            claim = (
                sa.update(workers)
                .where(workers.c.executor_id == row.executor_id)
                .where(
                    workers.c.taken_over_by.is_(None)
                    if row.taken_over_by is None
                    else workers.c.taken_over_by == row.taken_over_by
                )
                .values(taken_over_by=me)
            )
            with self.engine.begin() as conn:
                if conn.execute(claim).rowcount:
                    mine.append(row)
        return mine

    def host_of(self, executor_id: str) -> str:
        for row in self.rows():
            if row.executor_id == executor_id:
                return row.host
        return executor_id


__all__ = ["Board", "WorkerRow", "workers"]
