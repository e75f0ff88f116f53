"""Every tool path stays inside the workspace, symlinks included (issue 11, item 5)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from tool_helpers import Call

from flower.runtime.tools import TOOL_NAMES, ToolBox, ToolOutcome


def _assert_refused(outcome: ToolOutcome, ws: Path) -> None:
    assert outcome.denied and outcome.is_error
    assert outcome.content.startswith("Permission denied: path ")
    assert f"is outside the workspace {ws}" in outcome.content
    assert outcome.result["denied"] is True
    assert outcome.result["reason"] in outcome.content
    assert "TOP-SECRET" not in outcome.content


def _every_file_tool(target: str) -> list[tuple[str, dict]]:
    return [
        ("Read", {"file_path": target}),
        ("Write", {"file_path": target, "content": "overwritten"}),
        ("Edit", {"file_path": target, "old_string": "TOP", "new_string": "OWNED"}),
        ("Grep", {"pattern": "TOP", "path": target, "output_mode": "content"}),
    ]


@pytest.mark.parametrize("index", range(4))
@pytest.mark.parametrize("how", ["absolute", "relative", "home"])
def test_a_path_outside_is_refused(
    call: Call, ws: Path, outside: Path, how: str, index: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(outside))
    target = {
        "absolute": str(outside / "secret.txt"),
        "relative": "../outside/secret.txt",
        "home": "~/secret.txt",
    }[how]
    name, tool_input = _every_file_tool(target)[index]
    _assert_refused(call(name, tool_input), ws)
    assert (outside / "secret.txt").read_text() == "TOP-SECRET\n"


@pytest.mark.parametrize("index", range(4))
def test_a_symlink_to_a_file_outside_is_refused(
    call: Call, ws: Path, outside: Path, index: int
) -> None:
    (ws / "link.txt").symlink_to(outside / "secret.txt")
    name, tool_input = _every_file_tool("link.txt")[index]
    outcome = call(name, tool_input)
    _assert_refused(outcome, ws)
    assert f"(it resolves to {outside / 'secret.txt'})" in outcome.content
    assert (outside / "secret.txt").read_text() == "TOP-SECRET\n"
    assert (ws / "link.txt").is_symlink()


@pytest.mark.parametrize("index", range(4))
def test_a_symlinked_parent_directory_is_refused(
    call: Call, ws: Path, outside: Path, index: int
) -> None:
    (ws / "sub").symlink_to(outside, target_is_directory=True)
    name, tool_input = _every_file_tool("sub/secret.txt")[index]
    _assert_refused(call(name, tool_input), ws)
    assert (outside / "secret.txt").read_text() == "TOP-SECRET\n"


def test_writing_a_new_file_through_a_symlinked_directory_is_refused(
    call: Call, ws: Path, outside: Path
) -> None:
    (ws / "sub").symlink_to(outside, target_is_directory=True)
    _assert_refused(call("Write", {"file_path": "sub/deeper/new.txt", "content": "x"}), ws)
    _assert_refused(
        call("Edit", {"file_path": "sub/e.txt", "old_string": "", "new_string": "x"}), ws
    )
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]


def test_a_dangling_symlink_pointing_outside_is_refused(
    call: Call, ws: Path, outside: Path
) -> None:
    (ws / "trap.txt").symlink_to(outside / "created-by-agent.txt")
    _assert_refused(call("Write", {"file_path": "trap.txt", "content": "x"}), ws)
    assert not (outside / "created-by-agent.txt").exists()


def test_a_symlink_created_by_bash_to_a_file_outside_is_refused(
    call: Call, ws: Path, outside: Path
) -> None:
    made = call("Bash", {"command": f"ln -s {outside / 'secret.txt'} innocent.txt"})
    assert not made.is_error
    _assert_refused(call("Read", {"file_path": "innocent.txt"}), ws)


def test_glob_and_grep_search_roots_outside_are_refused(
    call: Call, ws: Path, outside: Path
) -> None:
    _assert_refused(call("Glob", {"pattern": "*.txt", "path": str(outside)}), ws)
    _assert_refused(call("Glob", {"pattern": "../outside/*.txt"}), ws)
    _assert_refused(call("Glob", {"pattern": f"{outside}/*.txt"}), ws)
    _assert_refused(call("Grep", {"pattern": "TOP", "path": ".."}), ws)


def test_grep_does_not_follow_a_symlink_out_of_the_workspace(
    call: Call, ws: Path, outside: Path
) -> None:
    (ws / "link.txt").symlink_to(outside / "secret.txt")
    (ws / "linkdir").symlink_to(outside, target_is_directory=True)
    (ws / "own.txt").write_text("TOP-level but ours\n")
    outcome = call("Grep", {"pattern": "TOP", "output_mode": "content"})
    assert outcome.content == f"{ws / 'own.txt'}:1:TOP-level but ours"


def test_symlinks_that_stay_inside_are_fine(call: Call, ws: Path) -> None:
    (ws / "real").mkdir()
    (ws / "real/f.txt").write_text("inside\n")
    (ws / "alias").symlink_to(ws / "real", target_is_directory=True)
    assert call("Read", {"file_path": "alias/f.txt"}).content == "     1\tinside"
    outcome = call("Write", {"file_path": "alias/g.txt", "content": "x"})
    assert outcome.result["filePath"] == str(ws / "real/g.txt")


def test_a_workspace_reached_through_a_symlink(tmp_path: Path, ws: Path, call: Call) -> None:
    (ws / "f.txt").write_text("x\n")
    alias = tmp_path / "alias"
    alias.symlink_to(ws, target_is_directory=True)
    box = ToolBox(alias, ["Read"])
    assert box.workspace == ws.resolve()
    assert call("Read", {"file_path": str(alias / "f.txt")}, box).content == "     1\tx"
    assert call("Read", {"file_path": str(ws / "f.txt")}, box).content == "     1\tx"


@pytest.mark.parametrize("name", ["Read", "Write", "Edit", "Glob", "Grep"])
def test_a_nul_byte_in_a_path_is_an_error(call: Call, name: str) -> None:
    key = {"Glob": "pattern", "Grep": "path"}.get(name, "file_path")
    tool_input = {
        "Read": {},
        "Write": {"content": ""},
        "Edit": {"old_string": "a", "new_string": "b"},
    }
    payload = {**tool_input.get(name, {"pattern": "x"}), key: "a\x00b"}
    outcome = call(name, payload)
    assert outcome.is_error and not outcome.denied
    assert "contains a NUL byte" in outcome.content


def test_an_empty_path_is_an_error(call: Call) -> None:
    outcome = call("Read", {"file_path": "  "})
    assert outcome.is_error and not outcome.denied
    assert "file_path is empty" in outcome.content


def test_confine_false_lets_tools_reach_outside(ws: Path, outside: Path, call: Call) -> None:
    box = ToolBox(ws, list(TOOL_NAMES), confine=False)
    assert call("Read", {"file_path": "../outside/secret.txt"}, box).content == "     1\tTOP-SECRET"
    (ws / "link.txt").symlink_to(outside / "secret.txt")
    assert "TOP-SECRET" in call("Grep", {"pattern": "TOP", "output_mode": "content"}, box).content


def test_bash_starts_in_the_workspace_but_is_not_confined(
    call: Call, ws: Path, outside: Path
) -> None:
    assert call("Bash", {"command": "pwd -P"}).content.startswith(f"{os.path.realpath(ws)}\n")
    assert "TOP-SECRET" in call("Bash", {"command": "cat ../outside/secret.txt"}).content


def test_the_trim_folder_outside_the_workspace_is_readable_and_nothing_else(
    call: Call, ws: Path, outside: Path
) -> None:
    trimmed = outside / "runs" / "trimmed" / "sess"
    trimmed.mkdir(parents=True)
    (trimmed / "toolu_1.txt").write_text("the full output\n")
    box = ToolBox(ws, list(TOOL_NAMES), readable=(outside / "runs" / "trimmed",))
    read = call("Read", {"file_path": str(trimmed / "toolu_1.txt")}, box)
    assert not read.is_error and "the full output" in read.content
    _assert_refused(call("Read", {"file_path": str(outside / "secret.txt")}, box), ws)
    written = call("Write", {"file_path": str(trimmed / "toolu_1.txt"), "content": "x"}, box)
    _assert_refused(written, ws)  # readable, never writable
    assert (trimmed / "toolu_1.txt").read_text() == "the full output\n"
