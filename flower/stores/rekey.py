"""Re-encrypting an encrypted store under a new key, without loss, resumable.

Stores never rewrite an entry in place, and a re-appended uuid is a no-op, so each
session moves through a staging copy::

    1. copy     every transcript of S (main and subkeys), decrypted with the old keys
                and sealed with the new one, into the hidden session S.flower-rekey;
                read it back and compare; then write the marker transcript
                S.flower-rekey/rekey-done listing the transcripts.
    2. restore  delete S, append the staged (already sealed) entries back under S,
                compare counts.
    3. clean    delete S.flower-rekey.

Interrupted anywhere, a new run picks up from the store alone: staging without its
marker is dropped and copied again (S was not touched yet); staging with its marker
means S may be half restored, so S is deleted and restored again from staging. A
session whose entries are all already under the new key is skipped. Only the mtime
of each re-encrypted session changes. Run it while no flower run writes to the store.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from flower.core.errors import FlowerError
from flower.core.i18n import _
from flower.core.protocols import SessionStoreBase
from flower.core.records import Entry, SessionKey
from flower.stores.encrypt import (
    CHECK_KEY,
    STAGING_SUFFIX,
    Codec,
    EncryptedSessionStore,
    sealed_key_id,
    verify_key,
)
from flower.stores.keyring import Keyring
from flower.stores.transcripts import transcripts

DONE_SUBPATH = "rekey-done"
DONE_TYPE = "flower-rekey-done"
BATCH = 500


class RekeyError(FlowerError):
    """A session that cannot be re-encrypted without loss; it is left as it was."""


@dataclass
class RekeyReport:
    new_key_id: str
    sessions: int = 0
    skipped: int = 0
    resumed: int = 0
    entries: int = 0
    failed: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        """The report as plain data (``flower sessions rekey --json``)."""
        return {
            "key_id": self.new_key_id,
            "sessions": self.sessions,
            "resumed": self.resumed,
            "skipped": self.skipped,
            "entries": self.entries,
            "failed": list(self.failed),
        }


def _append_all(store: SessionStoreBase, key: SessionKey, entries: list[Entry]) -> None:
    for start in range(0, len(entries), BATCH):
        store.append(key, entries[start : start + BATCH])


def _all_under(inner: SessionStoreBase, key: SessionKey, kid: str) -> bool:
    for transcript in transcripts(inner, key):
        if any(sealed_key_id(e) != kid for e in inner.iter_entries(transcript)):
            return False
    return True


class Rekeyer:
    """Moves every session of ``store`` from its current keys to ``new``."""

    def __init__(self, store: EncryptedSessionStore, new: Keyring) -> None:
        self.inner = store.inner
        self.old = store.codec
        self.new = Codec(new)

    def _staging(self, key: SessionKey) -> SessionKey:
        return SessionKey(key.project_key, key.session_id + STAGING_SUFFIX)

    def _copy(self, key: SessionKey) -> int:
        staging = self._staging(key)
        self.inner.delete(staging)  # a staging copy without its marker is incomplete
        sources = transcripts(self.inner, key)
        count = 0
        for source in sources:
            target = staging if source.subpath is None else staging.child(source.subpath)
            stored = self.inner.load(source) or []
            clear: list[Entry] = []
            for index, raw in enumerate(stored):
                try:
                    clear.append(self.old.open(raw))
                except ValueError as exc:
                    self.inner.delete(staging)
                    raise RekeyError(
                        _(
                            "session {session}: entry {index} (uuid {uuid}) cannot be "
                            "decrypted ({reason}); session left under the old key"
                        ).format(
                            session=key.session_id, index=index, uuid=raw.get("uuid"), reason=exc
                        )
                    ) from None
            _append_all(self.inner, target, self.new.seal(clear))
            back = [self.new.open(e) for e in self.inner.load(target) or []]
            if back != clear:
                self.inner.delete(staging)
                raise RekeyError(
                    _("session {session}: staged copy differs; left as it was").format(
                        session=key.session_id
                    )
                )
            count += len(clear)
        marker = {"type": DONE_TYPE, "uuid": "done", "subpaths": [s.subpath or "" for s in sources]}
        self.inner.append(staging.child(DONE_SUBPATH), [marker])
        return count

    def _restore(self, key: SessionKey) -> None:
        staging = self._staging(key)
        marker = (self.inner.load(staging.child(DONE_SUBPATH)) or [{}])[0]
        self.inner.delete(key)
        for sub in marker.get("subpaths", [""]):
            source = staging if not sub else staging.child(sub)
            target = key if not sub else key.child(sub)
            staged = self.inner.load(source) or []
            _append_all(self.inner, target, staged)
            if len(self.inner.load(target) or []) != len(staged):
                raise RekeyError(
                    _("session {session}: restore incomplete; run rekey again").format(
                        session=key.session_id
                    )
                )
        self.inner.delete(staging)

    def _is_staged(self, key: SessionKey) -> bool:
        return self.inner.exists(self._staging(key).child(DONE_SUBPATH))

    def run(self, progress: Callable[[RekeyReport], None] | None = None) -> RekeyReport:
        verify_key(self.inner, self.old)  # the old key must be right before anything moves
        self.inner.append(CHECK_KEY, [self.new.check_record()])
        report = RekeyReport(self.new.kid)
        for project in self.inner.list_projects():
            if project == CHECK_KEY.project_key:
                continue
            names = {info.session_id for info in self.inner.list_sessions(project)}
            originals = sorted({n.removesuffix(STAGING_SUFFIX) for n in names})
            for session_id in originals:
                key = SessionKey(project, session_id)
                try:
                    if self._is_staged(key):
                        report.resumed += 1
                    elif _all_under(self.inner, key, self.new.kid):
                        report.skipped += 1
                        continue
                    else:
                        report.entries += self._copy(key)
                    self._restore(key)
                    report.sessions += 1
                except RekeyError as exc:
                    report.failed.append(str(exc))
                if progress is not None:
                    progress(report)
        return report


def rekey(
    store: SessionStoreBase,
    new: Keyring | None = None,
    progress: Callable[[RekeyReport], None] | None = None,
) -> RekeyReport:
    """Re-encrypt every session of ``store`` under ``new`` (default: its current key,
    for what is not under it yet); see the module docstring. A store that is not
    encrypted is a :class:`~flower.core.errors.FlowerError` saying how to turn it on."""
    if not isinstance(store, EncryptedSessionStore):
        raise FlowerError(
            _("rekey works on an encrypted store: set {setting} and {variable} first").format(
                setting="[tool.flower.sessions] encrypt = true",
                variable="FLOWER_ENCRYPTION_KEY",
            )
        )
    return Rekeyer(store, new or store.codec.keyring).run(progress)


__all__ = ["RekeyError", "RekeyReport", "rekey"]
