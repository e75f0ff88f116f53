"""The fleet's session leases: one writer per session, checked by every append.

Revision ID: 0005_fleet_leases
Revises: 0004_backfill_last_usage
Create Date: 2026-12-04
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005_fleet_leases"
down_revision: str | None = "0004_backfill_last_usage"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "flower_leases",
        sa.Column("project_key", sa.Text(), nullable=False),
        sa.Column("token", sa.BigInteger(), nullable=False),
        sa.Column("holder", sa.Text(), nullable=False),
        sa.Column("expires_ms", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("project_key", name="pk_flower_leases"),
    )


def downgrade() -> None:
    op.drop_table("flower_leases")
