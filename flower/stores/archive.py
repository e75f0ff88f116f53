"""The archive format of ``flower sessions archive``: sessions as gzip-compressed JSONL.

One ``{"key": ..., "modified_ms": ..., "entry": ...}`` per line: ``key`` is the
transcript's :class:`~flower.core.records.SessionKey` as a dict (a session's subagent
transcripts follow it, each with its own key), ``modified_ms`` the session's age when
archived (absent in older archives), ``entry`` the stored entry as it was. The file
is written atomically (0600); :func:`read_archive` checks every line,
:func:`import_archive` puts an archive back, idempotent by ``uuid``.

::

    from pathlib import Path
    from flower import open_session_store
    from flower.stores.archive import import_archive, write_archive

    with open_session_store() as store:
        write_archive(store, keys, Path("old.jsonl.gz"))
        import_archive(store, Path("old.jsonl.gz"))
"""

from __future__ import annotations

import contextlib
import gzip
import json
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from flower.core.errors import FlowerError, InvalidEntryError, UsageError
from flower.core.i18n import _
from flower.core.protocols import SessionStoreBase
from flower.core.records import Entry, SessionKey

IMPORT_BATCH = 500
"""Entries per append when an archive is put back."""


def _key_dict(key: SessionKey) -> dict[str, Any]:
    return {"project_key": key.project_key, "session_id": key.session_id, "subpath": key.subpath}


def write_archive(
    store: SessionStoreBase,
    keys: list[SessionKey],
    output: Path,
    ages: Mapping[SessionKey, int] | None = None,
) -> int:
    """Export ``keys`` (with their subkeys) to ``output`` (gzip JSONL, 0600), atomically;
    the number of entries written. A session's age in ``ages`` (ms) goes on each of its
    lines, for the import to keep."""
    from flower.core.entries import encode_entry
    from flower.core.fileperms import replaced_atomically
    from flower.stores.transcripts import transcripts

    count = 0
    try:
        # gzip closes (writes its trailer) before the file is fsynced and renamed
        with replaced_atomically(output) as raw, gzip.GzipFile(fileobj=raw, mode="wb") as out:
            for key in keys:
                age = (ages or {}).get(key)
                for transcript in transcripts(store, key):
                    line: dict[str, Any] = {"key": _key_dict(transcript)}
                    if age is not None:
                        line["modified_ms"] = age
                    head = json.dumps(line)[:-1].encode()
                    for entry in store.iter_entries(transcript):
                        out.write(head + b', "entry": ' + encode_entry(entry) + b"}\n")
                        count += 1
    except OSError as exc:
        raise FlowerError(
            _("cannot write {path}: {error}").format(path=output, error=exc.strerror or exc)
        ) from None
    return count


def check_new_archive(output: Path) -> None:
    """``output`` can take a new archive: named ``*.jsonl.gz`` and not there yet
    (archives never overwrite); else a :class:`~flower.core.errors.UsageError`."""
    if not output.name.endswith(".jsonl.gz"):
        raise UsageError(
            _("{path}: an archive is gzip-compressed JSON lines; name it *.jsonl.gz").format(
                path=output
            )
        )
    if output.exists():
        raise UsageError(
            _("{path} exists; pick a new file (archives never overwrite)").format(path=output)
        )


def write_checked_archive(
    store: SessionStoreBase,
    keys: list[SessionKey],
    output: Path,
    ages: Mapping[SessionKey, int] | None = None,
) -> int:
    """:func:`write_archive`, then every line read back: the number of entries, the
    same both ways, or a :class:`~flower.core.errors.FlowerError` (the sessions are
    then not to be deleted)."""
    written = write_archive(store, keys, output, ages)
    read_back = sum(1 for _ in read_archive(output))
    if read_back != written:
        raise FlowerError(
            _("{path}: wrote {written} entries, read back {read}; kept all").format(
                path=output, written=written, read=read_back
            )
        )
    return written


class ArchiveLine(NamedTuple):
    """One line of an archive."""

    key: SessionKey
    entry: Entry
    modified_ms: int | None  # the session's age when archived (None: not recorded)


def read_archive(path: Path) -> Iterator[ArchiveLine]:
    """Every line; a bad line is :class:`~flower.core.errors.InvalidEntryError` naming it."""
    from flower.core.entries import check_entry

    if not path.is_file():
        raise FlowerError(_("cannot read {path}: no such file").format(path=path))
    with gzip.open(path, "rb") as handle:
        lines = iter(handle)
        number = 0
        while True:
            try:
                line = next(lines, None)
            except (OSError, EOFError) as exc:
                raise InvalidEntryError(
                    _("{path}: not a complete gzip file ({error})").format(path=path, error=exc)
                ) from None
            if line is None:
                return
            number += 1
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                key = SessionKey(**row["key"])
                entry = check_entry(row["entry"], number)
                age = row.get("modified_ms")
                if age is not None and (not isinstance(age, int) or isinstance(age, bool)):
                    raise TypeError(_("modified_ms is {age!r}, not milliseconds").format(age=age))
            except (ValueError, KeyError, TypeError) as exc:
                raise InvalidEntryError(
                    _("{path}:{number}: not an archive line ({error})").format(
                        path=path, number=number, error=exc
                    )
                ) from None
            yield ArchiveLine(key, entry, age)


def is_gzip(path: Path) -> bool:
    """Whether ``path`` starts as a gzip file does (an archive, whatever its name)."""
    try:
        with path.open("rb") as handle:
            return handle.read(2) == b"\x1f\x8b"
    except OSError:  # unreadable or missing: the plain import says why
        return False


def import_archive(store: SessionStoreBase, path: Path) -> tuple[int, int]:
    """Append an archive back (idempotent by uuid); (lines read, transcripts touched).

    The whole file is checked first, so a bad line writes nothing.
    """
    from flower.stores.copy import SessionAges, new_anonymous

    total = sum(1 for _ in read_archive(path))
    batches: dict[SessionKey, list[Entry]] = {}
    fresh: dict[SessionKey, Callable[[Entry], bool]] = {}
    ages: dict[SessionKey, tuple[int, int | None]] = {}  # archived age, target's before
    dates = SessionAges(store, store)  # only its view of the target's times is used
    for key, entry, age in read_archive(path):
        if key not in fresh:
            fresh[key] = new_anonymous(store, key)[0]  # uuid-less entries restored before
            if age is not None and key.subpath is None:
                ages[key] = (age, dates.target(key))
        if not fresh[key](entry):
            continue
        batches.setdefault(key, []).append(entry)
        if len(batches[key]) >= IMPORT_BATCH:
            store.append(key, batches.pop(key))
    for key, batch in batches.items():
        store.append(key, batch)
    for key, (age, before) in ages.items():
        # a restored session is as old as it was; one written since keeps its own time
        with contextlib.suppress(NotImplementedError):
            store.set_modified(key, max(age, before or 0))
    return total, len(batches)


__all__ = [
    "ArchiveLine",
    "check_new_archive",
    "import_archive",
    "is_gzip",
    "read_archive",
    "write_archive",
    "write_checked_archive",
]
