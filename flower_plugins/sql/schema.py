"""The one SQLAlchemy Core schema both dialects share; Alembic migrations own it.

``sessions`` holds one summary row per transcript (main or subpath) so listings,
``exists`` and ``last_usage`` never touch ``entries``. ``entries`` holds every entry
exactly as encoded, in insertion order (``seq``), and is only ever inserted into.

How ``seq`` orders a transcript differs by dialect. On PostgreSQL it comes from the
table's sequence and the ``(session_pk, seq)`` index serves loads. On SQLite it is
``session_pk * SEQ_SPAN + position``: the rowid table is then stored in (session,
insertion) order, a load is one range scan of the table itself, and an append writes
one index fewer (see :func:`seq_range`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from sqlalchemy import (
    BigInteger,
    Column,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    Table,
    Text,
    UniqueConstraint,
)

if TYPE_CHECKING:
    from sqlalchemy.schema import SchemaItem

# Named constraints: SQLite batch migrations cannot alter an unnamed constraint.
NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

VERSION_TABLE = "flower_alembic_version"
"""Our own version table, so a database shared with an application's Alembic is safe."""

HEAD_REVISION = "0005_fleet_leases"
"""The newest migration; a test checks it against the migration scripts' single head."""

SEQ_SPAN = 2**32
"""On SQLite, the ``seq`` values one session may use: a transcript of four billion entries."""

MAIN_SUBPATH = ""
"""``subpath`` of a main transcript: '' rather than NULL so the unique key holds."""

metadata = MetaData(naming_convention=NAMING_CONVENTION)

# A BIGINT key on Postgres; on SQLite an INTEGER PRIMARY KEY is the fast rowid alias.
_Id = BigInteger().with_variant(Integer(), "sqlite")

sessions = Table(
    "flower_sessions",
    metadata,
    Column("id", _Id, primary_key=True, autoincrement=True),
    Column("project_key", Text, nullable=False),
    Column("session_id", Text, nullable=False),
    Column("subpath", Text, nullable=False),
    Column("created_ms", BigInteger, nullable=False),
    Column("mtime_ms", BigInteger, nullable=False),
    Column("last_usage", Text, nullable=True),
    # Serves exists/load by key and, by its prefix, list_sessions and list_projects.
    # mtime_ms is deliberately not indexed: every append updates it, and an index on
    # it would cost one more page write per commit.
    UniqueConstraint("project_key", "session_id", "subpath"),
    Index(None, "session_id"),
    # AUTOINCREMENT: a deleted session's id is never handed to a new one, so an id
    # cached by another process can never point at the wrong transcript.
    sqlite_autoincrement=True,
)

entries = Table(
    "flower_entries",
    metadata,
    Column("seq", _Id, primary_key=True, autoincrement=True),
    Column(
        "session_pk",
        _Id,
        ForeignKey("flower_sessions.id", ondelete="CASCADE"),
        nullable=False,
    ),
    Column("uuid", Text, nullable=True),
    Column("type", Text, nullable=False),
    Column("payload", Text, nullable=False),
    # NULLs are distinct in a unique index on both dialects: entries without a uuid
    # always append, a repeated uuid in the same transcript is ignored.
    UniqueConstraint("session_pk", "uuid"),
    # SQLite needs no such index: there seq itself is clustered by session.
    Index(None, "session_pk", "seq").ddl_if(dialect="postgresql"),
)

lineage = Table(
    "flower_lineage",
    metadata,
    Column("workspace_id", Text, primary_key=True),
    Column("workspace", Text, nullable=False),
    Column("woke", Integer, nullable=False),
    Column("steps", Text, nullable=False),
    Column("extra", Text, nullable=False),
    Column("updated_ms", BigInteger, nullable=False),
)


leases = Table(
    "flower_leases",
    metadata,
    # One lease per project key: the fleet wakes one workspace on one worker at a time.
    Column("project_key", Text, primary_key=True),
    # The fencing token: raised by every take, checked by every append that carries one.
    Column("token", BigInteger, nullable=False),
    Column("holder", Text, nullable=False),
    Column("expires_ms", BigInteger, nullable=False),
)


def seq_range(session_pk: int) -> tuple[int, int]:
    """SQLite: the half-open ``[low, high)`` range of ``seq`` owned by one session.

    Its first entry gets ``low + 1``; each append continues after the largest ``seq``
    in the range, read inside the append's write transaction.
    """
    low = session_pk * SEQ_SPAN
    return low, low + SEQ_SPAN


def exists_on(
    dialect_name: str,
) -> Callable[[SchemaItem, str | None, str, bool, SchemaItem | None], bool]:
    """Alembic ``include_object``: leave out what ``ddl_if`` keeps off this dialect.

    Autogenerate compares the models with a database without asking ``ddl_if``, so
    SQLite would otherwise report the PostgreSQL-only index as missing.
    """

    def include(
        obj: SchemaItem, _name: str | None, _type: str, _reflected: bool, _other: SchemaItem | None
    ) -> bool:
        ddl_if = getattr(obj, "_ddl_if", None)
        return ddl_if is None or ddl_if.dialect in (None, dialect_name)

    return include
