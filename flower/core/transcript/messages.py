"""A chain as the Messages API ``messages`` list, and the rules the API holds it to."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from flower.core.errors import FlowerError
from flower.core.records import Entry
from flower.core.transcript.blocks import content_blocks, is_conversation
from flower.core.transcript.chain import active_chain


class InvalidConversationError(FlowerError, ValueError):
    """A messages list the Messages API would reject; ``problems`` says why."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        super().__init__("invalid conversation: " + "; ".join(self.problems))


def to_messages(chain: Iterable[Entry]) -> list[dict[str, Any]]:
    """The Messages API ``messages`` for a chain (see :func:`active_chain`).

    Only main-thread user/assistant entries count. Consecutive entries of one role are
    merged into one message (the API wants roles to alternate), and in a user message
    tool_result blocks come before any other block, as the API requires. Messages with
    no content are left out. Block dicts are shared with the entries, not copied.
    """
    return list(iter_messages(chain))


def iter_messages(chain: Iterable[Entry]) -> Iterator[dict[str, Any]]:
    """The messages of :func:`to_messages`, each yielded once it is whole: a check that
    reads them one by one keeps none of them alive."""
    role_now: str | None = None
    merged: list[Any] = []  # the content of the message being built
    for entry in chain:
        if not is_conversation(entry):
            continue
        role = entry["type"]  # what the entry is, whatever its message.role says
        blocks = content_blocks(entry)
        if not blocks:
            continue
        if role == role_now:
            if role == "user" and _repeats_the_last_words(merged, blocks):
                continue
            merged.extend(blocks)
            continue
        if role_now is not None:
            yield _message(role_now, merged)
        role_now, merged = role, list(blocks)
    if role_now is not None:
        yield _message(role_now, merged)


def _message(role: str, content: list[Any]) -> dict[str, Any]:
    """One message; a user message's tool results first, as the API requires."""
    if role == "user" and len(content) > 1:
        results = [b for b in content if _is_block(b, "tool_result")]
        if results and len(results) != len(content):
            content = results + [b for b in content if not _is_block(b, "tool_result")]
    return {"role": role, "content": content}


def _repeats_the_last_words(merged: list[Any], blocks: list[Any]) -> bool:
    """Whether a user entry only says again the text its merged message ends with: the
    same prompt given twice with the turn between them pruned away (an old denial) is
    sent once, not twice in a row."""
    return (
        len(blocks) == 1
        and _is_block(blocks[0], "text")
        and bool(merged)
        and _is_block(merged[-1], "text")
        and merged[-1].get("text") == blocks[0].get("text")
    )


def _is_block(block: object, kind: str) -> bool:
    return isinstance(block, dict) and block.get("type") == kind


def conversation_problems(messages: Iterable[Mapping[str, Any]]) -> list[str]:
    """Why the Messages API would reject ``messages`` (empty list: it would not); they
    are read once, in order (:func:`iter_messages` may give them)."""
    problems: list[str] = []
    pending: list[Any] = []  # the tool_use ids the last assistant message asked
    previous_role = None
    for i, message in enumerate(messages):
        role = message.get("role")
        if i == 0 and role != "user":
            problems.append("the first message is not from the user")
        content = message.get("content")
        if role not in ("user", "assistant"):
            problems.append(f"message {i} has role {role!r}")
            previous_role = role
            continue
        if i and previous_role == role:
            problems.append(f"messages {i - 1} and {i} are both {role}")
        previous_role = role
        if not content:
            problems.append(f"message {i} is empty")
        blocks = content if isinstance(content, list) else []
        answered: list[Any] = []  # tool_result ids, in order
        asked: list[Any] = []  # tool_use ids, in order
        for block in blocks:
            if isinstance(block, dict):
                kind = block.get("type")
                if kind == "tool_result":
                    answered.append(block.get("tool_use_id"))
                elif kind == "tool_use":
                    asked.append(block.get("id"))
        if role == "user":
            if answered or pending:
                problems.extend(_answer_problems(i, blocks, answered, pending))
            pending = []
        else:
            for tid in pending:
                problems.append(f"tool_use {tid!r} is not answered before message {i}")
            if answered:
                problems.append(f"assistant message {i} holds tool results")
            pending = asked
            if not all(is_tool_id(tid) for tid in pending):
                problems.append(f"message {i} has a tool_use without an id")
    for tid in pending:
        problems.append(f"tool_use {tid!r} is never answered")
    return problems


def _answer_problems(
    i: int, blocks: list[Any], answered: list[Any], pending: list[Any]
) -> list[str]:
    """Why user message ``i`` does not answer the ``pending`` tool_uses as the API wants:
    each once, only those, its tool results before anything else."""
    problems: list[str] = []
    expected = set(pending)
    seen = set(answered)
    if not seen <= expected:
        for tid in answered:
            if tid not in expected:
                problems.append(f"message {i} answers tool_use {tid!r} that was not asked")
    if len(seen) != len(answered):
        once: set[Any] = set()
        for tid in answered:
            if tid in once:
                problems.append(f"message {i} answers tool_use {tid!r} twice")
            once.add(tid)
    if not expected <= seen:
        for tid in pending:
            if tid not in seen:
                problems.append(f"tool_use {tid!r} is not answered in message {i}")
    if answered and not all(_is_block(b, "tool_result") for b in blocks[: len(answered)]):
        problems.append(f"message {i} has text before its tool results")
    return problems


def check_conversation(messages: Sequence[Mapping[str, Any]]) -> None:
    """Raise :class:`InvalidConversationError` unless the API would accept ``messages``
    as a conversation to continue: an empty list passes, since a resume always adds
    the next prompt."""
    problems = conversation_problems(messages)
    if problems:
        raise InvalidConversationError(problems)


def conversation(entries: Sequence[Entry]) -> list[dict[str, Any]]:
    """The messages to send when resuming ``entries``: ``to_messages(active_chain(...))``."""
    return to_messages(active_chain(entries))


def is_tool_id(value: object) -> bool:
    return isinstance(value, str) and bool(value)
