"""The ToolBox contract the engine codes against: definitions, denials, validation."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tool_helpers import Call, run_tool

from flower.core.config import EngineConfig, load_settings
from flower.core.errors import FlowerError
from flower.runtime.tools import TOOL_NAMES, ToolBox, ToolConfigError, UnknownToolError
from flower.runtime.tools import box as box_module
from flower.runtime.tools.inputs import INPUTS, accepted_keys


def test_definitions_cover_every_tool_and_match_the_input_structs(box: ToolBox) -> None:
    definitions = box.definitions()
    assert [d["name"] for d in definitions] == ["Read", "Write", "Edit", "Glob", "Grep", "Bash"]
    for d in definitions:
        assert set(d) == {"name", "description", "input_schema"}
        assert d["description"]
        schema = d["input_schema"]
        struct = INPUTS[d["name"]]
        assert list(schema["properties"]) == accepted_keys(struct)
        required = [f.encode_name for f in msgspec.structs.fields(struct) if f.required]
        assert schema["required"] == required
        assert schema["additionalProperties"] is False
    json.dumps(definitions)


def test_built_from_the_engine_configuration(ws: Path, tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        "[tool.flower.engine]\n"
        "bash_timeout = 7.5\nmax_tool_output = 5000\nconfine_to_workspace = false\n"
    )
    engine = load_settings(cwd=tmp_path, environ={}).settings.engine
    box = ToolBox.from_config(ws, ["Read"], engine)
    assert (box.context.bash_timeout, box.context.max_output) == (7.5, 5000)
    assert box.context.confine is False
    default = ToolBox.from_config(ws, ["Read"], EngineConfig())
    assert (default.context.bash_timeout, default.context.max_output) == (120.0, 30_000)
    assert default.context.confine is True


def test_definitions_are_a_copy(box: ToolBox) -> None:
    box.definitions()[0]["name"] = "Changed"
    assert box.definitions()[0]["name"] == "Read"


def test_definitions_list_tools_the_agent_may_not_use(ws: Path) -> None:
    assert len(ToolBox(ws, []).definitions()) == len(TOOL_NAMES)


def test_a_tool_outside_allowed_is_denied_and_not_run(ws: Path) -> None:
    box = ToolBox(ws, ["Read", "Glob"])
    outcome = run_tool(box, "Bash", {"command": "touch ran"})
    reason = "the tool Bash is not in allowed_tools for this agent (allowed: Read, Glob)."
    assert outcome.content == f"Permission denied: {reason}"
    assert outcome.is_error and outcome.denied
    assert outcome.result == {"denied": True, "tool": "Bash", "reason": reason}
    assert not (ws / "ran").exists()


def test_an_empty_allowed_list_denies_every_tool(ws: Path) -> None:
    box = ToolBox(ws, [])
    for name in TOOL_NAMES:
        outcome = run_tool(box, name, {})
        assert outcome.denied
        assert outcome.content.endswith("(allowed: none).")


def test_denial_comes_before_input_validation(ws: Path) -> None:
    outcome = run_tool(ToolBox(ws, ["Read"]), "Write", "{not json")
    assert outcome.denied
    assert outcome.content.startswith("Permission denied:")


def test_an_unknown_tool_is_an_error_not_a_denial(call: Call) -> None:
    outcome = call("WebFetch", {"url": "https://example.com"})
    assert outcome.is_error and not outcome.denied
    assert "no such tool 'WebFetch'" in outcome.content
    assert "Read, Write, Edit, Glob, Grep, Bash" in outcome.content


def test_unknown_names_in_allowed_are_refused_when_the_box_is_built(ws: Path) -> None:
    with pytest.raises(UnknownToolError, match=r"'read'.*Read, Write") as info:
        ToolBox(ws, ["read", "Glob"])
    assert isinstance(info.value, FlowerError)


@pytest.mark.parametrize(
    ("options", "message"),
    [({"bash_timeout": 0}, "bash_timeout"), ({"max_output": 10}, "max_output")],
)
def test_bad_settings_are_refused(ws: Path, options: dict, message: str) -> None:
    with pytest.raises(ToolConfigError, match=message):
        ToolBox(ws, ["Read"], **options)


@pytest.mark.parametrize(
    ("tool", "tool_input", "expected"),
    [
        ("Read", {}, "missing required key 'file_path' (accepted keys: file_path, offset, limit)"),
        ("Read", {"file_path": 3}, "'file_path': expected `str`, got `int`"),
        ("Read", {"file_path": "a", "path": "b"}, "unknown key 'path'"),
        ("Read", {"file_path": "a", "limit": 0}, "'limit': expected `int` >= 1"),
        ("Edit", {"file_path": "a", "old_string": "x"}, "missing required key 'new_string'"),
        (
            "Grep",
            {"pattern": "x", "output_mode": "lines"},
            "invalid enum value 'lines'; expected one of: content, files_with_matches, count",
        ),
        ("Bash", {"command": ["ls"]}, "'command': expected `str`, got `array`"),
        ("Bash", {"command": "ls", "cwd": "/"}, "unknown key 'cwd'"),
        ("Glob", ["*.py"], "the input must be a JSON object"),
        ("Glob", None, "the input must be a JSON object"),
        ("Glob", '"*.py"', "the input must be a JSON object"),
    ],
)
def test_invalid_input_is_an_error_outcome(
    call: Call, tool: str, tool_input: object, expected: str
) -> None:
    outcome = call(tool, tool_input)
    assert outcome.is_error and not outcome.denied
    assert outcome.content.startswith(f"Error: Invalid input for {tool}: ")
    assert expected in outcome.content
    assert outcome.result == {"error": outcome.content, "tool": tool}


def test_malformed_json_input_is_an_error_outcome(call: Call, ws: Path) -> None:
    outcome = call("Write", '{"file_path": "a.txt", "content": "unterminated')
    assert outcome.is_error and not outcome.denied
    assert "the input is not valid JSON" in outcome.content
    assert '\'{"file_path": "a.txt"' in outcome.content
    assert not (ws / "a.txt").exists()


def test_deeply_nested_json_input_is_an_error_outcome(call: Call) -> None:
    outcome = call("Read", "[" * 100_000 + "]" * 100_000)
    assert outcome.is_error and "nested too deeply" in outcome.content


def test_a_json_string_input_is_decoded_and_run(call: Call, ws: Path) -> None:
    outcome = call("Write", json.dumps({"file_path": "a.txt", "content": "hi"}))
    assert not outcome.is_error
    assert (ws / "a.txt").read_text() == "hi"


def test_lax_types_are_accepted(call: Call, ws: Path) -> None:
    (ws / "f.txt").write_text("a\nb\nc\n")
    outcome = call("Read", {"file_path": "f.txt", "offset": "2", "limit": "1"})
    assert outcome.content.startswith("     2\tb")


def test_null_for_an_optional_key_means_absent(call: Call, ws: Path) -> None:
    (ws / "f.txt").write_text("a\n")
    assert not call("Read", {"file_path": "f.txt", "offset": None, "limit": None}).is_error


def test_claude_code_bash_description_key_is_accepted(call: Call) -> None:
    outcome = call("Bash", {"command": "echo hi", "description": "Say hi"})
    assert not outcome.is_error
    assert outcome.content.startswith("hi\n")


def test_an_unexpected_failure_inside_a_tool_is_an_error_outcome(
    call: Call, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def broken(args: object, ctx: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setitem(box_module.RUNNERS, "Glob", broken)
    outcome = call("Glob", {"pattern": "*"})
    assert outcome.is_error
    assert outcome.content == "Error: Glob failed unexpectedly: RuntimeError: boom"


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=6,
)


@st.composite
def _tool_calls(draw: st.DrawFn) -> tuple[str, object]:
    name = draw(st.sampled_from(["Read", "Write", "Edit", "Glob", "Grep"]))
    keys = [*accepted_keys(INPUTS[name]), "extra"]
    values = st.one_of(_json, st.text(max_size=30), st.sampled_from(["..", "/", "a/b", "*"]))
    shaped = st.dictionaries(st.sampled_from(keys), values, max_size=5)
    raw = st.one_of(shaped, _json, st.text(max_size=40))
    return name, draw(raw)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(tool_call=_tool_calls())
def test_arbitrary_input_never_raises(box: ToolBox, tool_call: tuple[str, object]) -> None:
    name, tool_input = tool_call
    outcome = run_tool(box, name, tool_input)
    assert outcome.content
