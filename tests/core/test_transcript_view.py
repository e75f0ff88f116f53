"""A transcript entry's readable view from Python: flower.core.transcript.view."""

from __future__ import annotations

from flower.core.i18n import language
from flower.core.transcript.view import MAX_RESULT, ViewLine, view_lines


def test_an_assistant_turn_shows_its_text_and_its_tool_call() -> None:
    entry = {
        "type": "assistant",
        "message": {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Listing."},
                {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}},
                {"type": "image"},
            ],
        },
    }
    with language("en"):
        lines = list(view_lines(entry))
    assert lines == [
        ViewLine("assistant", "assistant", "Listing."),
        ViewLine("tool_call", "tool call", 'Bash {"command":"ls"}'),
        ViewLine("other", "assistant", "[image]"),
    ]


def test_a_tool_error_is_its_own_kind_and_long_output_is_cut() -> None:
    error = {"type": "tool_result", "tool_use_id": "t1", "is_error": True, "content": "boom"}
    long = {"type": "tool_result", "tool_use_id": "t2", "content": "x" * (MAX_RESULT + 5)}
    entry = {"type": "user", "message": {"role": "user", "content": [error, long]}}
    with language("en"):
        failed, cut = view_lines(entry)
    assert failed == ViewLine("tool_error", "tool error", "boom")
    assert cut.kind == "tool_result" and cut.text == "x" * MAX_RESULT + "… (5 more characters)"


def test_an_unknown_entry_type_shows_as_its_name() -> None:
    assert list(view_lines({"type": "progress"})) == [ViewLine("other", "progress", "")]
