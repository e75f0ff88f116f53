"""Sessions and their entries.

Revision ID: 0001_initial
Revises:
Create Date: 2026-11-30
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001_initial"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "flower_sessions",
        sa.Column("id", _Id, primary_key=True, autoincrement=True),
        sa.Column("project_key", sa.Text(), nullable=False),
        sa.Column("session_id", sa.Text(), nullable=False),
        sa.Column("subpath", sa.Text(), nullable=False),
        sa.Column("created_ms", sa.BigInteger(), nullable=False),
        sa.Column("mtime_ms", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_flower_sessions"),
        sa.UniqueConstraint(
            "project_key",
            "session_id",
            "subpath",
            name="uq_flower_sessions_project_key_session_id_subpath",
        ),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_flower_sessions_session_id", "flower_sessions", ["session_id"])
    op.create_table(
        "flower_entries",
        sa.Column("seq", _Id, primary_key=True, autoincrement=True),
        sa.Column("session_pk", _Id, nullable=False),
        sa.Column("uuid", sa.Text(), nullable=True),
        sa.Column("type", sa.Text(), nullable=False),
        sa.Column("payload", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("seq", name="pk_flower_entries"),
        sa.ForeignKeyConstraint(
            ["session_pk"],
            ["flower_sessions.id"],
            name="fk_flower_entries_session_pk_flower_sessions",
            ondelete="CASCADE",
        ),
        sa.UniqueConstraint("session_pk", "uuid", name="uq_flower_entries_session_pk_uuid"),
    )
    op.create_index(
        "ix_flower_entries_session_pk_seq", "flower_entries", ["session_pk", "seq"]
    )


def downgrade() -> None:
    op.drop_index("ix_flower_entries_session_pk_seq", table_name="flower_entries")
    op.drop_table("flower_entries")
    op.drop_index("ix_flower_sessions_session_id", table_name="flower_sessions")
    op.drop_table("flower_sessions")
