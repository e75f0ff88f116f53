"""Lineage in the SQL database, one row per workspace id.

The workspace id is ``[tool.flower.lineage] workspace_id`` when set (so two hosts
with different paths share one lineage on purpose), else the workspace's absolute
path, which is the seed's guard: a moved or copied workspace finds nothing and
starts fresh.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar

import msgspec
import sqlalchemy as sa
from sqlalchemy.engine import Connection, Row

from flower.core.fileperms import private_dir, replaced_atomically
from flower.core.i18n import _
from flower.core.keys import project_key
from flower.core.lease import LeaseLostError, fenced, lease_project, lease_token
from flower.core.lineage import check_record, lineage_document
from flower.core.records import LineageMismatch, LineageRecord
from flower_plugins.jsonfs.lineage import ArchiveConflictError
from flower_plugins.sql.engine import Database
from flower_plugins.sql.schema import leases, lineage

T = TypeVar("T")
_STEPS = msgspec.json.Decoder(dict[str, str])
_EXTRA = msgspec.json.Decoder(dict[str, Any])
_LOCK_CLASS = 0x666C77  # "flw": the first key of the Postgres advisory lock on a row


class SqlLineageStore:
    """A :class:`~flower.core.protocols.LineageStore` on the SQL stores' database."""

    fences_writes: Literal[True] = True
    """A fleet wake's writes check its lease here (see :meth:`_write`)."""

    def __init__(
        self,
        db: Database,
        *,
        workspace_id: str | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._db = db
        self._workspace_id = workspace_id
        self._clock = clock
        self._last_workspace: str | None = None
        self._lease_here: bool | None = None
        """Whether this database holds the fleet lease this process writes under."""
        dialect_insert: Callable[..., Any]  # the two dialects' insert, one signature
        if db.dialect == "sqlite":  # only the dialect in use is imported
            from sqlalchemy.dialects.sqlite import insert as dialect_insert
        else:
            from sqlalchemy.dialects.postgresql import insert as dialect_insert
        upsert = dialect_insert(lineage)
        self._upsert = upsert.on_conflict_do_update(
            index_elements=[lineage.c.workspace_id],
            set_={
                c: upsert.excluded[c] for c in ("workspace", "woke", "steps", "extra", "updated_ms")
            },
        )

    @property
    def database(self) -> Database:
        return self._db

    def workspace_id(self, workspace: str | os.PathLike[str]) -> str:
        return self._workspace_id or os.path.abspath(workspace)

    def _row(self, conn: Connection, workspace_id: str) -> Row[Any] | None:
        query = sa.select(lineage).where(lineage.c.workspace_id == workspace_id)
        return conn.execute(query).first()

    def load(self, workspace: str) -> LineageRecord | None:
        if not isinstance(workspace, str | os.PathLike) or not str(workspace):
            return None
        self._last_workspace = str(workspace)
        row = self._db.read(lambda conn: self._row(conn, self.workspace_id(workspace)))
        return _record(row, str(workspace))

    def mismatch(self, workspace: str) -> LineageMismatch | None:
        """Why :meth:`load` finds nothing for ``workspace``: its row is damaged, or (in
        a SQLite file, which belongs to one run directory) the only row there names
        another directory: this one was moved or copied. A Postgres server is shared by
        many workspaces, so another row there is no sign of a move."""
        workspace_id = self.workspace_id(workspace)

        def rows(conn: Connection) -> list[Row[Any]]:
            own = self._row(conn, workspace_id)
            if own is not None or self._db.dialect != "sqlite":
                return [own] if own is not None else []
            return list(conn.execute(sa.select(lineage).limit(2)).all())

        found = self._db.read(rows)
        if len(found) != 1:
            return None
        row = found[0]
        record = _record(row, row.workspace)
        if row.workspace_id == workspace_id:
            return None if record is not None else LineageMismatch("unreadable", _raw(row))
        if record is None or not record.steps:
            return None
        return LineageMismatch("moved", lineage_document(record), moved_from=row.workspace)

    def update(
        self, workspace: str, change: Callable[[LineageRecord | None], LineageRecord]
    ) -> LineageRecord:
        """Save ``change(the record as stored now)`` in one write transaction that holds
        the workspace's row (``BEGIN IMMEDIATE`` on SQLite, an advisory lock on Postgres):
        processes sharing the lineage merge their steps instead of replacing them."""
        self._last_workspace = str(workspace)
        workspace_id = self.workspace_id(workspace)

        def work(conn: Connection) -> LineageRecord:
            if self._db.dialect != "sqlite":
                key = sa.func.hashtext(workspace_id)
                conn.execute(sa.select(sa.func.pg_advisory_xact_lock(_LOCK_CLASS, key)))
            record = change(_record(self._row(conn, workspace_id), str(workspace)))
            check_record(record)
            conn.execute(self._upsert, self._values(record))
            return record

        return self._write(work)

    def every_session_id(self) -> set[str]:
        """The sessions the lineage of every workspace in the database points at: what
        retention (``gc``, ``archive``) must keep, whichever workspace runs it. A record
        that cannot be read raises :class:`ValueError`: what it protects is unknown."""
        rows = self._db.read(
            lambda conn: conn.execute(sa.select(lineage.c.workspace_id, lineage.c.steps)).all()
        )
        ids: set[str] = set()
        for workspace_id, steps in rows:
            try:
                ids.update(_STEPS.decode(steps).values())
            except msgspec.DecodeError:
                raise ValueError(
                    _("the lineage of workspace {workspace} cannot be read").format(
                        workspace=repr(workspace_id)
                    )
                ) from None
        return ids

    def save(self, record: LineageRecord) -> None:
        check_record(record)  # the same rules as lineage.json, before any write
        self._last_workspace = record.workspace
        values = self._values(record)
        self._write(lambda conn: conn.execute(self._upsert, values))

    def _write(self, work: Callable[[Connection], T]) -> T:
        """A lineage write. A fleet wake's is checked against its lease, as its appends
        are: in the same transaction when this database holds the lease (the sessions'
        database), else through the session store that holds it."""
        token = lease_token()
        if token is None:
            return self._db.write(work)
        project = lease_project() or project_key(os.getcwd())
        select = sa.select(leases.c.token).where(leases.c.project_key == project)
        if self._db.dialect != "sqlite":  # SQLite's BEGIN IMMEDIATE already serializes
            select = select.with_for_update(read=True)
        if self._lease_here is None:
            self._lease_here = self._db.read(lambda conn: conn.execute(select).first()) is not None
        if not self._lease_here:
            return fenced(lambda: self._db.write(work))

        def checked(conn: Connection) -> T:
            row = conn.execute(select).first()
            if row is None or int(row[0]) != token:
                raise LeaseLostError(project, token)
            return work(conn)

        return self._db.write(checked)

    def _values(self, record: LineageRecord) -> dict[str, Any]:
        return {
            "workspace_id": self.workspace_id(record.workspace),
            "workspace": record.workspace,
            "woke": record.woke,
            "steps": msgspec.json.encode(record.steps).decode(),
            "extra": msgspec.json.encode(record.extra).decode(),
            "updated_ms": int(self._clock() * 1000),
        }

    def archive(self, into: Path, extra: Sequence[Path] = ()) -> Path | None:
        """Copy the record to ``into/lineage.json``, move ``extra`` there, reset the record.

        Files first, database last: if the reset fails the archive already holds
        everything, so nothing is lost.
        """
        workspace = self._last_workspace or os.getcwd()
        workspace_id = self.workspace_id(workspace)
        row = self._db.read(lambda conn: self._row(conn, workspace_id))
        present = [Path(p) for p in extra if Path(p).exists()]
        if row is None and not present:
            return None
        into = Path(into)
        names = [p.name for p in present] + (["lineage.json"] if row is not None else [])
        clashes = [n for n in names if (into / n).exists()] or (
            names if len(set(names)) != len(names) else []
        )
        if clashes:
            raise ArchiveConflictError(
                _(
                    "cannot archive into {folder}: {names} would be overwritten; nothing moved"
                ).format(folder=repr(str(into)), names=", ".join(clashes))
            )
        reset = (
            sa.update(lineage)
            .where(lineage.c.workspace_id == workspace_id)
            # the whole record starts over, what lineage keeps beside steps included
            # (words not yet heard belong to the archived conversation, not the next)
            .values(woke=0, steps="{}", extra="{}", updated_ms=int(self._clock() * 1000))
        )

        def work(conn: Connection) -> None:
            private_dir(into)
            if row is not None:
                document = {
                    "workspace": row.workspace,
                    "woke": row.woke,
                    "steps": json.loads(row.steps),
                }
                document.update(json.loads(row.extra))
                text = json.dumps(document, ensure_ascii=False, indent=2) + "\n"
                with replaced_atomically(into / "lineage.json") as out:  # 0600, any umask
                    out.write(text.encode("utf-8"))
            for path in present:
                shutil.move(str(path), str(into / path.name))
            if row is not None:
                conn.execute(reset)

        self._write(work)  # a fleet wake's archive is fenced like its saves
        return into

    def close(self) -> None:
        self._db.close()


def _raw(row: Row[Any]) -> bytes:
    """A damaged row as text a person can read and mend (its columns as stored)."""
    document = {
        "workspace": row.workspace,
        "woke": row.woke,
        "steps": row.steps,
        "extra": row.extra,
    }
    return (json.dumps(document, ensure_ascii=False, indent=2) + "\n").encode()


def _record(row: Row[Any] | None, workspace: str) -> LineageRecord | None:
    if row is None:
        return None
    try:
        steps = _STEPS.decode(row.steps)
        extra = _EXTRA.decode(row.extra)
    except msgspec.DecodeError:
        return None  # a damaged record reads as absent, like a corrupt lineage.json
    # The id matched: this is our lineage, whatever path saved it last.
    return LineageRecord(workspace=workspace, woke=row.woke, steps=steps, extra=extra)
