"""Words said on a wake: the one module that keeps them and lands them.

The seed: what you say on waking lands in three places, and if one is missing it fails
silently. It goes to the working step as its next message, it is appended to the brief,
and the goals file is derived again so the judge checks what was added. Waking with
nothing to say adds nothing and derives nothing again: it costs nothing extra.

The words live in two places on disk, one after the other:

1. ``<run_dir>/said.json`` (:class:`SaidJournal`), from the moment the CLI reads them
   until lineage holds them: the run lock, the banner and the lineage load come in
   between, and a kill there must lose nothing. Replaced atomically, ``0600``, sealed
   with the store's keyring when encryption is on.
2. lineage, under the one key :data:`SAID` (a :class:`SaidRecord`): a first run's
   request until the brief holds it, the words a step has not heard yet, whether the
   goals still lack them, and the tokens of the journal's words it holds. With
   encryption on, lineage's extra is sealed whole (``SealedLineageStore``).

What a wake of the built-in workflow does with them (its ``on_start``, and around the
clarify, goals and work steps) is :class:`~flower.workflow.wake_words.WakeWords`, which
builds on this module and on the steps; a wake cut short leaves the next one to finish
the job, and words are heard once the step's transcript holds them, so a wake cut short
after that does not send them twice. This module needs nothing of the steps: the
workflow's context holds its :class:`SaidWords` and memos, and the plan of a wake reads
:func:`said_state`.

Directories an older flower wrote keep working: its lineage keys (``request``,
``unheard``, ``goals_stale``, ``said_tokens``...: :data:`OLD_KEYS`) are read into the
record and replaced by :data:`SAID` on the next save, and journal entries written
before they named their workspace are taken as said in the workspace reading them.
"""

from __future__ import annotations

import hashlib
import os
import time
import uuid
import warnings
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import msgspec

from flower.core.entries import json_bytes
from flower.core.fileperms import fsync_dir, private_dir, replaced_atomically
from flower.core.i18n import _
from flower.core.lease import fenced
from flower.core.lineage import Lineage
from flower.core.transcript.blocks import prompt_texts
from flower.stores.encrypt import FileSealer, file_sealer
from flower.workflow.documents import read_goals

if TYPE_CHECKING:
    from flower.core.config import Settings


# -- said.json: the words until lineage holds them ------------------------------------

JOURNAL_FILE = "said.json"
KEEP_TOKENS = 32
"""Tokens of recorded journal words lineage keeps: enough for any one journal (a
task's own tokens are kept besides, for good: :attr:`SaidRecord.task_tokens`)."""


class Said(msgspec.Struct, frozen=True):
    """One entry of said.json: the words, their token, the workspace they were said in."""

    token: str
    text: str
    workspace: str = ""
    """The workspace the words were said in (a run dir may serve several); ``""`` in a
    journal written before entries named it: said in the workspace reading it."""
    task: bool = False
    """The token is the caller's own, the same on every execution of its task (a fleet
    task's): lineage keeps it for good once it records the words."""


class SaidJournalWarning(UserWarning):
    """The journal could not be read; it was set aside, not deleted."""


class SaidJournal:
    """The words of ``<run_path>/said.json``, oldest first; with encryption on
    (``settings`` that say so, or a ``sealer``) the file holds them sealed."""

    def __init__(
        self,
        run_path: str | os.PathLike[str],
        settings: Settings | None = None,
        *,
        sealer: FileSealer | None = None,
    ) -> None:
        self.path = Path(run_path) / JOURNAL_FILE
        self.sealer = sealer if sealer is not None else file_sealer(settings)

    def entries(self) -> list[Said]:
        try:
            raw = self.path.read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            return []
        try:
            return _decode(raw, self.sealer)
        except msgspec.DecodeError as exc:
            aside = self.path.with_name(f"{JOURNAL_FILE}.unreadable-{int(time.time())}")
            os.replace(self.path, aside)
            warnings.warn(
                _("{path}: not a journal of words ({error}); set aside as {aside}").format(
                    path=self.path, error=exc, aside=aside.name
                ),
                SaidJournalWarning,
                stacklevel=2,
            )
            return []

    def add(self, text: str, workspace: str, token: str | None = None) -> str:
        """Keep ``text``, said in ``workspace``, (durably) until lineage holds it; its token.
        ``token`` given (a fleet task's, the same on each execution of the task): words
        the journal already holds under it are not added again."""
        entries = self.entries()
        if token is not None and any(said.token == token for said in entries):
            return token
        said = Said(token or uuid.uuid4().hex, text, workspace, task=token is not None)
        self._write([*entries, said])
        return said.token

    def unrecorded(self, record: SaidRecord, workspace: str) -> list[Said]:
        """The words said in ``workspace`` whose token ``record`` (its lineage's) lacks."""
        return [
            said
            for said in self.entries()
            if not record.holds(said.token) and _said_in(said, workspace)
        ]

    def move_to(self, folder: Path, workspace: str, keep: str | None = None) -> None:
        """Move the words said in ``workspace`` (but those of token ``keep``) into
        ``folder``/said.json (an archive)."""
        words = [s for s in self.entries() if _said_in(s, workspace) and s.token != keep]
        if words:
            SaidJournal(folder, sealer=self.sealer)._write(words)
            self.clear(workspace, keep)

    def clear(self, workspace: str, keep: str | None = None) -> None:
        """Forget the words said in ``workspace`` (its lineage holds them now), but those
        of token ``keep``."""
        entries = self.entries()
        others = [s for s in entries if not _said_in(s, workspace) or s.token == keep]
        if len(others) == len(entries):
            return
        if others:
            self._write(others)
            return

        def remove() -> None:
            self.path.unlink(missing_ok=True)
            fsync_dir(self.path.parent)

        fenced(remove)  # a fleet wake that lost its lease writes nothing

    def _write(self, entries: list[Said]) -> None:
        private_dir(self.path.parent)
        value: Any = msgspec.to_builtins(entries)
        if self.sealer is not None:
            value = self.sealer.seal(value, JOURNAL_FILE)
        data = json_bytes(value)

        def write() -> None:
            with replaced_atomically(self.path) as handle:
                handle.write(data)
            fsync_dir(self.path.parent)

        fenced(write)  # a fleet wake that lost its lease writes nothing


def _said_in(said: Said, workspace: str) -> bool:
    return said.workspace in (workspace, "")


def _decode(raw: bytes, sealer: FileSealer | None) -> list[Said]:
    """The journal's entries; a lone surrogate's escape (what :func:`json_bytes` writes
    for one) is read back as the surrogate. A sealed journal is opened with ``sealer``
    (without one, it is no journal this run can read)."""
    if raw.lstrip().startswith(b"{"):
        value = msgspec.json.decode(raw)
        if sealer is None or not sealer.is_sealed(value):
            raise msgspec.DecodeError(_("encrypted words, and encryption is off"))
        return msgspec.convert(sealer.open(value, JOURNAL_FILE), type=list[Said])
    try:
        return msgspec.json.decode(raw, type=list[Said])
    except msgspec.DecodeError:
        if b"\\u" not in raw:
            raise
        import json

        try:
            return msgspec.convert(json.loads(raw), type=list[Said])
        except ValueError as exc:
            raise msgspec.DecodeError(str(exc)) from None


# -- lineage: one record under one key ------------------------------------------------

SAID = "said"
"""The lineage ``extra`` key holding the :class:`SaidRecord`."""


class SentAfter(msgspec.Struct, frozen=True):
    """Where a step's transcript stood when the words were last sent to it: what a
    cut-short wake stored after that point was heard."""

    session: str | None
    entries: int


class SaidRecord(msgspec.Struct, omit_defaults=True):
    """What lineage keeps of the words said, until each has landed."""

    request: str | None = None
    """A first run's request (and what was said to its clarifier after it), until the
    brief is written: a clarifier that never writes one falls back on it."""
    unheard: list[str] = msgspec.field(default_factory=list)
    """Words said on wakes the working step has not heard yet, in order."""
    sent_after: SentAfter | None = None
    goals_stale: bool = False
    """Words were said since the goals were derived: the next run derives them again."""
    goals_seen: str | None = None
    """A digest of the goals file when words were last said (:func:`goals_digest`): a
    goals file that differs from it later was edited by the user, and is their answer."""
    clarifier_unheard: list[str] = msgspec.field(default_factory=list)
    """Words said to a clarifier that had not confirmed the brief yet, until it hears them."""
    clarifier_sent_after: SentAfter | None = None
    tokens: list[str] = msgspec.field(default_factory=list)
    """Tokens of the journal's words lineage holds (the newest :data:`KEEP_TOKENS`)."""
    task_tokens: list[str] = msgspec.field(default_factory=list)
    """Tokens of tasks' words lineage holds (:attr:`Said.task`), all of them: a task may
    run again any time (a fleet task taken over, resumed) and pass its words on again,
    however many words were recorded since; one token a task."""

    def holds(self, token: str) -> bool:
        """Whether lineage recorded the words of ``token``."""
        return token in self.tokens or token in self.task_tokens

    def mark_recorded(self, words: Iterable[Said]) -> None:
        """Note (saved by the caller, with the words) that ``words`` are recorded."""
        words = list(words)
        added = [said.token for said in words if not said.task]
        self.tokens = [*self.tokens, *added][-max(KEEP_TOKENS, len(added)) :]
        tasks = [said.token for said in words if said.task and not self.holds(said.token)]
        self.task_tokens = [*self.task_tokens, *tasks]

    def goals_edited(self, goals: Path) -> bool:
        """Whether the goals are stale and the goals file ``goals`` was changed since the
        words were said and lists goals: the user answered, the file is used as it is."""
        if not self.goals_stale or self.goals_seen is None:
            return False
        return goals_digest(goals) != self.goals_seen and bool(read_goals(goals))


OLD_KEYS = {
    "request": "request",
    "unheard": "unheard",
    "unheard_sent_after": "sent_after",
    "goals_stale": "goals_stale",
    "goals_when_said": "goals_seen",
    "unheard_by_clarifier": "clarifier_unheard",
    "unheard_by_clarifier_sent_after": "clarifier_sent_after",
    "said_tokens": "tokens",
    "clarify_goals_stale": None,
    "clarify_goals_when_said": None,
}
"""Lineage keys an older flower kept the words under, and the field each is now (None:
never set, dropped)."""


def said_record(extra: Mapping[str, Any]) -> SaidRecord:
    """The words lineage's ``extra`` keeps: :data:`SAID`, with whatever an older flower
    wrote under :data:`OLD_KEYS` on top (written after this record, since a save drops
    them). A field that does not read is left out, as if never set."""
    raw = extra.get(SAID)
    fields = _readable(raw if isinstance(raw, dict) else {})
    old = {new: extra[key] for key, new in OLD_KEYS.items() if new and key in extra}
    if isinstance(old.get("tokens"), list):
        old["tokens"] = [t for t in old["tokens"] if isinstance(t, str)]
    fields.update(_readable(old))
    return msgspec.convert(fields, SaidRecord)


def _readable(raw: Mapping[str, Any]) -> dict[str, Any]:
    kept: dict[str, Any] = {}
    for name in SaidRecord.__struct_fields__:
        if name in raw:
            try:
                msgspec.convert({name: raw[name]}, SaidRecord)
            except msgspec.ValidationError:
                continue
            kept[name] = raw[name]
    return kept


def put_said_record(extra: dict[str, Any], record: SaidRecord) -> None:
    """Keep ``record`` in lineage's ``extra`` (saved by the caller): under :data:`SAID`
    (none when empty), the older keys gone."""
    for key in OLD_KEYS:
        extra.pop(key, None)
    value = msgspec.to_builtins(record)
    if value:
        extra[SAID] = value
    else:
        extra.pop(SAID, None)


class SaidWords:
    """The :class:`SaidRecord` of one lineage, written at once on every change (no
    lineage: a record in memory only, for ``continuous=False``)."""

    def __init__(self, lineage: Lineage | None) -> None:
        self.lineage = lineage
        self.record = said_record(lineage.record.extra) if lineage is not None else SaidRecord()

    def save(self) -> bool:
        """Write the record into lineage; False when that write failed. Field by field:
        what another process changed in the record since (a fleet task, a Python caller
        without the run lock) is kept beside what changed here, and read back."""
        if self.lineage is None:
            return False
        put_said_record(self.lineage.record.extra, self.record)
        saved = self.lineage.save(by_field=(SAID,))
        merged = said_record(self.lineage.record.extra)
        for name in SaidRecord.__struct_fields__:  # in place: memos hold this record
            setattr(self.record, name, getattr(merged, name))
        return saved

    # -- a first run's request

    def remember_request(self, said: str | None, journal_words: list[Said]) -> str | None:
        """The request of a first run: what was said now, else what a run killed before
        its clarifier started was asked (written at once, with the journal's tokens)."""
        earlier = self.record.request
        request = said or earlier  # what is said now replaces a request no step took up
        if journal_words or (request and request != earlier):
            if request:
                self.record.request = request
            self.record.mark_recorded(journal_words)
            self.save()
        return request

    def request_with(self, texts: list[str]) -> str | None:
        """The request kept, with ``texts`` (said to a clarifier that has not written the
        brief yet) added to it; saved by the caller, with the words."""
        earlier = self.record.request
        new = [text for text in texts if text not in (earlier or "")]
        request = "\n\n".join([earlier, *new] if earlier else new) or None
        self.record.request = request
        return request

    def forget_request(self) -> None:
        """The brief holds the request now."""
        if self.record.request is not None:
            self.record.request = None
            self.save()

    # -- the goals

    def goals_rederived(self) -> None:
        if self.record.goals_stale or self.record.goals_seen is not None:
            self.record.goals_stale = False
            self.record.goals_seen = None
            self.save()


class Memo:
    """Words said on wakes and not heard yet by one step (the working step:
    :class:`WakeMemo`; a clarifier yet to confirm the brief: :class:`ClarifyMemo`)."""

    STALES_GOALS: ClassVar[bool] = True
    """Whether new words leave the goals to derive again."""

    def __init__(self, words: SaidWords) -> None:
        self.words = words
        self.record = words.record

    @property
    def unheard(self) -> list[str]:
        return self.record.unheard

    def _set(self, unheard: list[str], sent: SentAfter | None) -> None:
        self.record.unheard, self.record.sent_after = unheard, sent

    @property
    def _sent(self) -> SentAfter | None:
        return self.record.sent_after

    @property
    def goals_stale(self) -> bool:
        return self.record.goals_stale

    def said(self, *texts: str, goals: Path | None = None) -> None:
        """Keep ``texts`` (in order) until the step hears them, and how the goals file
        ``goals`` read then: one lineage save."""
        self._set([*self.unheard, *texts], self._sent)
        if self.STALES_GOALS:
            self.record.goals_stale = True
            if goals is not None:
                self.record.goals_seen = goals_digest(goals)
        self._save()

    def heard(self, texts: list[str] | None = None) -> None:
        """Everything unheard (or only ``texts``) reached the step."""
        left = [t for t in self.unheard if texts is not None and t not in texts]
        if left != self.unheard:
            self._set(left, self._sent)
            self._save()

    def sending(self, session_id: str | None, entries: int) -> None:
        """The words go to the step now, its transcript ``entries`` long."""
        self._set(self.unheard, SentAfter(session_id, entries))
        self._save()

    def landed(self, session_id: str | None, entries: list[dict[str, Any]]) -> list[str]:
        """The unheard words a cut-short wake already stored in the step's transcript
        (``entries``, of ``session_id``): sending them again would say them twice."""
        sent = self._sent
        if sent is None or session_id is None:
            return []
        # a session other than the one they were sent to was started after (a relay)
        start = sent.entries if sent.session == session_id else 0
        start = start if start >= 0 else len(entries)
        prompts = [text for entry in entries[start:] for text in prompt_texts(entry)]
        return [t for t in self.unheard if any(t in prompt for prompt in prompts)]

    def _save(self) -> None:
        if not self.unheard:
            self._set([], None)
        self.words.save()


class WakeMemo(Memo):
    """What was said on wakes and has not reached the working step yet."""


class ClarifyMemo(Memo):
    """What was said on wakes to a clarifier that had not confirmed the brief yet, until
    its transcript holds it (the goals are derived after the brief anyway)."""

    STALES_GOALS = False

    @property
    def unheard(self) -> list[str]:
        return self.record.clarifier_unheard

    def _set(self, unheard: list[str], sent: SentAfter | None) -> None:
        self.record.clarifier_unheard, self.record.clarifier_sent_after = unheard, sent

    @property
    def _sent(self) -> SentAfter | None:
        return self.record.clarifier_sent_after


def goals_digest(goals: Path) -> str:
    """What the goals file holds, as a digest (``""``: missing or unreadable)."""
    try:
        return hashlib.sha256(goals.read_bytes()).hexdigest()
    except OSError:
        return ""


# -- what wake_state reports of them --------------------------------------------------


class SaidState(msgspec.Struct, frozen=True):
    """The words as the next wake finds them (see ``WakeChecks``)."""

    request: str | None
    unrecorded: list[str]
    unheard: list[str]
    goals_stale: bool


def said_state(
    lineage: Lineage, settings: Settings | None, run_path: Path, goals: Path
) -> SaidState:
    """What the words on disk leave to the next wake: a first request no step took up,
    what runs killed before recording it were told (oldest first), what the working step
    has not heard, and whether the goals are derived again first (words were said since,
    and the user did not edit the goals file after them: then it is their answer)."""
    import logging

    record = said_record(lineage.record.extra)
    try:
        journal = SaidJournal(run_path, settings)
        unrecorded = [s.text for s in journal.unrecorded(record, lineage.workspace)]
    except OSError as exc:  # the run itself will say what is wrong with the run dir
        logging.getLogger(__name__).warning(_("%s unreadable: %s"), run_path, exc)
        unrecorded = []
    request = record.request if record.request and record.request.strip() else None
    return SaidState(
        request=request,
        unrecorded=[text for text in unrecorded if text.strip()],
        unheard=[text for text in record.unheard if text.strip()],
        goals_stale=record.goals_stale and not record.goals_edited(goals),
    )


def words_to_pass_on(unrecorded: list[str], said: str | None, *, first_run: bool) -> list[str]:
    """What runs killed before recording it were told (``unrecorded``), to pass on before
    anything said now; on a ``first_run`` (no brief, no clarifier session) what is said
    now replaces a request no step took up, so then nothing."""
    return [] if said is not None and first_run else list(unrecorded)


__all__ = [
    "JOURNAL_FILE",
    "OLD_KEYS",
    "SAID",
    "ClarifyMemo",
    "Memo",
    "Said",
    "SaidJournal",
    "SaidJournalWarning",
    "SaidRecord",
    "SaidState",
    "SaidWords",
    "SentAfter",
    "WakeMemo",
    "goals_digest",
    "put_said_record",
    "said_record",
    "said_state",
    "words_to_pass_on",
]
