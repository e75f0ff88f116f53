"""Checking and encoding transcript entries before any store writes them.

A store calls :func:`encode_entries` first, so an entry that is not JSON-safe is
rejected before a single byte of its batch reaches storage.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import msgspec

from flower.core.errors import InvalidEntryError
from flower.core.records import Entry

_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder()
_SCALARS = (str, bool, int, type(None))


def _check_value(value: Any, path: str) -> None:
    # Iterative would be faster only for pathological depth; transcripts are shallow.
    if isinstance(value, _SCALARS):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidEntryError(f"{path} is {value!r}, which JSON cannot carry")
        return
    if isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                raise InvalidEntryError(f"{path} has a non-string key {k!r}")
            _check_value(v, f"{path}.{k}")
        return
    if isinstance(value, list):
        for i, v in enumerate(value):
            _check_value(v, f"{path}[{i}]")
        return
    raise InvalidEntryError(
        f"{path} is a {type(value).__name__}; entries hold only dict, list, str, "
        "int, float, bool and None"
    )


def check_entry(entry: Any, index: int = 0) -> Entry:
    """Raise :class:`InvalidEntryError` unless ``entry`` is a JSON-safe dict with a type."""
    where = f"entry {index}"
    if not isinstance(entry, dict):
        raise InvalidEntryError(f"{where} is a {type(entry).__name__}, not a dict")
    if not isinstance(entry.get("type"), str):
        raise InvalidEntryError(f"{where} has no string 'type' field")
    if "uuid" in entry and not isinstance(entry["uuid"], str | None):
        raise InvalidEntryError(f"{where} has a non-string 'uuid'")
    _check_value(entry, where)
    return entry


def _encode_if_exact(entry: Any) -> bytes | None:
    """Encoded bytes when decoding them gives back an equal entry, else ``None``.

    The round trip runs in C and fails for everything the walk rejects (NaN becomes
    null, tuples lists, bytes base64, non-string keys strings), so the Python walk
    only runs to explain a rejection; it is 3-4x slower on the append hot path.
    """
    if not isinstance(entry, dict) or not isinstance(entry.get("type"), str):
        return None
    if not isinstance(entry.get("uuid"), str | None):
        return None
    try:
        raw = _encoder.encode(entry)
    except Exception:
        return None
    return raw if _decoder.decode(raw) == entry else None


def encode_entries(entries: Sequence[Entry]) -> list[bytes]:
    """Validate every entry of a batch, then encode each to compact JSON bytes."""
    encoded = [_encode_if_exact(entry) for entry in entries]
    for i, (entry, raw) in enumerate(zip(entries, encoded, strict=True)):
        if raw is None:
            check_entry(entry, i)
            encoded[i] = _encoder.encode(entry)
    return encoded  # type: ignore[return-value]


def encode_entry(entry: Entry) -> bytes:
    return _encoder.encode(check_entry(entry))


def decode_entry(raw: bytes | str) -> Entry:
    return _decoder.decode(raw)


def dedupe_batch(entries: Sequence[Entry]) -> list[Entry]:
    """Drop entries whose ``uuid`` already appeared earlier in the same batch."""
    seen: set[str] = set()
    kept: list[Entry] = []
    for entry in entries:
        uid = entry.get("uuid")
        if uid is not None:
            if uid in seen:
                continue
            seen.add(uid)
        kept.append(entry)
    return kept
