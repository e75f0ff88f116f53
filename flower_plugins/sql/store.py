"""The SQL session store: one class for SQLite and PostgreSQL.

Hot path: an append is one short write transaction: insert the batch with ``ON
CONFLICT DO NOTHING`` on ``(session, uuid)``, then touch the session's summary row
(on SQLite, first read where the session's ``seq`` range ends; see schema.py).
The session row id is cached per process; if another process deleted the session
meanwhile, the foreign key refuses the insert and the append is redone with a fresh
row.

A store given a fleet lease token (see :mod:`flower.core.lease`) first checks, in the
append's own transaction, that the token is still the project's current one (on
PostgreSQL under a share lock on the lease row, so a takeover waits for the append or
the append sees the takeover): a worker that lost its task writes nothing.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from flower.core.entries import (
    check_batch,
    decode_entry,
    dedupe_batch,
    encode_entries,
    json_bytes,
    reported_usage,
)
from flower.core.errors import StoreDamagedError, StoreUnavailableError
from flower.core.i18n import _
from flower.core.keys import project_key as workspace_project_key
from flower.core.lease import (
    KEY_CHECK_PROJECT,
    LeaseLostError,
    lease_project,
    register_fence,
    unregister_fence,
)
from flower.core.protocols import SessionStoreBase
from flower.core.records import (
    Entry,
    SessionInfo,
    SessionKey,
    check_name,
    check_subpath,
    newest_first,
)
from flower_plugins.sql.engine import Database, marked_damaged
from flower_plugins.sql.schema import (
    MAIN_SUBPATH,
    entries,
    leases,
    lineage,
    seq_range,
    sessions,
)

if TYPE_CHECKING:
    from sqlalchemy.engine.interfaces import DBAPICursor

T = TypeVar("T")
_decode = msgspec.json.Decoder().decode
STREAM_CHUNK = 1000
ENTRY_COLUMNS = ("session_pk", "uuid", "type", "payload")
"""The inserted columns, in the order of the positional row tuples."""
CLUSTERED_ENTRY_COLUMNS = ("seq", *ENTRY_COLUMNS)
"""The same on SQLite, where the store numbers entries within their session."""


def _subpath(key: SessionKey) -> str:
    """The stored subpath, re-checking the key: a forged one never reaches SQL."""
    check_name("project_key", key.project_key)
    check_name("session_id", key.session_id)
    if key.subpath is None:
        return MAIN_SUBPATH
    return check_subpath(key.subpath)


ESCAPED_TEXT = "\ufffe"
"""Starts a ``uuid`` or ``type`` column value that holds its string JSON-escaped: one the
database cannot store as text (a lone surrogate, or NUL on PostgreSQL)."""


def column_text(value: str | None) -> str | None:
    """``value`` as the ``uuid`` and ``type`` columns store it: itself when the database
    can hold it as text, else ``ESCAPED_TEXT`` and its ASCII JSON escape. One to one, so
    the unique ``(session, uuid)`` index still tells every uuid apart."""
    if value is None or (value.isascii() and "\x00" not in value):
        return value
    if "\x00" not in value and not value.startswith(ESCAPED_TEXT):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            pass
        else:
            return value
    return ESCAPED_TEXT + json.dumps(value)


UsageCandidates = list[tuple[str | None, str]]
"""``(uuid column value, usage JSON)`` of a batch's entries that report a usage, last first."""


def _batch_usages(batch: Sequence[Entry]) -> UsageCandidates:
    """Each ``message.usage`` an assistant entry of the batch the API answered reports,
    from the last entry back; a uuid repeated in the batch counts once (the first), as
    it is stored. Which one becomes the session's is told in the transaction: the last
    one the batch adds, not one that a retry merely sends again."""
    found: UsageCandidates = []
    for entry in dedupe_batch(batch):
        usage = reported_usage(entry)
        if usage:
            found.append((column_text(entry.get("uuid")), json_bytes(usage).decode()))
    found.reverse()
    return found


class SqlSessionStore(SessionStoreBase):
    """Transcripts in ``flower_sessions`` / ``flower_entries`` (see schema.py)."""

    def __init__(
        self,
        db: Database,
        *,
        clock: Callable[[], float] = time.time,
        lease: int | None = None,
    ) -> None:
        self._db = db
        self._clock = clock
        self._lease = lease
        """The fleet's fencing token every append must still hold (None: no check)."""
        if lease is not None:  # the run directory's writes are checked here too
            register_fence(self)
        self._pks: dict[SessionKey, int] = {}
        self._clustered = db.dialect == "sqlite"
        dialect_insert: Callable[..., Any]  # the two dialects' insert, one signature
        if db.dialect == "sqlite":  # only the dialect in use is imported
            from sqlalchemy.dialects.sqlite import insert as dialect_insert
        else:
            from sqlalchemy.dialects.postgresql import insert as dialect_insert
        columns = CLUSTERED_ENTRY_COLUMNS if self._clustered else ENTRY_COLUMNS
        self._insert_entries = (
            dialect_insert(entries)
            .values({c: sa.bindparam(c) for c in columns})
            .on_conflict_do_nothing(index_elements=[entries.c.session_pk, entries.c.uuid])
        )
        # A new session's row, or nothing for one that exists. DO NOTHING takes no lock
        # on an existing row: every append then locks its session row last (the touch
        # below), after its entries, so two writers never wait on each other in a cycle.
        self._insert_session = (
            dialect_insert(sessions)
            .values(
                {
                    c: sa.bindparam(c)
                    for c in ("project_key", "session_id", "subpath", "created_ms", "mtime_ms")
                }
            )
            .on_conflict_do_nothing(
                index_elements=[sessions.c.project_key, sessions.c.session_id, sessions.c.subpath]
            )
            .returning(sessions.c.id)
        )
        self._touch_session = (
            sa.update(sessions)
            .where(sessions.c.id == sa.bindparam("pk"))
            .values(
                mtime_ms=sa.bindparam("now"),
                last_usage=sa.func.coalesce(sa.bindparam("usage"), sessions.c.last_usage),
            )
        )
        self._sql_insert_entries, order = db.compile_positional(self._insert_entries)
        if order != columns:
            raise AssertionError(f"unexpected parameter order {order}")
        in_session_range = (
            entries.c.seq > sa.bindparam("low"),
            entries.c.seq < sa.bindparam("high"),
        )
        self._sql_last_seq, order = db.compile_positional(
            sa.select(sa.func.max(entries.c.seq)).where(*in_session_range)
        )
        if order != ("low", "high"):
            raise AssertionError(f"unexpected parameter order {order}")
        self._sql_holds_uuid, order = db.compile_positional(
            sa.select(entries.c.seq).where(
                entries.c.session_pk == sa.bindparam("pk"), entries.c.uuid == sa.bindparam("uuid")
            )
        )
        if order != ("pk", "uuid"):
            raise AssertionError(f"unexpected parameter order {order}")
        self._integrity_error = db.engine.dialect.loaded_dbapi.IntegrityError
        current_token = sa.select(leases.c.token).where(
            leases.c.project_key == sa.bindparam("project_key")
        )
        if db.dialect != "sqlite":  # SQLite's BEGIN IMMEDIATE already serializes writers
            current_token = current_token.with_for_update(read=True)
        self._sql_lease_token = db.compile(current_token)
        self._sql_insert_session = db.compile(self._insert_session)
        self._sql_touch_session = db.compile(self._touch_session)
        self._select_pk = sa.select(sessions.c.id).where(
            sessions.c.project_key == sa.bindparam("project_key"),
            sessions.c.session_id == sa.bindparam("session_id"),
            sessions.c.subpath == sa.bindparam("subpath"),
        )
        # On SQLite a range of the table itself; a filter on session_pk would send
        # the planner to the uuid index and a sort.
        self._select_payloads = (
            sa.select(entries.c.payload)
            .where(
                *in_session_range
                if self._clustered
                else (entries.c.session_pk == sa.bindparam("pk"),)
            )
            .order_by(entries.c.seq)
        )
        self._sql_select_pk = db.compile(self._select_pk)
        # the same lookup read from the table itself, past its (maybe damaged) index
        self._sql_scan_pk = self._sql_select_pk.replace(
            "FROM flower_sessions", "FROM flower_sessions NOT INDEXED", 1
        )
        self._sql_select_payloads = db.compile(self._select_payloads)
        # iter_entries: one page after the last seq it yielded
        page = sa.select(entries.c.seq, entries.c.payload).where(
            *in_session_range
            if self._clustered
            else (entries.c.session_pk == sa.bindparam("pk"), entries.c.seq > sa.bindparam("after"))
        )
        self._sql_page = f"{db.compile(page.order_by(entries.c.seq))} LIMIT {STREAM_CHUNK}"

    @property
    def database(self) -> Database:
        return self._db

    @property
    def url(self) -> str:
        """The URL this store was opened with (password included: do not print it)."""
        return self._db.url.render_as_string(hide_password=False)

    # -- writing -----------------------------------------------------------------

    def append(self, key: SessionKey, entries_: Sequence[Entry]) -> None:
        cached = self._pks.get(key)
        if cached is None:
            _subpath(key)  # keys already written through were checked then
        check_batch(entries_)
        if not entries_:
            return
        encoded = encode_entries(entries_)  # rejects a bad batch before any write
        rows = [
            (column_text(entry.get("uuid")), column_text(entry["type"]), raw.decode())
            for entry, raw in zip(entries_, encoded, strict=True)
        ]
        usages = _batch_usages(entries_)
        now = int(self._clock() * 1000)
        integrity_error = self._integrity_error
        try:
            self._db.raw_write(partial(self._append_tx, key, rows, usages, now, cached))
        except integrity_error as exc:
            if cached is None:
                raise self._db.translate(exc) from exc
            # Another process deleted this session since we cached its row id.
            self._pks.pop(key, None)
            try:
                self._db.raw_write(partial(self._append_tx, key, rows, usages, now, None))
            except integrity_error as again:
                raise self._db.translate(again) from again

    def _append_tx(
        self,
        key: SessionKey,
        rows: list[tuple[str | None, str | None, str]],
        usages: UsageCandidates,
        now: int,
        pk: int | None,
        cursor: Any,  # DBAPICursor declares fetchone() optional; MAX() always gives a row
    ) -> None:
        if self._lease is not None and key.project_key != KEY_CHECK_PROJECT:
            self._check_lease(cursor, key.project_key, self._lease)
        if pk is None:
            pk = self._session_pk(cursor, key, now)
        usage = self._added_usage(cursor, pk, usages) if usages else None
        if self._clustered:
            low, high = seq_range(pk)
            cursor.execute(self._sql_last_seq, (low, high))
            last = cursor.fetchone()[0] or low
            numbered = [(last + n, pk, *row) for n, row in enumerate(rows, 1)]
            cursor.executemany(self._sql_insert_entries, numbered)
        else:
            cursor.executemany(self._sql_insert_entries, [(pk, *row) for row in rows])
        if cursor.rowcount:
            cursor.execute(self._sql_touch_session, {"pk": pk, "now": now, "usage": usage})
        self._pks[key] = pk

    def _session_pk(self, cursor: DBAPICursor, key: SessionKey, now: int) -> int:
        """The session's row id, its row created if it is new; an existing row is not
        locked (an existing session keeps its time: only written entries date it)."""
        names = {
            "project_key": key.project_key,
            "session_id": key.session_id,
            "subpath": key.subpath or MAIN_SUBPATH,
        }
        while True:
            cursor.execute(self._sql_insert_session, {**names, "created_ms": now, "mtime_ms": now})
            row = cursor.fetchone()
            if row is None:  # it exists: read its id (committed, so visible now)
                cursor.execute(self._sql_select_pk, names)
                row = cursor.fetchone()
            if row is not None:
                return int(row[0])
            # deleted by another writer between the two statements: create it again

    def _added_usage(self, cursor: DBAPICursor, pk: int, usages: UsageCandidates) -> str | None:
        """The usage of the last reporting entry that this append adds (before inserting:
        an entry the session already holds is skipped, so its usage is no newer)."""
        for uuid, usage in usages:
            if uuid is None:
                return usage
            cursor.execute(self._sql_holds_uuid, (pk, uuid))
            if cursor.fetchone() is None:
                return usage
        return None

    # -- the fleet's lease (see flower.core.lease) ---------------------------------

    def _check_lease(self, cursor: DBAPICursor, project_key: str, token: int) -> None:
        """In the caller's write transaction: ``token`` is still ``project_key``'s
        (on PostgreSQL the lease row stays share-locked until the transaction ends)."""
        cursor.execute(self._sql_lease_token, {"project_key": project_key})
        row = cursor.fetchone()
        if row is None or int(row[0]) != token:
            raise LeaseLostError(project_key, token)

    def fenced(self, write: Callable[[], T]) -> T:
        """Run ``write`` (a write to the run directory: lineage, the manifest) inside a
        write transaction that first checks this store's lease, as an append does: a
        takeover waits until ``write`` is done, or ``write`` sees it and does not run."""
        token = self._lease
        if token is None:
            return write()
        return self.under_lease(lease_project() or workspace_project_key(os.getcwd()), token, write)

    def under_lease(self, project_key: str, token: int, write: Callable[[], T]) -> T:
        """Run ``write`` in a write transaction that first checks that ``token`` is still
        ``project_key``'s lease (:class:`~flower.core.lease.LeaseLostError`, ``write``
        not run, when it is not); the lease row stays locked until ``write`` is done."""

        def work(cursor: DBAPICursor) -> T:
            self._check_lease(cursor, project_key, token)
            return write()

        return self._db.raw_write(work)

    def take_lease(
        self, project_key: str, holder: str, ttl_s: float
    ) -> tuple[int, str | None] | float:
        """Take the lease of ``project_key`` for ``holder`` for ``ttl_s`` seconds.

        Granted when nobody holds it, its holder let it expire, or ``holder`` holds it
        already: returns the new fencing token (every take raises it) and the previous
        holder (None if there was none or it was ``holder``). Held by another live
        holder: returns the seconds until it expires.
        """
        now = int(self._clock() * 1000)
        expires = now + int(ttl_s * 1000)

        def work(conn: Connection) -> tuple[int, str | None] | float:
            select = sa.select(leases.c.token, leases.c.holder, leases.c.expires_ms).where(
                leases.c.project_key == project_key
            )
            if self._db.dialect != "sqlite":
                select = select.with_for_update()
            row = conn.execute(select).first()
            if row is None:
                conn.execute(
                    sa.insert(leases).values(
                        project_key=project_key, token=1, holder=holder, expires_ms=expires
                    )
                )
                return 1, None
            token, previous, until = int(row[0]), str(row[1]), int(row[2])
            if previous != holder and until > now:
                return (until - now) / 1000
            conn.execute(
                sa.update(leases)
                .where(leases.c.project_key == project_key)
                .values(token=token + 1, holder=holder, expires_ms=expires)
            )
            return token + 1, None if previous == holder else previous

        for attempt in (1, 2):
            try:
                return self._db.write(work)
            except sa.exc.IntegrityError:  # another taker inserted the row first
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def renew_lease(self, project_key: str, token: int, ttl_s: float) -> bool:
        """Extend the lease ``token`` holds; False when it no longer holds it."""
        expires = int(self._clock() * 1000) + int(ttl_s * 1000)
        update = (
            sa.update(leases)
            .where(leases.c.project_key == project_key, leases.c.token == token)
            .values(expires_ms=expires)
        )
        return bool(self._db.write(lambda conn: conn.execute(update).rowcount))

    def release_lease(self, project_key: str, token: int) -> None:
        """Let the lease ``token`` holds go at once (the next take needs no wait)."""
        update = (
            sa.update(leases)
            .where(leases.c.project_key == project_key, leases.c.token == token)
            .values(expires_ms=0)
        )
        self._db.write(lambda conn: conn.execute(update))

    def delete(self, key: SessionKey) -> None:
        _subpath(key)
        where = [sessions.c.project_key == key.project_key, sessions.c.session_id == key.session_id]
        if key.subpath is not None:
            where.append(sessions.c.subpath == key.subpath)
        self._db.write(lambda conn: conn.execute(sa.delete(sessions).where(*where)))
        for cached in list(self._pks):
            same_session = cached.main == key.main
            if same_session and (key.subpath is None or cached.subpath == key.subpath):
                del self._pks[cached]

    def set_modified(self, key: SessionKey, mtime_ms: int) -> None:
        where = [
            sessions.c.project_key == key.project_key,
            sessions.c.session_id == key.session_id,
            sessions.c.subpath == MAIN_SUBPATH,
        ]
        update = sa.update(sessions).where(*where).values(mtime_ms=int(mtime_ms))
        self._db.write(lambda conn: conn.execute(update))

    # -- reading -----------------------------------------------------------------

    def _pk(self, conn: Connection, key: SessionKey) -> int | None:
        params = {
            "project_key": key.project_key,
            "session_id": key.session_id,
            "subpath": _subpath(key),
        }
        return conn.execute(self._select_pk, params).scalar()

    def _payload_params(self, pk: int) -> dict[str, int]:
        if self._clustered:
            low, high = seq_range(pk)
            return {"low": low, "high": high}
        return {"pk": pk}

    def load(self, key: SessionKey) -> list[Entry] | None:
        _subpath(key)
        params = {
            "project_key": key.project_key,
            "session_id": key.session_id,
            "subpath": key.subpath or MAIN_SUBPATH,
        }

        def work(cursor: Any) -> list[Entry] | None:  # iterated: DBAPICursor declares no __iter__
            cursor.execute(self._sql_select_pk, params)
            row = cursor.fetchone()
            if row is None:
                return None
            cursor.execute(self._sql_select_payloads, self._payload_params(row[0]))
            # each row decoded as the cursor yields it: no list of every payload first
            entries: list[Entry] = []
            append = entries.append
            for (payload,) in cursor:
                try:
                    append(_decode(payload))
                except msgspec.DecodeError:  # a lone surrogate escape: the lenient decoder
                    append(self._decode_stored(key, payload))
            return entries

        loaded = self._db.raw_read(work)
        if loaded is None:
            self._check_missing(key, params)
        else:
            self._check_links(key, loaded)
        return loaded

    # -- noticing damage ---------------------------------------------------------
    # SQLite keeps no checksums: a damaged page may read as fewer rows, or none, without
    # an error. What a load returns is checked against what the file itself says; a
    # doubt is settled by SQLite's quick_check, and damage found is never written into.

    def _decode_stored(self, key: SessionKey, payload: bytes | str) -> Entry:
        try:
            return decode_entry(payload)
        except (msgspec.DecodeError, ValueError):
            raise self._db.found_damaged(
                _("session {session}: an entry is not JSON").format(session=key.session_id)
            ) from None

    def _check_links(self, key: SessionKey, loaded: Sequence[Entry]) -> None:
        """A chain whose parent links point at entries the load did not return is a
        load that came back short, when SQLite finds the file damaged; an imported
        transcript may hold such links on its own, and a sound file is believed."""
        if self._db.dialect != "sqlite" or not loaded:
            return
        uuids = {entry.get("uuid") for entry in loaded}
        for entry in loaded:
            parent = entry.get("parentUuid")
            if isinstance(parent, str) and parent not in uuids:
                break
        else:
            return
        self._settle(key, len(loaded))

    def _check_missing(self, key: SessionKey, params: dict[str, str]) -> None:
        """A session the key index does not find, but the table itself holds: the index
        is damaged (a fresh start would write into the damaged file)."""
        if self._db.dialect != "sqlite":
            return

        def scan(cursor: DBAPICursor) -> Any:
            cursor.execute(self._sql_scan_pk, params)
            return cursor.fetchone()

        if self._db.raw_read(scan) is not None:
            raise self._db.found_damaged(
                _("session {session}: its index row is missing").format(session=key.session_id)
            )

    def _settle(self, key: SessionKey, count: int) -> None:
        why = self._db.check_damage(thorough=True)
        if why is not None:
            read = _("session {session}: {count} entries read").format(
                session=key.session_id, count=count
            )
            raise self._db.found_damaged(f"{read}; {why}")

    def iter_entries(self, key: SessionKey) -> Iterator[Entry]:
        """Stream a transcript in pages of :data:`STREAM_CHUNK` entries: memory stays
        bounded for any length. Each page is its own short read after the last ``seq``
        yielded, so a connection dropped between or during pages costs a re-read of one
        page, never the stream (and no server-side cursor is left to close)."""
        return self._stream(key, self._sql_select_pk)

    def salvage_entries(self, key: SessionKey) -> Iterator[Entry]:
        """:meth:`iter_entries` for ``flower sessions repair``: the session is found in
        the sessions table itself, past a key index that may be damaged."""
        return self._stream(key, self._sql_scan_pk if self._clustered else self._sql_select_pk)

    def _stream(self, key: SessionKey, select_pk: str) -> Iterator[Entry]:
        _subpath(key)
        params = {
            "project_key": key.project_key,
            "session_id": key.session_id,
            "subpath": key.subpath or MAIN_SUBPATH,
        }
        pk: int | None = None
        after = 0

        def page(cursor: DBAPICursor) -> list[tuple[int, Any]]:
            nonlocal pk
            if pk is None:
                cursor.execute(select_pk, params)
                row = cursor.fetchone()
                if row is None:
                    return []
                pk = int(row[0])
            bounds = self._payload_params(pk)
            if self._clustered:
                bounds["low"] = max(bounds["low"], after)
            else:
                bounds["after"] = after
            cursor.execute(self._sql_page, bounds)
            return list(cursor.fetchall())

        while True:
            rows = self._db.raw_read(page)
            for seq, payload in rows:
                yield self._decode_stored(key, payload)
                after = seq
            if len(rows) < STREAM_CHUNK:
                return

    def exists(self, key: SessionKey) -> bool:
        return self._db.read(lambda conn: self._pk(conn, key)) is not None

    # Listings are ordered here, by code point, not by the database: a server's
    # collation (say en-US, which ignores case and punctuation) must not change the
    # order one backend lists in from another's.

    def list_sessions(self, project_key: str) -> list[SessionInfo]:
        check_name("project_key", project_key)
        query = sa.select(sessions.c.session_id, sessions.c.mtime_ms).where(
            sessions.c.project_key == project_key, sessions.c.subpath == MAIN_SUBPATH
        )
        rows = self._db.read(lambda conn: conn.execute(query).all())
        return newest_first([SessionInfo(session_id=sid, mtime_ms=mtime) for sid, mtime in rows])

    def list_projects(self) -> list[str]:
        query = sa.select(sessions.c.project_key).distinct()
        return sorted(self._db.read(lambda conn: conn.execute(query).scalars().all()))

    def list_subkeys(self, key: SessionKey) -> list[str]:
        _subpath(key)
        query = sa.select(sessions.c.subpath).where(
            sessions.c.project_key == key.project_key,
            sessions.c.session_id == key.session_id,
            sessions.c.subpath != MAIN_SUBPATH,
        )
        return sorted(self._db.read(lambda conn: conn.execute(query).scalars().all()))

    def find_session(self, session_id: str) -> SessionKey | None:
        check_name("session_id", session_id)
        query = sa.select(sessions.c.project_key, sessions.c.mtime_ms).where(
            sessions.c.session_id == session_id, sessions.c.subpath == MAIN_SUBPATH
        )
        rows = self._db.read(lambda conn: conn.execute(query).all())
        if not rows:
            return None
        project, _ = min(rows, key=lambda row: (-row[1], row[0]))  # the newest
        return SessionKey(project, session_id)

    def damage(self) -> str | None:
        """Why this database is damaged (found earlier, or by SQLite's
        ``integrity_check`` now), or None when it is sound."""
        if self._db.damaged is not None:
            return self._db.damaged
        path = self._db.sqlite_path
        found = marked_damaged(path) if path else None
        if found is not None:
            return found
        try:
            return self._db.check_damage(thorough=True)
        except StoreDamagedError:
            return self._db.damaged

    def copy_lineage_into(self, target: SqlSessionStore) -> int:
        """Copy every lineage record this database still gives (a SQL lineage store
        sharing the file) into ``target``'s database, keeping any it holds already: how
        many were read. For ``flower sessions repair``."""
        columns = [c.name for c in lineage.c]
        scan = f"SELECT {', '.join(columns)} FROM {lineage.name}"

        def rows(cursor: DBAPICursor) -> list[tuple[Any, ...]]:
            cursor.execute(scan)
            return list(cursor.fetchall())

        try:
            found = self._db.raw_read(rows)
        except StoreUnavailableError:
            return 0
        if found:
            insert = sa.insert(lineage).prefix_with("OR IGNORE", dialect="sqlite")
            target.database.write(
                lambda conn: conn.execute(
                    insert, [dict(zip(columns, row, strict=True)) for row in found]
                )
            )
        return len(found)

    def readable_keys(self) -> list[SessionKey]:
        """Every transcript's key (subpaths too) that the sessions table itself still
        gives, read past its indexes, row by row where a damaged page stops a scan: what
        ``flower sessions repair`` saves."""
        columns = "project_key, session_id, subpath"
        scan = f"SELECT {columns} FROM flower_sessions NOT INDEXED"
        if self._db.dialect != "sqlite":
            scan = f"SELECT {columns} FROM flower_sessions"

        def rows(cursor: DBAPICursor) -> list[tuple[str, str, str]]:
            cursor.execute(scan)
            return list(cursor.fetchall())

        try:
            found = self._db.raw_read(rows)
        except StoreUnavailableError:
            found = self._rows_one_by_one(columns)
        keys = []
        for project, session, subpath in found:
            try:
                keys.append(SessionKey(project, session, subpath or None))
            except ValueError:  # a damaged name: not a key to write under
                continue
        return keys

    def _rows_one_by_one(self, columns: str) -> list[tuple[str, str, str]]:
        def highest(cursor: DBAPICursor) -> int:
            cursor.execute("SELECT seq FROM sqlite_sequence WHERE name = 'flower_sessions'")
            row = cursor.fetchone()
            return int(row[0]) if row else 0

        try:
            top = self._db.raw_read(highest)
        except StoreUnavailableError:
            top = 0
        found: list[tuple[str, str, str]] = []
        for pk in range(1, max(top, 1000) + 1):

            def one(cursor: DBAPICursor, pk: int = pk) -> Any:
                cursor.execute(f"SELECT {columns} FROM flower_sessions WHERE id = ?", (pk,))
                return cursor.fetchone()

            try:
                row = self._db.raw_read(one)
            except StoreUnavailableError:
                continue
            if row is not None:
                found.append(row)
        return found

    def last_usage(self, key: SessionKey) -> dict[str, Any] | None:
        query = sa.select(sessions.c.last_usage).where(
            sessions.c.project_key == key.project_key,
            sessions.c.session_id == key.session_id,
            sessions.c.subpath == _subpath(key),
        )
        raw = self._db.read(lambda conn: conn.execute(query).scalar())
        return None if raw is None else decode_entry(raw)

    def close(self) -> None:
        if self._lease is not None:
            unregister_fence(self)
        self._pks.clear()
        self._db.close()
