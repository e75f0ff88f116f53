"""Lineage by workspace id; the last assistant usage kept on each session row.

Revision ID: 0002_lineage_usage
Revises: 0001_initial
Create Date: 2026-11-30
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002_lineage_usage"
down_revision: str | None = "0001_initial"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Batch mode may rebuild the table on SQLite; keep AUTOINCREMENT when it does.
_SESSIONS_KWARGS = {"sqlite_autoincrement": True}


def upgrade() -> None:
    with op.batch_alter_table("flower_sessions", table_kwargs=_SESSIONS_KWARGS) as batch:
        batch.add_column(sa.Column("last_usage", sa.Text(), nullable=True))
    op.create_table(
        "flower_lineage",
        sa.Column("workspace_id", sa.Text(), nullable=False),
        sa.Column("workspace", sa.Text(), nullable=False),
        sa.Column("woke", sa.Integer(), nullable=False),
        sa.Column("steps", sa.Text(), nullable=False),
        sa.Column("extra", sa.Text(), nullable=False),
        sa.Column("updated_ms", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("workspace_id", name="pk_flower_lineage"),
    )


def downgrade() -> None:
    op.drop_table("flower_lineage")
    # On SQLite this copies flower_sessions into a new table (foreign keys are off
    # during migrations, so flower_entries is left alone).
    with op.batch_alter_table("flower_sessions", table_kwargs=_SESSIONS_KWARGS) as batch:
        batch.drop_column("last_usage")
