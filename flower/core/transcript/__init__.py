"""Transcripts as the model sees them: the active chain, editing, messages, repair, context size.

A stored transcript is a list of Claude-Code-shaped entries (see docs/entries.md) that
may hold several branches (forks from a rewind or a resume), streamed assistant replies
split one entry per content block, compaction boundaries and entries that are not
conversation at all. This package is the one place that knows how to read that, a
module per job (each imports only the ones listed before it):

- :mod:`.blocks` reads one entry: its message, content blocks, tool calls and results;
- :mod:`.chain` walks the active chain from the newest leaf back to the root
  (:func:`active_chain`), finds the leaf a new entry continues (:func:`leaf_uuid`) and
  counts what the model is not sent (:func:`unsent`, said by :func:`unsent_notes`);
- :mod:`.editing` removes entries and re-links their children (:func:`drop_entries`,
  the ONE helper every pruning policy uses, so the chain never breaks), inserts
  view-only entries (:func:`insert_after`) and copies what it changes;
- :mod:`.messages` turns a chain into the Messages API ``messages`` list
  (:func:`to_messages`) and checks the rules the API enforces (:func:`check_conversation`);
- :mod:`.usage` gives the context size of one round (:func:`context_tokens`);
- :mod:`.repair` is the safety net of every load (:func:`model_chain`): a chain that
  breaks those rules is repaired, and what was fixed is said;
- :mod:`.view` gives an entry's lines as a reader sees them (:func:`view_lines`).

Nothing here mutates its input: a changed entry is a copy, everything else is shared.
Every name is importable from ``flower.core.transcript`` itself.
"""

from __future__ import annotations

from flower.core.transcript.blocks import (
    CONVERSATION_TYPES,
    content_blocks,
    content_words,
    is_conversation,
    iter_blocks,
    message_of,
    message_texts,
    prompt_texts,
    result_text,
    tool_results,
    tool_uses,
    waiting_user_texts,
)
from flower.core.transcript.chain import (
    Unsent,
    active_chain,
    compaction_start,
    is_leaf,
    leaf_uuid,
    unsent,
    unsent_notes,
)
from flower.core.transcript.editing import (
    SYNTHETIC_NAMESPACE,
    deep_copy,
    drop_entries,
    insert_after,
    insert_chains,
    replace_blocks,
    replace_result_body,
    surviving_ancestor,
    synthetic_tool_result,
    with_content,
)
from flower.core.transcript.messages import (
    InvalidConversationError,
    check_conversation,
    conversation,
    conversation_problems,
    is_tool_id,
    iter_messages,
    to_messages,
)
from flower.core.transcript.repair import (
    INTERRUPTED_NOTE,
    OMITTED_NOTE,
    answer_interrupted,
    interrupted_note,
    model_chain,
    omitted_note,
    repair_conversation,
    without_repeats,
)
from flower.core.transcript.usage import (
    context_tokens,
)
from flower.core.transcript.view import (
    MAX_ARGS,
    MAX_RESULT,
    MAX_TEXT,
    LineKind,
    ViewLine,
    shorten,
    view_lines,
)

__all__ = [
    "CONVERSATION_TYPES",
    "INTERRUPTED_NOTE",
    "MAX_ARGS",
    "MAX_RESULT",
    "MAX_TEXT",
    "OMITTED_NOTE",
    "SYNTHETIC_NAMESPACE",
    "InvalidConversationError",
    "LineKind",
    "Unsent",
    "ViewLine",
    "active_chain",
    "answer_interrupted",
    "check_conversation",
    "compaction_start",
    "content_blocks",
    "content_words",
    "context_tokens",
    "conversation",
    "conversation_problems",
    "deep_copy",
    "drop_entries",
    "insert_after",
    "insert_chains",
    "interrupted_note",
    "is_conversation",
    "is_leaf",
    "is_tool_id",
    "iter_blocks",
    "iter_messages",
    "leaf_uuid",
    "message_of",
    "message_texts",
    "model_chain",
    "omitted_note",
    "prompt_texts",
    "repair_conversation",
    "replace_blocks",
    "replace_result_body",
    "result_text",
    "shorten",
    "surviving_ancestor",
    "synthetic_tool_result",
    "to_messages",
    "tool_results",
    "tool_uses",
    "unsent",
    "unsent_notes",
    "view_lines",
    "waiting_user_texts",
    "with_content",
    "without_repeats",
]
