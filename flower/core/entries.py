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
from flower.core.i18n import _
from flower.core.records import Entry

_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder()
_SCALARS = (str, bool, int, type(None))


def _where(index: int, path: str = "") -> str:
    """``entry 3`` (or ``entry 3.message.content[0]``) in the active language."""
    if not path:
        return _("entry {index}").format(index=index)
    return _("entry {index}.{field}").format(index=index, field=path.removeprefix("."))


def _check_value(value: object, index: int, path: str) -> None:
    # Iterative would be faster only for pathological depth; transcripts are shallow.
    if isinstance(value, _SCALARS):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidEntryError(
                _("{where} is {value}, which JSON cannot carry").format(
                    where=_where(index, path), value=repr(value)
                )
            )
        return
    if isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                raise InvalidEntryError(
                    _("{where} has a non-string key {key}").format(
                        where=_where(index, path), key=repr(k)
                    )
                )
            _check_value(v, index, f"{path}.{k}")
        return
    if isinstance(value, list):
        for i, v in enumerate(value):
            _check_value(v, index, f"{path}[{i}]")
        return
    raise InvalidEntryError(
        _(
            "{where} is a {type}; entries hold only dict, list, str, int, float, bool and None"
        ).format(where=_where(index, path), type=type(value).__name__)
    )


def check_entry(entry: object, index: int = 0) -> Entry:
    """Raise :class:`InvalidEntryError` unless ``entry`` is a JSON-safe dict with a type."""
    if not isinstance(entry, dict):
        raise InvalidEntryError(
            _("{where} is a {type}, not a dict").format(
                where=_where(index), type=type(entry).__name__
            )
        )
    if not isinstance(entry.get("type"), str):
        raise InvalidEntryError(_("{where} has no string 'type' field").format(where=_where(index)))
    if "uuid" in entry and not isinstance(entry["uuid"], str | None):
        raise InvalidEntryError(_("{where} has a non-string 'uuid'").format(where=_where(index)))
    _check_value(entry, index, "")
    return entry


_PLAIN_LEAVES = frozenset((str, int, bool, type(None)))


def _is_plain(value: Any) -> bool:  # Any: mypy narrows no `kind is dict` test
    """True when ``value`` is built only of the exact JSON types (and finite floats).

    Such a value always survives a JSON round trip unchanged, so the append path can
    skip decoding what it just encoded. Exact ``type`` tests, not ``isinstance``: a
    subclass (an IntEnum, a dict subclass) answers False and takes the round trip.
    """
    kind = type(value)
    if kind is dict:
        for k, v in value.items():
            if type(k) is not str:
                return False
            if type(v) not in _PLAIN_LEAVES and not _is_plain(v):
                return False
        return True
    if kind is list:
        for v in value:  # noqa: SIM110 (a generator in all() is slower here)
            if type(v) not in _PLAIN_LEAVES and not _is_plain(v):
                return False
        return True
    if kind is float:
        return value - value == 0.0  # False for NaN and the infinities
    return kind in _PLAIN_LEAVES


def _encode_if_exact(entry: object) -> bytes | None:
    """Encoded bytes when decoding them gives back an equal entry, else ``None``.

    NaN becomes null, tuples lists, bytes base64 and non-string keys strings, so
    those must not pass. An entry of plain JSON types is exact by construction
    (:func:`_is_plain`, about half the cost of a decode); anything else is decoded
    and compared in C. The explaining walk (:func:`check_entry`) only runs to word a
    rejection.
    """
    if not isinstance(entry, dict) or not isinstance(entry.get("type"), str):
        return None
    if not isinstance(entry.get("uuid"), str | None):
        return None
    try:
        raw = _encoder.encode(entry)
    except UnicodeEncodeError:  # a lone surrogate: kept as its JSON escape
        escaped = _escaped(entry)
        return escaped if escaped is not None and decode_entry(escaped) == entry else None
    except Exception:
        return None
    try:
        if _is_plain(entry):
            return raw
    except RecursionError:
        pass  # deeper than the walk goes; the C round trip below still decides
    return raw if _decoder.decode(raw) == entry else None


MAX_DEPTH = 200
"""How deep an entry's lists and objects may nest, the entry itself being level 1.
JSON decoders recurse as far as the caller's stack allows: an entry near Python's
recursion limit could be stored and then fail to load (or load from one call stack and
not another), so anything deeper than a transcript ever holds is refused up front."""


def _brackets(raw: bytes) -> int:
    """Opening brackets in encoded JSON: an upper bound of its depth (strings count too)."""
    return raw.count(b"[") + raw.count(b"{")


def _nests_deeper(value: object, limit: int) -> bool:
    """Whether ``value`` nests lists and dicts more than ``limit`` levels; no recursion."""
    pending: list[tuple[Any, int]] = [(value, 1)] if isinstance(value, dict | list) else []
    while pending:
        node, level = pending.pop()
        children = node.values() if isinstance(node, dict) else node
        if level > limit:
            return True
        pending.extend((c, level + 1) for c in children if isinstance(c, dict | list))
    return False


def check_batch(entries: object) -> Sequence[Entry]:
    """Raise :class:`InvalidEntryError` unless ``entries`` is a list (or tuple): a dict,
    a generator or a string is refused as a whole, before anything reads it."""
    if not isinstance(entries, list | tuple):
        raise InvalidEntryError(
            _("entries must be a list of dicts, not a {type}").format(type=type(entries).__name__)
        )
    return entries


def encode_entries(entries: Sequence[Entry]) -> list[bytes]:
    """Validate every entry of a batch, then encode each to compact JSON bytes."""
    check_batch(entries)
    encoded = [_encode_if_exact(entry) for entry in entries]
    for i, (entry, raw) in enumerate(zip(entries, encoded, strict=True)):
        if (raw is None or _brackets(raw) > MAX_DEPTH) and _nests_deeper(entry, MAX_DEPTH):
            raise InvalidEntryError(
                _(
                    "{where} nests lists and objects more than {depth} levels deep; JSON "
                    "readers recurse, so it might not load back"
                ).format(where=_where(i), depth=MAX_DEPTH)
            )
        if raw is None:
            check_entry(entry, i)  # words the rejection when it can
            raise InvalidEntryError(
                _(
                    "{where} would not load back as given: it holds a value JSON cannot carry "
                    "exactly (a str subclass, say)"
                ).format(where=_where(i))
            )
    return encoded  # type: ignore[return-value]  # no None is left: each one raised


def encode_entry(entry: Entry) -> bytes:
    return encode_entries([entry])[0]


def decode_entry(raw: bytes | str) -> Entry:
    """One stored line. JSON that msgspec refuses but the standard allows is read too: a
    lone surrogate escape (``"\\ud83d"``), which Node writes for a string cut in the
    middle of an emoji, and Claude Code therefore does. Raises ``msgspec.DecodeError``."""
    try:
        return _decoder.decode(raw)
    except msgspec.DecodeError as exc:
        if b"\\u" not in (raw if isinstance(raw, bytes) else raw.encode("utf-8", "replace")):
            raise
        import json

        try:
            return json.loads(raw, parse_constant=_not_json)
        except (ValueError, RecursionError):
            raise exc from None


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def json_bytes(value: object) -> bytes:
    """Compact JSON of ``value``; a lone surrogate, which UTF-8 cannot carry, is kept as
    its escape (see :func:`_escaped`). Raises what msgspec raises for what is no JSON."""
    try:
        return _encoder.encode(value)
    except UnicodeEncodeError:
        raw = _escaped(value)
        if raw is None:
            raise
        return raw


def _escaped(value: object) -> bytes | None:
    """``value`` as compact JSON with every non-ASCII character escaped: the one way to
    store a string holding a lone surrogate, which UTF-8 cannot carry."""
    import json

    try:
        return json.dumps(value, separators=(",", ":"), allow_nan=False).encode("ascii")
    except (TypeError, ValueError, RecursionError):
        return None


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


def is_synthetic_error(entry: object) -> bool:
    """A harness-made assistant entry (API error text), never the model's own words."""
    if not isinstance(entry, dict) or entry.get("type") != "assistant":
        return False
    message = entry.get("message")
    return entry.get("isApiErrorMessage") is True or (
        isinstance(message, dict) and message.get("model") == "<synthetic>"
    )


def reported_usage(entry: object) -> dict[str, Any] | None:
    """``message.usage`` of an assistant entry the API answered; ``None`` for any other
    entry, a synthetic API-error entry included: its zero usage is no context size."""
    if not isinstance(entry, dict) or entry.get("type") != "assistant":
        return None
    if is_synthetic_error(entry):
        return None
    message = entry.get("message")
    usage = message.get("usage") if isinstance(message, dict) else None
    return usage if usage and isinstance(usage, dict) else None
