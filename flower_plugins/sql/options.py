"""Backend options of the SQL stores (``[tool.flower.sessions.options]``).

Kept free of SQLAlchemy so registering the plugin costs nothing at CLI start-up.
"""

from __future__ import annotations

import msgspec


class SqlOptions(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    busy_timeout: float = 30.0
    """SQLite: seconds a writer waits for the write lock before giving up."""
    connect_timeout: int = 10
    """PostgreSQL: seconds to wait for the server when connecting."""
    pool_size: int = 5
    """PostgreSQL: connections kept open per process."""
    echo: bool = False
    """Log every SQL statement (SQLAlchemy's ``echo``)."""
