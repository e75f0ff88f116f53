"""``flower ui``: a local, read-only web viewer of sessions, pruned views and runs."""
