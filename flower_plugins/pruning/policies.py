"""The built-in pruning policies (registered by :mod:`flower_plugins.pruning`).

Every policy is a pure function of the transcript: it never mutates its input (a
changed entry is a copy), removes entries only through
:func:`flower.core.transcript.drop_entries`, and passes entries of unknown types through
untouched. See docs/pruning.md.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flower.core.entries import is_synthetic_error
from flower.core.i18n import N_, _
from flower.core.protocols import PruneContext
from flower.core.records import Entry
from flower.core.transcript.blocks import (
    content_blocks,
    iter_blocks,
    message_of,
    result_text,
)
from flower.core.transcript.editing import (
    drop_entries,
    replace_blocks,
    replace_result_body,
)
from flower.core.transcript.repair import answer_interrupted, interrupted_note

if TYPE_CHECKING:
    from flower.core.config import Settings

STALE_NOTE = N_(
    "[stale: this output is from an earlier session; re-run the command if you need it]"
)
"""Ephemeral's mark in English (the msgid). Like every note a policy writes it is made
on each load and never stored, so the model reads it in the wake's language:
:func:`stale_note`."""
TRIM_POINTER = N_(
    "[trimmed: this tool result was {count} characters; the full output is in {path} "
    "(Read that file if you need it). It began:]"
)
TRIM_MARK = "[trimmed: "
"""How the English pointer starts; :func:`trim_mark` is the start in the wake's language."""


def stale_note() -> str:
    """:data:`STALE_NOTE` in the active language."""
    return _(STALE_NOTE)


def trim_mark() -> str:
    """How a trimmed result's pointer starts in the active language (up to its count)."""
    return _(TRIM_POINTER).split("{", 1)[0]


# A denial is said at the start of the result; the same words later in an error (a
# command's own "Permission denied: /usr/lib/...") are that command's output.
_DENIAL_START = re.compile(
    r"\s*(?:Permission denied:|Permission to use [^\n]{1,2000}? has been denied"
    r"|The user doesn't want to proceed with this tool use"
    r"|The user doesn't want to take this action right now"
    r"|Claude requested permissions to use )"
)
USER_FEEDBACK = "the user said:"
"""Claude Code's rejection with feedback ("To tell you how to proceed, the user said:
..."): it carries the user's instructions, so it is never dropped as a denial."""
INTERRUPTION_TEXTS = (
    "[Request interrupted by user for tool use]",
    "[Request interrupted by user]",
    "Interrupted by user",
)


def _replaced(entries: list[Entry], changes: dict[int, Entry]) -> list[Entry]:
    """``entries`` with the entry at each index of ``changes`` replaced: a new list, or
    ``entries`` itself when nothing changed (a policy with nothing to do copies nothing)."""
    if not changes:
        return entries
    out = list(entries)
    for i, entry in changes.items():
        out[i] = entry
    return out


# --------------------------------------------------------------------------- synthetic-errors


class SyntheticErrors:
    """Drop synthetic API-error assistant entries; their children are re-linked."""

    name = "synthetic-errors"

    def __init__(self, settings: Settings | None = None) -> None:
        pass

    def prune(self, entries: list[Entry], ctx: PruneContext) -> list[Entry]:
        doomed = [
            e["uuid"]
            for e in entries
            if e.get("type") == "assistant" and is_synthetic_error(e) and e.get("uuid")
        ]
        return drop_entries(entries, doomed) if doomed else entries


# --------------------------------------------------------------------------- denials


def is_denial(entry: Entry, block: dict[str, Any]) -> bool:
    """An error tool_result saying the call was refused: flower marks the entry
    (``toolUseResult.denied``), Claude Code's wording starts the result. A rejection
    that carries the user's words (:data:`USER_FEEDBACK`) is not one to drop."""
    if not block.get("is_error"):
        return False
    marker = entry.get("toolUseResult")
    if isinstance(marker, dict) and marker.get("denied") is True:
        return True
    text = result_text(block)
    return _DENIAL_START.match(text) is not None and USER_FEEDBACK not in text


def remove_tool_calls(entries: list[Entry], tool_use_ids: set[str]) -> list[Entry]:
    """Remove these tool_use blocks and their tool_result blocks; an entry left with no
    content is dropped (children re-linked). Shared by policies that remove whole calls."""
    if not tool_use_ids:
        return entries

    def without(block: dict[str, Any]) -> dict[str, Any] | None:
        kind = block.get("type")
        if kind == "tool_use" and block.get("id") in tool_use_ids:
            return None
        if kind == "tool_result" and block.get("tool_use_id") in tool_use_ids:
            return None
        return block

    # the entries holding such a call or result, found in one pass, oldest first
    out = list(entries)
    emptied: list[str] = []
    unlinked: set[int] = set()  # emptied entries without a uuid: nothing links to them
    for i, entry in enumerate(entries):
        kind = entry.get("type")
        if kind == "assistant":
            block_type, id_field = "tool_use", "id"
        elif kind == "user":
            block_type, id_field = "tool_result", "tool_use_id"
        else:
            continue
        message = entry.get("message")
        content = message.get("content") if message.__class__ is dict else None
        for block in content if content.__class__ is list else ():
            if (
                block.__class__ is dict
                and block.get("type") == block_type
                and block.get(id_field) in tool_use_ids
            ):
                break
        else:
            continue
        new = replace_blocks(entry, without)
        if new is not None:
            out[i] = new
        elif isinstance(entry.get("uuid"), str):
            emptied.append(entry["uuid"])
        else:
            unlinked.add(i)
    if unlinked:
        out = [entry for i, entry in enumerate(out) if i not in unlinked]
    return drop_entries(out, emptied)


class Denials:
    """Drop denied tool calls (the tool_use and its result), keeping the newest N.
    A subagent's (sidechain) denials are neither counted nor dropped: the model is
    never sent them."""

    name = "denials"

    def __init__(self, settings: Settings | None = None, keep: int | None = None) -> None:
        if keep is None:
            keep = settings.pruning.keep_denials if settings is not None else 1
        self.keep = max(0, keep)

    def prune(self, entries: list[Entry], ctx: PruneContext) -> list[Entry]:
        denied: dict[Any, None] = {}  # ordered set of tool_use ids as stored, oldest first
        for _index, entry, block in iter_blocks(entries, "user", "tool_result"):
            if block.get("is_error") and not entry.get("isSidechain") and is_denial(entry, block):
                denied[block.get("tool_use_id")] = None
        ids = list(denied)
        old = ids[: len(ids) - self.keep] if self.keep else ids
        return remove_tool_calls(entries, set(old))


# --------------------------------------------------------------------------- interrupted


def is_interruption_residue(block: dict[str, Any]) -> bool:
    content = block.get("content")
    head = content[:100] if isinstance(content, str) else result_text(block)[:100]
    return head.lstrip().startswith(INTERRUPTION_TEXTS)


def _neutral(block: dict[str, Any]) -> dict[str, Any]:
    if block.get("type") == "tool_result" and is_interruption_residue(block):
        return replace_result_body(block, interrupted_note())
    return block


class Interrupted:
    """Neutralise what an interruption left: residue results get the neutral note as
    body, and a tool_use that never got a result gets one (view only) saying so."""

    name = "interrupted"

    def __init__(self, settings: Settings | None = None) -> None:
        pass

    def prune(self, entries: list[Entry], ctx: PruneContext) -> list[Entry]:
        # One pass: residue results neutralised; every call asked (with the reply that
        # asked it), every id answered, and where each reply's missing results would go
        # (after its last block entry, or after its last result entry).
        neutralised: dict[int, Entry] = {}
        asked: list[str] = []  # tool_use ids, oldest first
        asked_by: list[Any] = []  # the reply that asked each (two lists: no tuple per call)
        answered: set[Any] = set()  # tool_use ids as stored
        reply_of_tool: dict[Any, Any] = {}  # tool_use id (a str) -> the reply that asked it
        anchor_of_reply: dict[Any, Entry] = {}
        for i, entry in enumerate(entries):
            kind = entry.get("type")
            if kind != "assistant" and kind != "user":
                continue
            uid = entry.get("uuid")
            message = entry.get("message")
            content = message.get("content") if message.__class__ is dict else None
            blocks = content if content.__class__ is list else ()
            if kind == "assistant":
                if not uid:  # nothing to put a result after: left alone
                    continue
                reply = (message.get("id") if message.__class__ is dict else None) or uid
                anchor_of_reply[reply] = entry
                for block in blocks:
                    if block.__class__ is dict and block.get("type") == "tool_use":
                        tid = block.get("id")
                        if isinstance(tid, str):
                            reply_of_tool[tid] = reply
                            asked.append(tid)
                            asked_by.append(reply)
                continue
            residue = False
            for block in blocks:
                if block.__class__ is dict and block.get("type") == "tool_result":
                    tid = block.get("tool_use_id")
                    answered.add(tid)
                    residue = residue or is_interruption_residue(block)
                    reply = reply_of_tool.get(tid) if uid else None
                    if reply is not None:
                        anchor_of_reply[reply] = entry
            if residue:
                new = replace_blocks(entry, _neutral)
                if new is not None and new is not entry:
                    neutralised[i] = new
        unanswered = [
            (anchor_of_reply[reply], tid)
            for tid, reply in zip(asked, asked_by, strict=True)
            if tid not in answered
        ]
        return answer_interrupted(_replaced(entries, neutralised), unanswered, "interrupted")


# --------------------------------------------------------------------------- ephemeral

_STATEMENT_SPLIT = re.compile(r"&&|\|\||;|\n")


def _is_ephemeral_command(command: str, prefixes: tuple[str, ...]) -> bool:
    """Every statement is ``cd`` or starts (before any pipe) with an ephemeral command."""
    statements = [s.strip() for s in _STATEMENT_SPLIT.split(command) if s.strip()]
    if not statements:
        return False
    saw_ephemeral = False
    for statement in statements:
        head = " ".join(statement.split("|", 1)[0].split())
        if head == "cd" or head.startswith("cd "):
            continue
        if not any(head == p or head.startswith(p + " ") for p in prefixes):
            return False
        saw_ephemeral = True
    return saw_ephemeral


def _prefixed(block: dict[str, Any], note: str) -> dict[str, Any]:
    content = block.get("content")
    if isinstance(content, list):
        return replace_result_body(block, [{"type": "text", "text": note}, *content])
    body = content if isinstance(content, str) else ""
    return replace_result_body(block, f"{note}\n{body}" if body else note)


class _Verdicts(dict[str, bool]):
    """Whether each command is ephemeral, worked out once per distinct command."""

    def __init__(self, prefixes: tuple[str, ...]) -> None:
        super().__init__()
        self.prefixes = prefixes

    def __missing__(self, command: str) -> bool:
        verdict = self[command] = _is_ephemeral_command(command, self.prefixes)
        return verdict


class Ephemeral:
    """Mark results of commands whose output goes stale (``git status``, ``ls``, ...).

    The body is kept whole behind a one-line stale note: it is usually short, and trim
    already moves large ones out. Error results are left alone.
    """

    name = "ephemeral"

    def __init__(self, settings: Settings | None = None, commands: Iterable[str] = ()) -> None:
        if settings is not None and not commands:
            commands = settings.pruning.ephemeral_commands
        self.prefixes = tuple(" ".join(c.split()) for c in commands if c.strip())
        self._verdicts = _Verdicts(self.prefixes)

    def is_ephemeral(self, command: str) -> bool:
        return self._verdicts[command]

    def prune(self, entries: list[Entry], ctx: PruneContext) -> list[Entry]:
        # one pass: the ephemeral calls, and the results (a result is marked wherever
        # it sits, also before its call in damaged data); nothing is kept per entry but
        # flat lists, and only an entry holding a stale result is copied
        stale: set[Any] = set()  # tool_use ids as stored
        answering: list[int] = []  # the index of the entry holding each tool result
        answered: list[Any] = []  # and the tool_use id it answers, as stored
        for i, entry in enumerate(entries):
            kind = entry.get("type")
            if kind != "assistant" and kind != "user":
                continue
            message = entry.get("message")
            content = message.get("content") if message.__class__ is dict else None
            if content.__class__ is not list:
                continue
            if kind == "user":
                for b in content:
                    if b.__class__ is dict and b.get("type") == "tool_result":
                        answering.append(i)
                        answered.append(b.get("tool_use_id"))
                continue
            for block in content:
                if block.__class__ is not dict or block.get("type") != "tool_use":
                    continue
                tool_input = block.get("input")
                command = tool_input.get("command") if isinstance(tool_input, dict) else None
                if (
                    isinstance(command, str)
                    and str(block.get("name", "")).lower().startswith("bash")
                    and self.is_ephemeral(command)
                ):
                    stale.add(block.get("id"))
        if not stale:
            return entries
        marked = [i for i, tid in zip(answering, answered, strict=True) if tid in stale]
        if not marked:
            return entries
        mark = self._marker(stale)
        changes: dict[int, Entry] = {}
        for i in dict.fromkeys(marked):  # an entry holding several stale results: once
            new = replace_blocks(entries[i], mark)
            if new is not None and new is not entries[i]:  # (not when marked already)
                changes[i] = new
        return _replaced(entries, changes)

    @staticmethod
    def _marker(stale: set[Any]) -> Callable[[dict[str, Any]], dict[str, Any]]:
        note = stale_note()

        def mark(block: dict[str, Any]) -> dict[str, Any]:
            if (
                block.get("type") != "tool_result"
                or block.get("tool_use_id") not in stale
                or block.get("is_error")
                or result_text(block).startswith(note)
            ):
                return block
            return _prefixed(block, note)

        return mark


# --------------------------------------------------------------------------- trim

_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9_.-]")


def _safe_name(value: str) -> str:
    """``value`` as one file name component; two values never share one (``call/1`` and
    ``call:1``): a name that had to change carries a digest of the value."""
    name = _UNSAFE_NAME.sub("_", value).lstrip(".") or "unnamed"
    if name == value and len(name) <= 150:
        return name
    import hashlib  # imported on use: this module is loaded at every CLI start

    digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"{name[:137]}-{digest}"


def save_once(path: Path | str, data: bytes) -> Path | str:
    """Write ``data`` to ``path`` atomically unless it already holds it; if ``path`` holds
    something else, use ``<stem>-<sha256[:12]>.txt`` beside it. Returns the path used
    (``path`` itself, as given, when it already held ``data``)."""
    held = holds(path, data)
    if held:
        return path
    path = Path(path)
    if held is False:
        import hashlib  # imported on use: this module is loaded at every CLI start

        digest = hashlib.sha256(data).hexdigest()[:12]
        path = path.with_name(f"{path.stem}-{digest}{path.suffix}")
        if path.exists():
            return path
    from flower.core.fileperms import private_dir, replaced_atomically

    private_dir(path.parent)
    with replaced_atomically(path, durable=False) as handle:
        handle.write(data)
    return path


def holds(path: Path | str, data: bytes) -> bool | None:
    """Whether the file at ``path`` holds exactly ``data`` (``None``: there is no file).

    Plain ``os`` calls on one descriptor (about 4 us for a 9 KB file, a third of what
    ``Path`` and a buffered ``open`` cost): a resume checks every trimmed result's file."""
    try:
        # non-blocking: a FIFO planted at the path must not hang the resume
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except PermissionError:  # unreadable: it cannot be shown to hold the result
        return False
    try:
        info = os.fstat(fd)
        return (
            stat.S_ISREG(info.st_mode)
            and info.st_size == len(data)
            and os.read(fd, len(data) + 1) == data
        )
    finally:
        os.close(fd)


class Trim:
    """Move large old tool results to files under ``<run_dir>/trimmed/<session>/``.

    A result longer than ``min_chars`` that is older than the newest
    ``keep_recent_turns`` assistant turns becomes a pointer to a file holding its
    full text. Results with images are left alone. ``ctx.options["dry_run"]`` reports
    what would be trimmed without writing files.
    """

    name = "trim"
    HEAD_CHARS = 300

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        min_chars: int | None = None,
        keep_recent_turns: int | None = None,
    ) -> None:
        conf = settings.trim if settings is not None else None
        self.min_chars = min_chars if min_chars is not None else (conf.min_chars if conf else 4000)
        self.keep_recent_turns = (
            keep_recent_turns
            if keep_recent_turns is not None
            else (conf.keep_recent_turns if conf else 6)
        )
        # files this instance already wrote or checked, by (path, bytes): later loads
        # only check that the file is still there, whole
        self._saved: dict[tuple[str, int], Path | str] = {}
        # with encryption on, a file of tool output in the clear would undo it: results
        # stay whole, in the sealed transcript
        self.writes_files = not (settings is not None and settings.sessions.encrypt)

    def _cutoff(self, entries: list[Entry]) -> int:
        """Index of the first entry of the oldest turn that is kept whole."""
        seen: set[Any] = set()
        for i in range(len(entries) - 1, -1, -1):
            entry = entries[i]
            if entry.get("type") != "assistant" or entry.get("isSidechain"):
                continue
            turn = message_of(entry).get("id") or entry.get("uuid")
            if turn not in seen:
                seen.add(turn)
                if len(seen) > self.keep_recent_turns:
                    return i + 1
        return 0

    def prune(self, entries: list[Entry], ctx: PruneContext) -> list[Entry]:
        cutoff = self._cutoff(entries) if self.writes_files else 0
        if cutoff == 0:
            return entries
        root = Path(ctx.run_dir).resolve() / "trimmed"
        large = sorted(
            {
                i
                for i, _entry, b in iter_blocks(entries[:cutoff], "user", "tool_result")
                if self._large(b)
            }
        )
        changes: dict[int, Entry] = {}
        for i in large:
            new = self._trimmed(entries[i], root, ctx)
            if new is not None and new is not entries[i]:
                changes[i] = new
        return _replaced(entries, changes)

    def _trimmed(self, entry: Entry, root: Path, ctx: PruneContext) -> Entry | None:
        session = (ctx.key.session_id if ctx.key else None) or entry.get("sessionId")
        folder = str(root / _safe_name(str(session or "unknown")))
        return replace_blocks(entry, lambda b: self._trim_block(b, folder, ctx))

    def _large(self, block: dict[str, Any]) -> bool:
        content = block.get("content")
        if isinstance(content, str):
            return len(content) > self.min_chars
        return isinstance(content, list) and len(result_text(block)) > self.min_chars

    def _trim_block(self, block: dict[str, Any], folder: str, ctx: PruneContext) -> dict[str, Any]:
        if block.get("type") != "tool_result":
            return block
        content = block.get("content")
        if isinstance(content, list) and any(
            not (isinstance(b, dict) and b.get("type") == "text") for b in content
        ):
            return block
        text = result_text(block)
        # ephemeral's stale note stays in front of the pointer (and out of the file), so
        # neither policy hides the other's mark from a second pass
        note = stale_note()
        stale = text.startswith(note)
        if stale:
            text = text[len(note) :].removeprefix("\n")
        if len(text) <= self.min_chars or text.startswith(trim_mark()):
            return block
        # a plain string: the name is one safe component, so this is what
        # Path(folder) / name would print (without building the Path every load)
        target = f"{folder}{os.sep}{_safe_name(str(block.get('tool_use_id') or 'result'))}.txt"
        path: str | Path = target
        if not ctx.options.get("dry_run"):
            # a lone surrogate (a string cut mid-emoji) is kept as it was stored
            data = text.encode("utf-8", "surrogatepass")
            known = self._saved.get((target, len(data)))
            if known is not None and _size(known) == len(data):
                path = known
            else:
                try:
                    path = save_once(target, data)
                except OSError:
                    return block  # nothing may be lost: keep the full result in context
                self._saved[(target, len(data))] = path
        head = text[: self.HEAD_CHARS].rstrip()
        pointer = _(TRIM_POINTER).format(count=len(text), path=path) + f"\n{head}\n[...]"
        return replace_result_body(block, f"{note}\n{pointer}" if stale else pointer)


def _size(path: Path | str) -> int | None:
    try:
        return os.stat(path).st_size
    except OSError:
        return None


BUILTIN_POLICIES = {
    SyntheticErrors.name: SyntheticErrors,
    Denials.name: Denials,
    Interrupted.name: Interrupted,
    Ephemeral.name: Ephemeral,
    Trim.name: Trim,
}


__all__ = [
    "BUILTIN_POLICIES",
    "STALE_NOTE",
    "TRIM_MARK",
    "TRIM_POINTER",
    "Denials",
    "Ephemeral",
    "Interrupted",
    "SyntheticErrors",
    "Trim",
    "content_blocks",
    "holds",
    "is_denial",
    "is_synthetic_error",
    "remove_tool_calls",
    "save_once",
    "stale_note",
    "trim_mark",
]
