"""Fill ``last_usage`` for sessions written before 0002 added it.

A session written at 0001 had no usage on its row, so its context size (the wake
banner, the relay threshold) stayed unknown until its next assistant turn. Each such
session now gets the usage of its newest assistant entry the API answered: a synthetic
API-error entry's zero usage is no context size. Sealed (encrypted) entries keep that
usage in the clear, so they count too. Data only: the downgrade has nothing to undo.

Revision ID: 0004_backfill_last_usage
Revises: 0003_sqlite_clustered_entries
Create Date: 2026-11-30
"""

import json
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0004_backfill_last_usage"
down_revision: str | None = "0003_sqlite_clustered_entries"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_UNFILLED = sa.text(
    "SELECT id FROM flower_sessions WHERE last_usage IS NULL AND EXISTS "
    "(SELECT 1 FROM flower_entries WHERE session_pk = flower_sessions.id "
    "AND type = 'assistant')"
)
_NEWEST_FIRST = sa.text(
    "SELECT payload FROM flower_entries WHERE session_pk = :pk AND type = 'assistant' "
    "ORDER BY seq DESC"
)
_FILL = sa.text("UPDATE flower_sessions SET last_usage = :usage WHERE id = :pk")


def _usage(payload: str) -> dict[str, Any] | None:
    """What ``flower.core.entries.reported_usage`` reads, frozen as migrations must be."""
    try:
        entry = json.loads(payload)
    except ValueError:
        return None
    if not isinstance(entry, dict):
        return None
    message = entry.get("message")
    if not isinstance(message, dict):
        return None
    if entry.get("isApiErrorMessage") is True or message.get("model") == "<synthetic>":
        return None
    usage = message.get("usage")
    return usage if usage and isinstance(usage, dict) else None


def upgrade() -> None:
    bind = op.get_bind()
    for (pk,) in bind.execute(_UNFILLED).fetchall():
        for (payload,) in bind.execute(_NEWEST_FIRST, {"pk": pk}):
            usage = _usage(payload)
            if usage is not None:
                bind.execute(_FILL, {"usage": json.dumps(usage), "pk": pk})
                break


def downgrade() -> None:
    pass
