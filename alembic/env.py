"""Alembic environment for flower's SQL stores.

flower runs these migrations itself (``flower db upgrade``, or on first use of a
SQLite file) and hands in a live connection that is already inside a locked
transaction; there is no alembic.ini and no logging configuration here.
"""

from alembic import context
from flower_plugins.sql.schema import VERSION_TABLE, exists_on, metadata

connection = context.config.attributes.get("connection")
if connection is None or context.is_offline_mode():
    raise RuntimeError(
        "flower's migrations run through `flower db upgrade`, which passes a live connection"
    )

context.configure(
    connection=connection,
    target_metadata=metadata,
    version_table=VERSION_TABLE,
    render_as_batch=True,  # SQLite cannot ALTER most things: copy-and-move instead
    compare_type=True,
    include_object=exists_on(connection.dialect.name),
)

with context.begin_transaction():
    context.run_migrations()
