"""SQLite: entries numbered per session, so the table itself is the load index.

Each entry's ``seq`` becomes ``session_pk * 2**32 + position`` (insertion order kept)
and the ``(session_pk, seq)`` index, now redundant, is dropped: one index fewer to
write on every append. PostgreSQL is unchanged.

Revision ID: 0003_sqlite_clustered_entries
Revises: 0002_lineage_usage
Create Date: 2026-11-30
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0003_sqlite_clustered_entries"
down_revision: str | None = "0002_lineage_usage"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_SPAN = 2**32  # flower_plugins.sql.schema.SEQ_SPAN, frozen here as migrations must be
_INDEX = "ix_flower_entries_session_pk_seq"


def _sqlite() -> bool:
    return op.get_bind().dialect.name == "sqlite"


def upgrade() -> None:
    if not _sqlite():
        return
    op.execute("CREATE TEMP TABLE flower_renumber (old INTEGER PRIMARY KEY, new INTEGER NOT NULL)")
    op.execute(
        "INSERT INTO flower_renumber (old, new) SELECT seq, "
        f"session_pk * {_SPAN} + row_number() OVER (PARTITION BY session_pk ORDER BY seq) "
        "FROM flower_entries"
    )
    # Two steps, through negative numbers, so no new seq collides with an old one.
    op.execute("UPDATE flower_entries SET seq = -seq")
    op.execute(
        "UPDATE flower_entries SET seq = "
        "(SELECT new FROM flower_renumber WHERE old = -flower_entries.seq)"
    )
    op.execute("DROP TABLE flower_renumber")
    op.drop_index(_INDEX, table_name="flower_entries")


def downgrade() -> None:
    if not _sqlite():
        return
    # The numbers stay: the older code appends after the largest seq, so every
    # session keeps its insertion order.
    op.create_index(_INDEX, "flower_entries", ["session_pk", "seq"])
