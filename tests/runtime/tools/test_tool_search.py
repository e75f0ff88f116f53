"""Glob and Grep."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from tool_helpers import Call

from flower.runtime.tools import ToolBox
from flower.runtime.tools.globbing import compile_glob, expand_braces, split_base


def _tree(ws: Path, files: dict[str, str], *, mtimes: dict[str, int] | None = None) -> None:
    for rel, text in files.items():
        path = ws / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for rel, when in (mtimes or {}).items():
        os.utime(ws / rel, (when, when))


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("*.py", "a.py", True),
        ("*.py", "src/a.py", False),
        ("**/*.py", "a.py", True),
        ("**/*.py", "src/deep/a.py", True),
        ("src/**", "src/x/y.txt", True),
        ("src/*.{ts,tsx}", "src/a.tsx", True),
        ("src/*.{ts,tsx}", "src/a.js", False),
        ("?.txt", "a.txt", True),
        ("?.txt", "ab.txt", False),
        ("[!a]*.txt", "b.txt", True),
        ("[!a]*.txt", "a.txt", False),
        ("*", ".hidden", True),
        ("a+b(c).txt", "a+b(c).txt", True),
    ],
)
def test_glob_patterns(pattern: str, path: str, matches: bool) -> None:
    assert bool(compile_glob(pattern).match(path)) is matches


def test_glob_helpers() -> None:
    assert expand_braces("a.{py,{t,j}s}") == ["a.py", "a.ts", "a.js"]
    assert expand_braces("lone{brace") == ["lone{brace"]
    assert split_base("src/a/*.py") == ("src/a", "*.py")
    assert split_base("src/main.py") == ("src", "main.py")
    assert split_base("/abs/**/x") == ("/abs", "**/x")


def test_glob_brace_bomb_is_an_error(call: Call) -> None:
    outcome = call("Glob", {"pattern": "{a,b}" * 12})
    assert outcome.is_error and "more than 256 alternatives" in outcome.content


def test_glob_lists_newest_first(call: Call, ws: Path) -> None:
    _tree(
        ws,
        {"old.py": "", "src/new.py": "", "src/mid.py": "", "notes.txt": ""},
        mtimes={"old.py": 1_000, "src/new.py": 3_000, "src/mid.py": 2_000},
    )
    outcome = call("Glob", {"pattern": "**/*.py"})
    expected = [str(ws / p) for p in ("src/new.py", "src/mid.py", "old.py")]
    assert outcome.content.split("\n") == expected
    assert outcome.result["filenames"] == expected
    assert outcome.result["numFiles"] == 3 and outcome.result["truncated"] is False


def test_glob_in_a_path_and_top_level_only(call: Call, ws: Path) -> None:
    _tree(ws, {"a.py": "", "src/b.py": "", "src/sub/c.py": ""})
    assert call("Glob", {"pattern": "*.py"}).content == str(ws / "a.py")
    assert call("Glob", {"pattern": "*.py", "path": "src"}).content == str(ws / "src/b.py")
    assert call("Glob", {"pattern": "src/sub/*.py"}).content == str(ws / "src/sub/c.py")
    absolute = call("Glob", {"pattern": f"{ws}/src/*.py"})
    assert absolute.content == str(ws / "src/b.py")


def test_glob_skips_dot_git(call: Call, ws: Path) -> None:
    _tree(ws, {".git/config": "", ".gitignore": "", "x/.git/HEAD": ""})
    assert call("Glob", {"pattern": "**/*"}).content == str(ws / ".gitignore")


def test_glob_is_capped_at_100(call: Call, ws: Path) -> None:
    _tree(ws, {f"f{i:03d}.txt": "" for i in range(105)})
    outcome = call("Glob", {"pattern": "*.txt"}, ToolBox(ws, ["Glob"], max_output=100_000))
    lines = outcome.content.split("\n")
    assert len(lines) == 101
    assert "105 files matched, the 100 newest are shown" in lines[-1]
    assert outcome.result["numFiles"] == 105 and outcome.result["truncated"] is True
    assert len(outcome.result["filenames"]) == 100


def test_glob_output_fits_max_output(call: Call, ws: Path) -> None:
    _tree(ws, {f"f{i:03d}.txt": "" for i in range(105)})
    outcome = call("Glob", {"pattern": "*.txt"})  # max_output=2000 in the fixture
    assert len(outcome.content) <= 2000
    shown = len(outcome.result["filenames"])
    assert 10 < shown < 100
    assert outcome.content.endswith(
        f"105 files matched, the {shown} newest are shown. Use a more specific path or pattern.)"
    )


def test_glob_without_matches(call: Call) -> None:
    outcome = call("Glob", {"pattern": "*.nothing"})
    assert not outcome.is_error and outcome.content == "No files found"


def test_glob_of_a_missing_directory_is_an_error(call: Call) -> None:
    outcome = call("Glob", {"pattern": "*.py", "path": "missing"})
    assert outcome.is_error and "is not a directory" in outcome.content


def test_grep_lists_matching_files_newest_first(call: Call, ws: Path) -> None:
    _tree(
        ws,
        {"a.py": "import os\n", "b.py": "import sys\n", "c.txt": "nothing\n"},
        mtimes={"a.py": 1_000, "b.py": 2_000},
    )
    outcome = call("Grep", {"pattern": r"^import \w+"})
    assert outcome.content == f"Found 2 files\n{ws / 'b.py'}\n{ws / 'a.py'}"
    assert outcome.result["numFiles"] == 2
    assert outcome.result["filenames"] == [str(ws / "b.py"), str(ws / "a.py")]


def test_grep_content_mode_with_line_numbers_and_case(call: Call, ws: Path) -> None:
    _tree(ws, {"m.py": "alpha\nBETA\ngamma beta\n"})
    outcome = call("Grep", {"pattern": "beta", "output_mode": "content", "-i": True})
    assert outcome.content == f"{ws / 'm.py'}:2:BETA\n{ws / 'm.py'}:3:gamma beta"
    plain = call("Grep", {"pattern": "beta", "output_mode": "content", "-n": False})
    assert plain.content == f"{ws / 'm.py'}:gamma beta"


def test_grep_context_lines(call: Call, ws: Path) -> None:
    _tree(ws, {"f.txt": "".join(f"l{i}\n" for i in range(1, 11))})
    outcome = call(
        "Grep", {"pattern": "^l(2|8)$", "output_mode": "content", "-C": 1, "path": "f.txt"}
    )
    f = ws / "f.txt"
    assert outcome.content.split("\n") == [
        f"{f}-1-l1",
        f"{f}:2:l2",
        f"{f}-3-l3",
        "--",
        f"{f}-7-l7",
        f"{f}:8:l8",
        f"{f}-9-l9",
    ]


def test_grep_count_mode_and_glob_filter(call: Call, ws: Path) -> None:
    _tree(ws, {"a.py": "x\nx\n", "src/b.py": "x\n", "c.md": "x\n"})
    outcome = call("Grep", {"pattern": "x", "output_mode": "count", "glob": "*.py"})
    rows = sorted(outcome.content.split("\n\n")[0].split("\n"))
    assert rows == [f"{ws / 'a.py'}:2", f"{ws / 'src/b.py'}:1"]
    assert outcome.content.endswith("Found 3 matches in 2 files.")
    assert outcome.result["numMatches"] == 3
    by_path = call("Grep", {"pattern": "x", "glob": "src/**/*.py"})
    assert by_path.result["filenames"] == [str(ws / "src/b.py")]


def test_grep_skips_binary_files_and_dot_git(call: Call, ws: Path) -> None:
    _tree(ws, {".git/config": "needle\n", "ok.txt": "needle\n"})
    (ws / "blob.bin").write_bytes(b"needle\x00\x01")
    outcome = call("Grep", {"pattern": "needle"})
    assert outcome.result["filenames"] == [str(ws / "ok.txt")]


def test_grep_skips_fifos_instead_of_hanging(call: Call, ws: Path) -> None:
    os.mkfifo(ws / "pipe")
    _tree(ws, {"ok.txt": "needle\n"})
    assert call("Grep", {"pattern": "needle"}).result["numFiles"] == 1


def test_grep_multiline(call: Call, ws: Path) -> None:
    _tree(ws, {"f.py": "def f(\n    x,\n):\n    pass\n"})
    outcome = call(
        "Grep",
        {"pattern": r"def f\(.*?\):", "multiline": True, "output_mode": "content"},
    )
    f = ws / "f.py"
    assert outcome.content.split("\n") == [f"{f}:1:def f(", f"{f}:2:    x,", f"{f}:3:):"]


def test_grep_head_limit(call: Call, ws: Path) -> None:
    _tree(ws, {"f.txt": "hit\n" * 10})
    outcome = call("Grep", {"pattern": "hit", "output_mode": "content", "head_limit": 2})
    assert outcome.content.split("\n")[:2] == [f"{ws / 'f.txt'}:1:hit", f"{ws / 'f.txt'}:2:hit"]
    assert "head_limit=2 reached" in outcome.content
    assert outcome.result["truncated"] is True


def test_grep_output_is_capped(call: Call, ws: Path) -> None:
    _tree(ws, {f"f{i}.txt": "match here\n" * 200 for i in range(20)})
    outcome = call("Grep", {"pattern": "match", "output_mode": "content"})
    assert len(outcome.content) < 2300  # max_output=2000 in the fixture, plus the note
    assert "narrow the pattern, path or glob" in outcome.content
    assert outcome.result["truncated"] is True


def test_grep_invalid_regex_is_an_error(call: Call) -> None:
    outcome = call("Grep", {"pattern": "(unclosed"})
    assert outcome.is_error and not outcome.denied
    assert "invalid regular expression '(unclosed'" in outcome.content


def test_grep_missing_path_is_an_error(call: Call) -> None:
    outcome = call("Grep", {"pattern": "x", "path": "nowhere"})
    assert outcome.is_error and "Path does not exist" in outcome.content


def test_grep_no_matches(call: Call, ws: Path) -> None:
    _tree(ws, {"a.txt": "hay\n"})
    outcome = call("Grep", {"pattern": "needle"})
    assert not outcome.is_error and outcome.content == "No matches found"


def test_grep_stops_at_the_time_limit(ws: Path, call: Call) -> None:
    _tree(ws, {f"f{i}.txt": "x\n" for i in range(5)})
    box = ToolBox(ws, ["Grep"], bash_timeout=1e-9)
    outcome = call("Grep", {"pattern": "x"}, box)
    assert outcome.result["timedOut"] is True
    assert "results are partial" in outcome.content


@pytest.mark.parametrize(
    ("pattern", "lines"),
    [
        (r"\Afoo", [2]),
        (r"bar\Z", [1]),
        (r"(?<!x)foo", [2]),
        (r"^foo$", [2]),
        (r"o\s", []),
        (r"^$", [3]),
    ],
)
def test_grep_matches_line_by_line(call: Call, ws: Path, pattern: str, lines: list[int]) -> None:
    _tree(ws, {"f.txt": "bar\nfoo\n\n"})
    outcome = call("Grep", {"pattern": pattern, "output_mode": "content", "path": "f.txt"})
    found = [int(row.split(":")[-2]) for row in outcome.content.split("\n") if ":" in row]
    assert found == lines
