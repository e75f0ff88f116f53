"""Encryption keys for encrypted session stores: where they come from, and their ids.

A key is 32 random bytes written as URL-safe base64 (44 characters). Its id is a
short hash of the key, stored beside every ciphertext so that a store written under
several keys (during a rotation) knows which key opens which entry. The id reveals
nothing usable about the key.

Sources, first found wins: ``FLOWER_ENCRYPTION_KEY`` (keys separated by commas or
whitespace), ``FLOWER_ENCRYPTION_KEY_FILE``, ``[tool.flower.sessions] key_file``
(one key per line, ``#`` comments). The first key is the current one: new entries are
encrypted with it. The others are older keys, only used to read.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from flower.core.errors import FlowerError
from flower.core.i18n import _

if TYPE_CHECKING:
    from flower.core.config import Settings

KEY_ENV = "FLOWER_ENCRYPTION_KEY"
KEY_FILE_ENV = "FLOWER_ENCRYPTION_KEY_FILE"
NEW_KEY_ENV = "FLOWER_NEW_ENCRYPTION_KEY"
KEY_BYTES = 32
_SEPARATORS = re.compile(r"[\s,]+")


class EncryptionKeyError(FlowerError):
    """A missing, malformed or wrong encryption key. Never carries the key itself."""

    exit_code = 2


@dataclass(frozen=True)
class Keyring:
    """The current key first, then older keys still accepted for reading."""

    keys: tuple[bytes, ...]
    source: str
    """Where the keys came from, for messages: a variable or a file, never a value."""

    @property
    def current(self) -> bytes:
        return self.keys[0]

    @property
    def current_id(self) -> str:
        return key_id(self.keys[0])

    def by_id(self) -> dict[str, bytes]:
        return {key_id(k): k for k in reversed(self.keys)} | {self.current_id: self.current}


def key_id(key: bytes) -> str:
    """A 12-hex-digit id of ``key`` (a domain-separated SHA-256 prefix)."""
    return hashlib.sha256(b"flower-encryption-key-id\x00" + key).hexdigest()[:12]


def generate_key() -> str:
    """A new random key, as text fit for ``FLOWER_ENCRYPTION_KEY`` or a key file."""
    return base64.urlsafe_b64encode(os.urandom(KEY_BYTES)).decode("ascii")


def _decode_key(text: str, source: str, position: int) -> bytes:
    try:
        raw = base64.urlsafe_b64decode(text.encode("ascii"))
    except (binascii.Error, UnicodeEncodeError, ValueError):
        raw = b""
    if len(raw) != KEY_BYTES:
        # Never echo the text: it may be a real key pasted in the wrong format.
        raise EncryptionKeyError(
            _(
                "{source}: key {position} is not 32 bytes of URL-safe base64 (44 characters); "
                "make one with: {command}"
            ).format(source=source, position=position, command="flower sessions keygen")
        )
    return raw


def parse_keys(text: str, source: str, *, lines: bool = False) -> Keyring:
    """Keys from ``text`` (a variable's value, or a key file when ``lines``)."""
    if lines:
        tokens = [ln.split("#", 1)[0].strip() for ln in text.splitlines()]
    else:
        tokens = _SEPARATORS.split(text)
    tokens = [t for t in tokens if t]
    if not tokens:
        raise EncryptionKeyError(_("{source} holds no key").format(source=source))
    return Keyring(tuple(_decode_key(t, source, i) for i, t in enumerate(tokens, 1)), source)


def _read_key_file(path: Path, source: str) -> Keyring:
    from flower.core.fileperms import check_private

    where = f"{source} ({path})"
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise EncryptionKeyError(
            _("{where}: cannot read the key file: {reason}").format(
                where=where, reason=exc.strerror or exc
            )
        ) from None
    except UnicodeDecodeError:
        raise EncryptionKeyError(
            _("{where}: the key file is not text").format(where=where)
        ) from None
    check_private(path)
    return parse_keys(text, where, lines=True)


def load_keyring(settings: Settings, environ: Mapping[str, str] | None = None) -> Keyring:
    """The keyring ``settings`` and the environment give, or a clear error naming both."""
    environ = os.environ if environ is None else environ
    if environ.get(KEY_ENV, "").strip():
        return parse_keys(environ[KEY_ENV], KEY_ENV)
    if environ.get(KEY_FILE_ENV, "").strip():
        return _read_key_file(Path(environ[KEY_FILE_ENV]).expanduser(), KEY_FILE_ENV)
    key_file = getattr(getattr(settings, "sessions", None), "key_file", None)
    if key_file:
        return _read_key_file(Path(key_file).expanduser(), "[tool.flower.sessions] key_file")
    raise EncryptionKeyError(
        _(
            "{setting} but no key is set: set {variable} (or {file_variable}, or {key_file}); "
            "make a key with: {command}"
        ).format(
            setting="[tool.flower.sessions] encrypt = true",
            variable=KEY_ENV,
            file_variable=KEY_FILE_ENV,
            key_file="[tool.flower.sessions] key_file",
            command="flower sessions keygen",
        )
    )


def load_new_keyring(path: Path | None, environ: Mapping[str, str] | None = None) -> Keyring | None:
    """The key ``rekey`` moves to: ``--new-key-file``, ``FLOWER_NEW_ENCRYPTION_KEY``, or
    ``None`` for the current key (which re-encrypts clear or older-key entries)."""
    environ = os.environ if environ is None else environ
    if path is not None:
        return _read_key_file(path.expanduser(), "--new-key-file")
    if environ.get(NEW_KEY_ENV, "").strip():
        return parse_keys(environ[NEW_KEY_ENV], NEW_KEY_ENV)
    return None
