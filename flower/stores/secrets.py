"""Where secrets appear in stored transcripts: what ``flower sessions scan`` reports.

A finding names the transcript, the entry's uuid, the kind of secret and the field it
is in (``message.content[0].text``); never the secret itself. The shapes are the
``secret_shapes`` plugin's (:func:`flower_plugins.secret_shapes.find_secrets`).

::

    from flower import open_session_store
    from flower.stores.copy import select_sessions
    from flower.stores.secrets import scan_session

    with open_session_store() as store:
        for key in select_sessions(store):
            for found in scan_session(store, key):
                print(found.session_id, found.uuid, found.kind, found.field)
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from flower.core.protocols import SessionStoreBase
from flower.core.records import SessionKey


@dataclass(frozen=True)
class Finding:
    """One kind of secret in one field of one entry."""

    project_key: str
    session_id: str
    subpath: str | None
    uuid: str | None
    kind: str
    field: str
    """Where in the entry, as a path: ``message.content[0].text``."""


def _strings(value: object, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(v, f"{path}.{k}" if path else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _strings(v, f"{path}[{i}]")


def scan_transcript(store: SessionStoreBase, key: SessionKey) -> Iterator[Finding]:
    """The secrets of one transcript (``key`` with its subpath, if any), in order."""
    from flower_plugins.secret_shapes import find_secrets

    for entry in store.iter_entries(key):
        for path, text in _strings(entry, ""):
            for kind in dict.fromkeys(kind for kind, _, _ in find_secrets(text)):
                yield Finding(
                    key.project_key, key.session_id, key.subpath, entry.get("uuid"), kind, path
                )


def scan_session(store: SessionStoreBase, key: SessionKey) -> Iterator[Finding]:
    """The secrets of a session: its main transcript, then its subagents'."""
    from flower.stores.transcripts import transcripts

    for transcript in transcripts(store, key):
        yield from scan_transcript(store, transcript)


__all__ = ["Finding", "scan_session", "scan_transcript"]
