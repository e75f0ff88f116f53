"""Read, Write and Edit."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from tool_helpers import Call

from flower.runtime.tools import ToolBox


def test_read_numbers_lines_like_cat_n(call: Call, ws: Path) -> None:
    (ws / "a.txt").write_text("hello\n\tindented\nlast")
    outcome = call("Read", {"file_path": "a.txt"})
    assert not outcome.is_error
    assert outcome.content == "     1\thello\n     2\t\tindented\n     3\tlast"
    assert outcome.result == {
        "type": "text",
        "file": {
            "filePath": str(ws / "a.txt"),
            "startLine": 1,
            "numLines": 3,
            "totalLines": 3,
            "truncated": False,
        },
    }


def test_read_accepts_an_absolute_path_inside_the_workspace(call: Call, ws: Path) -> None:
    (ws / "a.txt").write_text("x\n")
    assert call("Read", {"file_path": str(ws / "a.txt")}).content == "     1\tx"


def test_read_offset_and_limit(call: Call, ws: Path) -> None:
    (ws / "n.txt").write_text("".join(f"line {i}\n" for i in range(1, 51)))
    outcome = call("Read", {"file_path": "n.txt", "offset": 10, "limit": 3})
    lines = outcome.content.split("\n")
    assert lines[:3] == ["    10\tline 10", "    11\tline 11", "    12\tline 12"]
    assert "shown lines 10-12 of 50" in lines[3]
    assert "offset=13" in lines[3]
    assert outcome.result["file"]["totalLines"] == 50
    assert outcome.result["file"]["truncated"] is True


@pytest.mark.parametrize("trailing_newline", [True, False])
@pytest.mark.parametrize("offset", [1, 2, 29_999, 30_000, 60_000, 60_001, 99_999])
def test_read_offset_across_chunk_boundaries(
    call: Call, ws: Path, offset: int, trailing_newline: bool
) -> None:
    lines = [f"{i:07d}" + "y" * (i % 50) for i in range(1, 60_001)]  # about 2 MB
    (ws / "n.txt").write_text("\n".join(lines) + ("\n" if trailing_newline else ""))
    outcome = call("Read", {"file_path": "n.txt", "offset": offset, "limit": 2})
    assert outcome.result["file"]["totalLines"] == 60_000
    if offset > 60_000:
        assert "has 60,000 lines; offset" in outcome.content
    else:
        expected = [f"{n:>6}\t{lines[n - 1]}" for n in range(offset, min(offset + 2, 60_001))]
        assert outcome.content.split("\n")[: len(expected)] == expected


def test_read_offset_past_the_end_says_so(call: Call, ws: Path) -> None:
    (ws / "n.txt").write_text("a\nb\n")
    outcome = call("Read", {"file_path": "n.txt", "offset": 9})
    assert not outcome.is_error
    assert "has 2 lines; offset 9 is past the end" in outcome.content


def test_read_an_empty_file(call: Call, ws: Path) -> None:
    (ws / "e.txt").write_text("")
    outcome = call("Read", {"file_path": "e.txt"})
    assert not outcome.is_error
    assert "exists but is empty" in outcome.content


def test_read_cuts_a_very_long_line(call: Call, ws: Path) -> None:
    (ws / "min.js").write_text("x" * 100_000 + "\nnext\n")
    outcome = call("Read", {"file_path": "min.js"}, ToolBox(ws, ["Read"], max_output=10_000))
    first, second = outcome.content.split("\n")[:2]
    assert first == "     1\t" + "x" * 2000 + " [... line truncated]"
    assert second == "     2\tnext"


def test_read_of_a_large_file_is_capped_at_max_output(call: Call, ws: Path) -> None:
    (ws / "big.txt").write_text("".join(f"{i:05d} some text\n" for i in range(20_000)))
    outcome = call("Read", {"file_path": "big.txt"})  # max_output=2000 in the fixture
    assert len(outcome.content) < 2200
    assert "of 20,000 (stopped at the output limit); read on with offset=" in outcome.content
    assert outcome.result["file"]["totalLines"] == 20_000
    next_offset = int(outcome.content.rsplit("offset=", 1)[1].rstrip("]"))
    assert next_offset == outcome.result["file"]["numLines"] + 1


def test_read_default_limit_is_2000_lines(call: Call, ws: Path) -> None:
    (ws / "long.txt").write_text("x\n" * 2500)
    outcome = call("Read", {"file_path": "long.txt"}, ToolBox(ws, ["Read"], max_output=100_000))
    assert outcome.result["file"]["numLines"] == 2000
    assert "stopped at 2,000 lines" in outcome.content


def test_read_refuses_a_binary_file(call: Call, ws: Path) -> None:
    (ws / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(500))
    outcome = call("Read", {"file_path": "img.png"})
    assert outcome.is_error and not outcome.denied
    assert "is a binary file (516 bytes)" in outcome.content


def test_read_decodes_invalid_utf8_with_replacement(call: Call, ws: Path) -> None:
    (ws / "latin.txt").write_bytes(b"caf\xe9\n")
    assert call("Read", {"file_path": "latin.txt"}).content == "     1\tcaf\ufffd"


def test_read_of_a_missing_file_or_a_directory_is_an_error(call: Call, ws: Path) -> None:
    missing = call("Read", {"file_path": "nope.txt"})
    assert missing.is_error and f"File does not exist: {ws / 'nope.txt'}" in missing.content
    (ws / "d").mkdir()
    folder = call("Read", {"file_path": "d"})
    assert folder.is_error and "is a directory" in folder.content


def test_read_of_a_fifo_is_refused_instead_of_hanging(call: Call, ws: Path) -> None:
    os.mkfifo(ws / "pipe")
    outcome = call("Read", {"file_path": "pipe"})
    assert outcome.is_error and "not a regular file" in outcome.content


def test_write_creates_parent_directories(call: Call, ws: Path) -> None:
    outcome = call("Write", {"file_path": "a/b/c.txt", "content": "héllo\n"})
    assert not outcome.is_error
    assert (ws / "a/b/c.txt").read_text(encoding="utf-8") == "héllo\n"
    assert outcome.result == {"type": "create", "filePath": str(ws / "a/b/c.txt"), "bytes": 7}
    assert "File created successfully at:" in outcome.content


def test_write_replaces_and_keeps_the_file_mode(call: Call, ws: Path) -> None:
    target = ws / "run.sh"
    target.write_text("old")
    target.chmod(0o750)
    outcome = call("Write", {"file_path": "run.sh", "content": "new"})
    assert outcome.result["type"] == "update"
    assert target.read_text() == "new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o750
    assert sorted(p.name for p in ws.iterdir()) == ["run.sh"]  # no temporary file left


def test_write_over_a_directory_is_an_error(call: Call, ws: Path) -> None:
    (ws / "d").mkdir()
    outcome = call("Write", {"file_path": "d", "content": "x"})
    assert outcome.is_error and "is a directory" in outcome.content


def test_write_under_a_file_is_an_error(call: Call, ws: Path) -> None:
    (ws / "f").write_text("x")
    outcome = call("Write", {"file_path": "f/g.txt", "content": "x"})
    assert outcome.is_error and outcome.content.startswith("Error: Write failed:")
    assert (ws / "f").read_text() == "x"


def test_write_of_text_that_is_not_utf8_encodable_is_an_error(call: Call, ws: Path) -> None:
    outcome = call("Write", {"file_path": "s.txt", "content": "bad \ud800 surrogate"})
    assert outcome.is_error and "cannot be written as UTF-8" in outcome.content
    assert not (ws / "s.txt").exists()


def test_edit_replaces_a_unique_string(call: Call, ws: Path) -> None:
    (ws / "m.py").write_text("def f():\n    return 1\n")
    outcome = call(
        "Edit", {"file_path": "m.py", "old_string": "return 1", "new_string": "return 2"}
    )
    assert not outcome.is_error
    assert (ws / "m.py").read_text() == "def f():\n    return 2\n"
    assert "     2\t    return 2" in outcome.content
    assert outcome.result == {
        "type": "update",
        "filePath": str(ws / "m.py"),
        "replacements": 1,
        "replaceAll": False,
    }


def test_edit_not_found_is_a_clear_error(call: Call, ws: Path) -> None:
    (ws / "m.py").write_text("x = 1\n")
    outcome = call("Edit", {"file_path": "m.py", "old_string": "y = 1", "new_string": "y = 2"})
    assert outcome.is_error
    assert f"old_string was not found in {ws / 'm.py'}" in outcome.content
    assert (ws / "m.py").read_text() == "x = 1\n"


def test_edit_not_found_mentions_crlf_line_endings(call: Call, ws: Path) -> None:
    (ws / "w.txt").write_bytes(b"a\r\nb\r\n")
    outcome = call("Edit", {"file_path": "w.txt", "old_string": "a\nb", "new_string": "c"})
    assert "CRLF" in outcome.content


def test_edit_requires_a_unique_match_unless_replace_all(call: Call, ws: Path) -> None:
    (ws / "m.txt").write_text("x x x\n")
    ambiguous = call("Edit", {"file_path": "m.txt", "old_string": "x", "new_string": "y"})
    assert ambiguous.is_error and "found 3 times" in ambiguous.content
    assert "replace_all" in ambiguous.content
    assert (ws / "m.txt").read_text() == "x x x\n"
    every = call(
        "Edit", {"file_path": "m.txt", "old_string": "x", "new_string": "y", "replace_all": True}
    )
    assert not every.is_error and every.result["replacements"] == 3
    assert (ws / "m.txt").read_text() == "y y y\n"


def test_edit_with_identical_strings_is_an_error(call: Call, ws: Path) -> None:
    (ws / "m.txt").write_text("x\n")
    outcome = call("Edit", {"file_path": "m.txt", "old_string": "x", "new_string": "x"})
    assert outcome.is_error and "the same" in outcome.content


def test_edit_with_empty_old_string_creates_a_missing_file(call: Call, ws: Path) -> None:
    outcome = call("Edit", {"file_path": "new.txt", "old_string": "", "new_string": "hi\n"})
    assert not outcome.is_error and outcome.result["type"] == "create"
    assert (ws / "new.txt").read_text() == "hi\n"
    again = call("Edit", {"file_path": "new.txt", "old_string": "", "new_string": "other"})
    assert again.is_error and "old_string is empty" in again.content


def test_edit_of_a_missing_file_is_an_error(call: Call, ws: Path) -> None:
    outcome = call("Edit", {"file_path": "none.txt", "old_string": "a", "new_string": "b"})
    assert outcome.is_error and "File does not exist" in outcome.content
    assert not (ws / "none.txt").exists()


def test_edit_refuses_binary_and_non_utf8_files(call: Call, ws: Path) -> None:
    (ws / "b.bin").write_bytes(b"a\x00b")
    (ws / "l.txt").write_bytes(b"caf\xe9")
    binary = call("Edit", {"file_path": "b.bin", "old_string": "a", "new_string": "c"})
    latin = call("Edit", {"file_path": "l.txt", "old_string": "caf", "new_string": "c"})
    assert binary.is_error and "binary" in binary.content
    assert latin.is_error and "not UTF-8 text" in latin.content
    assert (ws / "l.txt").read_bytes() == b"caf\xe9"
