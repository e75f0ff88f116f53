"""Encryption at rest: a wrapper that seals entry payloads over any session store.

Each entry is stored as its clear index fields (see :data:`CLEAR_FIELDS`, plus
``message.usage`` of assistant entries the API answered) and one ``_flower_enc`` field
holding the whole entry encrypted with AES-256-GCM under the current key::

    {"type": "user", "uuid": "...", "parentUuid": "...", "sessionId": "...",
     "timestamp": "...", "_flower_enc": {"v": 1, "kid": "<key id>", "n": "<nonce>",
     "ct": "<ciphertext + tag>"}}

The authenticated data binds the ciphertext to its key id, ``type`` and ``uuid``, so
a ciphertext moved onto another entry fails to open. Loading returns the decrypted
entry, deep-equal to what was appended; entries written before encryption was turned
on load as they are. An entry appended already sealed (copied raw from an encrypted
store) is never sealed twice: it is stored as it is when the keyring opens it, and
refused otherwise. A key-check record (the hidden session
``flower-encryption/key-check``) holds a sealed marker per key id, checked before the
first read or write: a wrong key is an :class:`EncryptionKeyError`, and nothing is
ever written under it. Only writes add markers. See docs/security.md.
"""

from __future__ import annotations

import base64
import logging
import os
import threading
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeGuard

import msgspec

from flower.core.entries import check_batch, decode_entry, encode_entries, reported_usage
from flower.core.errors import InvalidEntryError, InvalidKeyError
from flower.core.i18n import _
from flower.core.lease import KEY_CHECK_PROJECT
from flower.core.protocols import SessionStoreBase
from flower.core.records import Entry, Leftover, SessionInfo, SessionKey
from flower.stores.keyring import KEY_ENV, EncryptionKeyError, Keyring, key_id
from flower.stores.transcripts import transcripts

if TYPE_CHECKING:
    from flower.core.config import Settings

log = logging.getLogger(__name__)

ENC = "_flower_enc"
VERSION = 1
NONCE_BYTES = 12
CLEAR_FIELDS = ("type", "uuid", "parentUuid", "sessionId", "timestamp")
CHECK_KEY = SessionKey(KEY_CHECK_PROJECT, "key-check")
CHECK_TYPE = "flower-key-check"
CHECK_PLAINTEXT = b"flower key check v1"
STAGING_SUFFIX = ".flower-rekey"
"""Sessions being re-encrypted by ``flower sessions rekey`` (hidden from listings)."""


class DecryptWarning(UserWarning):
    """An entry that cannot be decrypted (truncated or altered); the rest still loads."""


@dataclass(frozen=True)
class DecryptProblem:
    """One stored entry that did not open: where, which, and why (never its content)."""

    key: SessionKey
    index: int
    uuid: str | None
    reason: str


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _aad(kid: str, entry_type: object, uuid: object) -> bytes:
    # surrogatepass: a lone surrogate in a type or uuid is valid JSON; other text is UTF-8
    text = f"flower/{VERSION}\x00{kid}\x00{entry_type}\x00{uuid or ''}"
    return text.encode("utf-8", "surrogatepass")


def is_sealed(stored: Entry) -> bool:
    return isinstance(stored, dict) and isinstance(stored.get(ENC), dict)


def sealed_key_id(stored: Entry) -> str | None:
    """The key id a stored entry was sealed with; ``None`` for a clear entry."""
    enc = stored.get(ENC)
    return enc.get("kid") if isinstance(enc, dict) else None


class Codec:
    """Seals entries with the keyring's current key; opens them with any of its keys."""

    def __init__(self, keyring: Keyring) -> None:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        self.keyring = keyring
        self.kid = keyring.current_id
        self._seal = AESGCM(keyring.current)
        self._open = {kid: AESGCM(key) for kid, key in keyring.by_id().items()}

    def seal_raw(self, entry: Entry, plaintext: bytes) -> Entry:
        """``entry``'s stored form; ``plaintext`` is its JSON encoding."""
        stored: Entry = {name: entry[name] for name in CLEAR_FIELDS if name in entry}
        usage = reported_usage(entry)  # what last_usage reads (not a synthetic error's)
        if usage:
            stored["message"] = {"usage": usage}
        nonce = os.urandom(NONCE_BYTES)
        sealed = self._seal.encrypt(
            nonce, plaintext, _aad(self.kid, entry.get("type"), entry.get("uuid"))
        )
        stored[ENC] = {"v": VERSION, "kid": self.kid, "n": _b64(nonce), "ct": _b64(sealed)}
        return stored

    def seal(self, entries: Sequence[Entry]) -> list[Entry]:
        """Validate a whole batch (nothing sealed on a bad entry), then seal each entry."""
        plaintexts = encode_entries(entries)
        return [self.seal_raw(e, p) for e, p in zip(entries, plaintexts, strict=True)]

    def open(self, stored: Entry) -> Entry:
        """The entry ``stored`` seals (or ``stored`` itself when it is clear).

        An unknown key id is an :class:`EncryptionKeyError`; a ciphertext that does not
        authenticate is a :class:`ValueError` (the caller reports that entry).
        """
        enc = stored.get(ENC)
        if not isinstance(enc, dict):
            return stored
        from cryptography.exceptions import InvalidTag

        kid = enc.get("kid")
        aead = self._open.get(kid) if isinstance(kid, str) else None
        if aead is None or not isinstance(kid, str):
            raise EncryptionKeyError(
                _(
                    "entry {uuid} was encrypted with key id {key_id}, which {source} does not "
                    "hold (it holds {held}); add the older key as a further key, or rekey the "
                    "store with it"
                ).format(
                    uuid=stored.get("uuid"),
                    key_id=kid,
                    source=self.keyring.source,
                    held=", ".join(self._open),
                )
            )
        try:
            nonce = base64.b64decode(enc["n"], validate=True)
            sealed = base64.b64decode(enc["ct"], validate=True)
            plaintext = aead.decrypt(
                nonce, sealed, _aad(kid, stored.get("type"), stored.get("uuid"))
            )
        except InvalidTag:
            raise ValueError(_("ciphertext does not authenticate (truncated or altered)")) from None
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(
                _("malformed ciphertext ({error})").format(error=type(exc).__name__)
            ) from None
        try:
            entry = decode_entry(plaintext)
        except msgspec.DecodeError:
            raise ValueError(_("decrypted payload is not JSON")) from None
        if not isinstance(entry, dict):
            raise ValueError(_("decrypted payload is not an entry"))
        return entry

    def check_record(self) -> Entry:
        marker = {"type": CHECK_TYPE, "uuid": f"key-check-{self.kid}"}
        return self.seal_raw(marker, CHECK_PLAINTEXT)

    def opens_check(self, stored: Entry) -> bool:
        """True when ``stored`` is this keyring's check record and decrypts correctly."""
        enc = stored.get(ENC) or {}
        kid = enc.get("kid")
        aead = self._open.get(kid) if isinstance(kid, str) else None
        if aead is None:
            return False
        try:
            plaintext = aead.decrypt(
                base64.b64decode(enc["n"]),
                base64.b64decode(enc["ct"]),
                _aad(enc["kid"], stored.get("type"), stored.get("uuid")),
            )
        except Exception:
            return False
        return plaintext == CHECK_PLAINTEXT


def _sealed_key_ids(inner: SessionStoreBase) -> Iterator[str]:
    """The key id of every sealed entry of the store, transcript by transcript."""
    try:
        projects = inner.list_projects()
    except NotImplementedError:
        return  # a store that cannot list itself: nothing to check against
    for project in projects:
        if project == CHECK_KEY.project_key:
            continue
        for info in inner.list_sessions(project):
            key = SessionKey(project, info.session_id)
            for transcript in transcripts(inner, key):
                for stored in inner.iter_entries(transcript):
                    kid = sealed_key_id(stored)
                    if kid is not None:
                        yield kid


def _wrong_key(codec: Codec, known: set[str], *, read: bool) -> EncryptionKeyError:
    if read:
        message = _(
            "wrong encryption key: {source} (key id {key_id}) does not open this store, which "
            "was encrypted with key id {store_ids}; nothing was read or written. Set "
            "{variable} (or the key file) to the key this store was written with"
        )
    else:
        message = _(
            "wrong encryption key: {source} (key id {key_id}) does not open this store, which "
            "was encrypted with key id {store_ids}; nothing was written. Set {variable} (or "
            "the key file) to the key this store was written with"
        )
    return EncryptionKeyError(
        message.format(
            source=codec.keyring.source,
            key_id=codec.kid,
            store_ids=", ".join(sorted(known)),
            variable=KEY_ENV,
        )
    )


def _check_first_key(inner: SessionStoreBase, codec: Codec) -> None:
    """Refuse ``codec`` as the first key recorded when the store already holds sealed
    entries (copied in raw) and the keyring opens none of them."""
    held = codec.keyring.by_id()
    foreign: set[str] = set()
    for kid in _sealed_key_ids(inner):
        if kid in held:
            return
        foreign.add(kid)
    if foreign:
        raise _wrong_key(codec, foreign, read=False)


def verify_key(inner: SessionStoreBase, codec: Codec, *, write: bool = True) -> bool:
    """Check ``codec``'s keys against the store's key-check record before any use.

    Returns whether the record holds a marker for the current key. Only a ``write``
    check writes one: the first (after checking the key against the sealed entries
    already there, if any), or one for a new current key, accepted only when an older
    key of the keyring opens a marker already there: that is a rotation, not a wrong
    key. A read never writes; with no record yet it checks nothing (an entry sealed
    under a key the keyring lacks fails to open on its own).
    """
    records = [r for r in inner.load(CHECK_KEY) or [] if r.get("type") == CHECK_TYPE]
    opened = {sealed_key_id(r) for r in records if codec.opens_check(r)}
    if codec.kid in opened:
        return True
    if records and not opened:
        raise _wrong_key(codec, {str(sealed_key_id(r)) for r in records}, read=True)
    if not write:
        return False
    if not records:
        _check_first_key(inner, codec)
    inner.append(CHECK_KEY, [codec.check_record()])
    return True


class EncryptedSessionStore(SessionStoreBase):
    """Any session store, with entry payloads sealed at rest. See the module docstring."""

    def __init__(self, inner: SessionStoreBase, keyring: Keyring) -> None:
        self.inner = inner
        self.codec = Codec(keyring)
        self._verified = False  # the record holds the current key: no more checks
        self._readable = False  # checked for reading only (not recorded yet)
        self._lock = threading.Lock()
        self._problems: dict[SessionKey, list[DecryptProblem]] = {}

    def __repr__(self) -> str:
        return f"EncryptedSessionStore({self.inner!r}, key id {self.codec.kid})"

    @property
    def url(self) -> str | None:
        return getattr(self.inner, "url", None)

    def _checked(self, write: bool) -> bool:
        return self._verified or (self._readable and not write)

    def _ready(self, *, write: bool = False) -> None:
        if self._checked(write):
            return
        with self._lock:
            if not self._checked(write):
                self._verified = verify_key(self.inner, self.codec, write=write)
                self._readable = True

    # -- writing -------------------------------------------------------------------

    def _refuse_unopened(self, entry: Entry) -> None:
        try:
            self.codec.open(entry)
        except EncryptionKeyError:
            raise EncryptionKeyError(
                _(
                    "entry {uuid} is already encrypted, with key id {key_id}, which {source} "
                    "does not hold; nothing was written. Add that key as a further key "
                    "({setting}) to store it as it is, then {command}"
                ).format(
                    uuid=entry.get("uuid"),
                    key_id=sealed_key_id(entry),
                    source=self.codec.keyring.source,
                    setting=f'{KEY_ENV}="CURRENT,OTHER"',
                    command="flower sessions rekey",
                )
            ) from None
        except ValueError as exc:
            raise InvalidEntryError(
                _(
                    "entry {uuid} is already encrypted and does not open ({reason}); nothing "
                    "was written"
                ).format(uuid=entry.get("uuid"), reason=exc)
            ) from None

    def _sealed(self, entries: Sequence[Entry]) -> list[Entry]:
        """``entries``' stored forms. One that comes sealed (copied raw from an encrypted
        store) is kept as it is when the keyring opens it, so it loads decrypted; any
        other sealed entry refuses the batch: sealing it again would load as a blob."""
        for entry in entries:
            if is_sealed(entry):
                self._refuse_unopened(entry)
        clear = iter(self.codec.seal([e for e in entries if not is_sealed(e)]))
        return [e if is_sealed(e) else next(clear) for e in entries]

    def as_loaded(self, entry: Entry) -> Entry:
        """What loading ``entry`` back returns once appended here (a sealed one opened;
        one that does not open is returned as it is, and appending it is refused)."""
        try:
            return self.codec.open(entry)
        except (EncryptionKeyError, ValueError):
            return entry

    def append(self, key: SessionKey, entries: Sequence[Entry]) -> None:
        _refuse_reserved(key)
        check_batch(entries)
        if not entries:
            return
        sealed = self._sealed(entries)
        self._ready(write=True)
        self.inner.append(key, sealed)

    def delete(self, key: SessionKey) -> None:
        self._ready(write=True)
        self.inner.delete(key)

    def set_modified(self, key: SessionKey, mtime_ms: int) -> None:
        self.inner.set_modified(key, mtime_ms)  # a time, kept in the clear like the listing

    # -- reading -------------------------------------------------------------------

    def problems(self, key: SessionKey) -> list[DecryptProblem]:
        """Entries of ``key`` that did not decrypt at the last load (empty when none)."""
        return list(self._problems.get(key, []))

    def _opened(self, key: SessionKey, stored: Iterator[Entry]) -> Iterator[Entry]:
        problems: list[DecryptProblem] = []
        self._problems[key] = problems
        for index, raw in enumerate(stored):
            try:
                yield self.codec.open(raw)
            except ValueError as exc:
                problem = DecryptProblem(key, index, raw.get("uuid"), str(exc))
                problems.append(problem)
                message = _(
                    "session {session}: entry {index} (uuid {uuid}) skipped: {reason}"
                ).format(
                    session=key.session_id + (f"/{key.subpath}" if key.subpath else ""),
                    index=index,
                    uuid=problem.uuid,
                    reason=problem.reason,
                )
                log.warning(message)
                warnings.warn(message, DecryptWarning, stacklevel=3)

    def load(self, key: SessionKey) -> list[Entry] | None:
        self._ready()
        stored = self.inner.load(key)
        if stored is None:
            return None
        return list(self._opened(key, iter(stored)))

    def iter_entries(self, key: SessionKey) -> Iterator[Entry]:
        self._ready()
        yield from self._opened(key, self.inner.iter_entries(key))

    def last_usage(self, key: SessionKey) -> dict[str, Any] | None:
        self._ready()
        return self.inner.last_usage(key)  # kept in the clear, but it is transcript content

    # -- the index, in the clear: served by the inner store without a key check -----

    def list_projects(self) -> list[str]:
        return [p for p in self.inner.list_projects() if p != CHECK_KEY.project_key]

    def list_sessions(self, project_key: str) -> list[SessionInfo]:
        return [
            info
            for info in self.inner.list_sessions(project_key)
            if not info.session_id.endswith(STAGING_SUFFIX)
        ]

    def list_subkeys(self, key: SessionKey) -> list[str]:
        return self.inner.list_subkeys(key)

    def exists(self, key: SessionKey) -> bool:
        return self.inner.exists(key)

    def find_session(self, session_id: str) -> SessionKey | None:
        found = self.inner.find_session(session_id)
        if found is not None and found.project_key == CHECK_KEY.project_key:
            return super().find_session(session_id)  # through the listing, which hides it
        return found

    def leftovers(self, older_than: float, now: float) -> list[Leftover]:
        return self.inner.leftovers(older_than, now)  # files, not entries: no key needed

    def remove_leftover(self, leftover: Leftover) -> bool:
        return self.inner.remove_leftover(leftover)

    def close(self) -> None:
        self.inner.close()


def _refuse_reserved(key: SessionKey) -> None:
    """A session the listings hide (the key check, re-key staging copies) is not one to
    write through the wrapper: it would be stored and never listed."""
    if key.project_key == CHECK_KEY.project_key:
        raise InvalidKeyError(
            _("project key {key} is reserved for the encryption key check").format(
                key=repr(key.project_key)
            )
        )
    if key.session_id.endswith(STAGING_SUFFIX):
        raise InvalidKeyError(
            _(
                "session id {id}: ids ending in {suffix} are reserved for re-key staging copies"
            ).format(id=repr(key.session_id), suffix=repr(STAGING_SUFFIX))
        )


class FileSealer:
    """Seals the conversation text flower keeps in its own small files (lineage's
    ``extra``, the said journal) with the store's keyring: a JSON value becomes
    ``{"_flower_enc": {"v", "kid", "n", "ct"}}``, AES-256-GCM under the current key,
    the authenticated data binding it to its key id and to what it is (``purpose``)."""

    def __init__(self, keyring: Keyring) -> None:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        self.keyring = keyring
        self.kid = keyring.current_id
        self._seal = AESGCM(keyring.current)
        self._open = {kid: AESGCM(key) for kid, key in keyring.by_id().items()}

    @staticmethod
    def is_sealed(value: object) -> TypeGuard[dict[str, Any]]:
        return isinstance(value, dict) and set(value) == {ENC} and isinstance(value[ENC], dict)

    def seal(self, value: object, purpose: str) -> dict[str, Any]:
        from flower.core.entries import json_bytes

        nonce = os.urandom(NONCE_BYTES)
        aad = f"flower-file/{VERSION}\x00{self.kid}\x00{purpose}".encode()
        sealed = self._seal.encrypt(nonce, json_bytes(value), aad)
        return {ENC: {"v": VERSION, "kid": self.kid, "n": _b64(nonce), "ct": _b64(sealed)}}

    def open(self, value: object, purpose: str) -> Any:
        """The value ``value`` seals (``value`` itself when it is not sealed)."""
        if not self.is_sealed(value):
            return value
        from cryptography.exceptions import InvalidTag

        enc = value[ENC]
        kid = enc.get("kid")
        aead = self._open.get(kid) if isinstance(kid, str) else None
        if aead is None:
            raise EncryptionKeyError(
                _("{what} was encrypted with key id {key_id}, which {source} does not hold").format(
                    what=purpose, key_id=kid, source=self.keyring.source
                )
            )
        try:
            plain = aead.decrypt(
                base64.b64decode(enc.get("n", "")),
                base64.b64decode(enc.get("ct", "")),
                f"flower-file/{VERSION}\x00{kid}\x00{purpose}".encode(),
            )
        except (InvalidTag, ValueError, TypeError):
            raise EncryptionKeyError(
                _("{what} does not decrypt: it was altered or cut short").format(what=purpose)
            ) from None
        return decode_entry(plain)


def file_sealer(settings: Settings | None) -> FileSealer | None:
    """The sealer for flower's own files when ``settings`` turn encryption on, else None."""
    if settings is None or not settings.sessions.encrypt:
        return None
    from flower.stores.keyring import load_keyring

    return FileSealer(load_keyring(settings))


def encrypt_store(inner: SessionStoreBase, settings: Settings) -> EncryptedSessionStore:
    """Wrap ``inner`` with the keys ``settings`` and the environment give."""
    from flower.stores.keyring import load_keyring

    return EncryptedSessionStore(inner, load_keyring(settings))


__all__ = [
    "CLEAR_FIELDS",
    "Codec",
    "DecryptProblem",
    "DecryptWarning",
    "EncryptedSessionStore",
    "EncryptionKeyError",
    "FileSealer",
    "encrypt_store",
    "file_sealer",
    "key_id",
    "verify_key",
]
