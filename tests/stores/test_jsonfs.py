"""The jsonfs session store: Claude Code's layout, torn lines, locking, path guards."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from flower.core.config import ConfigError, SessionsConfig, Settings
from flower.core.errors import InvalidEntryError, InvalidKeyError, StoreUnavailableError
from flower.core.fileperms import PermissionWarning
from flower.core.records import SessionKey
from flower.stores.open import normalised_url, open_session_store
from flower_plugins.jsonfs import JsonfsSessionStore, root_from_url

FIXTURES = Path(__file__).parent / "fixtures" / "claude-projects"
PROJECT = "-Users-you-proj"
SID = "0d6b6a4e-3c1f-4d7e-9a59-2f1f0c2b8e11"
KEY = SessionKey(PROJECT, SID)


def user(n: int, **extra: object) -> dict[str, object]:
    return {
        "type": "user",
        "uuid": f"u-{n}",
        "message": {"role": "user", "content": f"#{n}"},
        **extra,
    }


@pytest.fixture
def claude_copy(tmp_path: Path) -> Path:
    """A copy of a ~/.claude/projects folder holding real-shaped Claude Code transcripts."""
    root = tmp_path / "projects"
    shutil.copytree(FIXTURES, root)
    return root


@pytest.fixture
def store(tmp_path: Path) -> JsonfsSessionStore:
    return JsonfsSessionStore(tmp_path / "transcripts")


def raw_lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def compact(entry: dict[str, object]) -> bytes:
    return json.dumps(entry, separators=(",", ":")).encode()


# -- real Claude Code transcripts ----------------------------------------------------


def test_loads_a_copy_of_claude_projects(claude_copy: Path) -> None:
    store = JsonfsSessionStore(claude_copy)
    main_file = claude_copy / PROJECT / f"{SID}.jsonl"
    loaded = store.load(KEY)
    assert loaded == raw_lines(main_file)
    types = {entry["type"] for entry in loaded or []}
    assert {"summary", "file-history-snapshot", "user", "assistant", "progress", "system"} <= types
    assert {"attachment", "queue-operation", "custom-title", "tag", "ai-title", "mode"} <= types
    assert store.problems(KEY) == []
    assert store.list_projects() == [PROJECT]
    assert [info.session_id for info in store.list_sessions(PROJECT)] == [SID]
    assert store.list_subkeys(KEY) == ["subagents/agent-a1b2c3"]
    sub = store.load(KEY.child("subagents/agent-a1b2c3"))
    assert sub is not None and sub[-1]["message"]["content"][0]["text"] == "None found."  # type: ignore[index]
    assert store.find_session(SID) == KEY


def test_last_usage_of_a_claude_transcript_skips_the_synthetic_error(claude_copy: Path) -> None:
    store = JsonfsSessionStore(claude_copy)
    # The newest assistant entry is the harness's synthetic API error, with all-zero
    # usage: no context size. The usage is the last real reply's.
    usage = store.last_usage(KEY)
    assert usage is not None
    assert usage["output_tokens"] == 212 and usage["cache_read_input_tokens"] == 13020


def test_appending_to_a_claude_transcript_never_rewrites_it(claude_copy: Path) -> None:
    store = JsonfsSessionStore(claude_copy)
    path = claude_copy / PROJECT / f"{SID}.jsonl"
    before = path.read_bytes()
    existing = raw_lines(path)[2]  # a user entry with a uuid Claude Code wrote
    with pytest.warns(PermissionWarning) as warned:  # Claude Code's folders are 0755
        store.append(KEY, [existing, user(1)])
        loaded = store.load(KEY) or []
    hints = " ".join(str(w.message) for w in warned)
    assert "chmod 700" in hints and "chmod 600" in hints
    after = path.read_bytes()
    assert after.startswith(before)
    assert after[len(before) :].count(b"\n") == 1, "the existing uuid must not be written again"
    assert loaded[-1] == user(1)


# -- layout and durability -------------------------------------------------------------


def test_layout_is_claude_codes(store: JsonfsSessionStore) -> None:
    store.append(KEY, [user(1), user(2)])
    store.append(KEY.child("subagents/agent-x"), [user(3)])
    main = store.root / PROJECT / f"{SID}.jsonl"
    sub = store.root / PROJECT / SID / "subagents" / "agent-x.jsonl"
    assert main.read_bytes().count(b"\n") == 2 and main.read_bytes().endswith(b"\n")
    assert raw_lines(main) == [user(1), user(2)]
    assert raw_lines(sub) == [user(3)]


def test_every_append_is_fsynced_unless_turned_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []
    real = os.fdatasync
    monkeypatch.setattr(os, "fdatasync", lambda fd: (calls.append(fd), real(fd))[1])
    durable = JsonfsSessionStore(tmp_path / "a")
    durable.append(KEY, [user(1)])
    durable.append(KEY, [user(2)])
    assert len(calls) == 2
    calls.clear()
    fast = JsonfsSessionStore(tmp_path / "b", fsync=False)
    fast.append(KEY, [user(1)])
    assert calls == [] and fast.load(KEY) == [user(1)]


def test_fsync_option_from_configuration(in_tmp: Path) -> None:
    settings = Settings(sessions=SessionsConfig(backend="jsonfs", options={"fsync": False}))
    store = open_session_store(settings=settings)
    assert isinstance(store, JsonfsSessionStore)
    assert store.fsync is False
    assert store.root == (in_tmp / "runs" / "transcripts").resolve()
    bad = Settings(sessions=SessionsConfig(backend="jsonfs", options={"fsynk": False}))
    with pytest.raises(ConfigError, match="fsynk"):
        open_session_store(settings=bad)


def test_the_default_url_is_spelt_as_documented(in_tmp: Path) -> None:
    """``jsonfs:///abs/path``: what ``flower config`` and every message show can be
    pasted back as ``--sessions-url`` and reads like the docs (three slashes, not four)."""
    root = (in_tmp / "runs" / "transcripts").resolve()
    settings = Settings(sessions=SessionsConfig(backend="jsonfs"))
    assert settings.sessions_url() == f"jsonfs://{root}"
    assert normalised_url("jsonfs://runs/transcripts") == f"jsonfs://{root}"
    assert root_from_url(settings.sessions_url()) == root


# -- URLs ------------------------------------------------------------------------------


def test_url_forms(in_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(in_tmp / "home"))
    assert root_from_url("jsonfs:///abs/path") == Path("/abs/path")
    assert root_from_url("jsonfs:////abs/path") == Path("/abs/path")
    assert root_from_url("jsonfs://runs/transcripts") == in_tmp / "runs" / "transcripts"
    assert root_from_url("jsonfs://~/.claude/projects") == in_tmp / "home" / ".claude" / "projects"
    assert root_from_url("jsonfs:///with%20space") == Path("/with space")
    for bad in ("jsonfs://", "jsonfs:///x?fsync=0", "sqlite:///x.db"):
        with pytest.raises(StoreUnavailableError):
            root_from_url(bad)


def test_opened_by_url_and_reopened_by_its_url(tmp_path: Path) -> None:
    store = open_session_store(f"jsonfs://{tmp_path}/t", settings=Settings())
    assert isinstance(store, JsonfsSessionStore)
    store.append(KEY, [user(1)])
    again = open_session_store(store.url, settings=Settings())
    assert again.load(KEY) == [user(1)]


@pytest.mark.usefixtures("english")
def test_root_that_is_a_file_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(StoreUnavailableError, match="not a folder"):
        JsonfsSessionStore(tmp_path / "file")


def test_opening_creates_nothing_until_the_first_append(tmp_path: Path) -> None:
    store = JsonfsSessionStore(tmp_path / "not-yet")
    assert store.load(KEY) is None and store.list_projects() == []
    assert store.list_sessions(PROJECT) == [] and store.find_session(SID) is None
    assert not (tmp_path / "not-yet").exists()


# -- torn and corrupt lines --------------------------------------------------------------


def test_torn_last_line_is_skipped_reported_and_the_next_append_starts_fresh(
    store: JsonfsSessionStore, caplog: pytest.LogCaptureFixture
) -> None:
    store.append(KEY, [user(1), user(2)])
    path = store.root / PROJECT / f"{SID}.jsonl"
    with path.open("ab") as f:  # a crash in the middle of writing entry 3
        f.write(b'{"type":"user","uuid":"u-3","message":{"ro')
    with caplog.at_level(logging.WARNING, logger="flower.jsonfs"):
        assert store.load(KEY) == [user(1), user(2)]
    (problem,) = store.problems(KEY)
    assert (problem.kind, problem.line) == ("torn-tail", 3)
    assert problem.offset == len(path.read_bytes()) - len(
        b'{"type":"user","uuid":"u-3","message":{"ro'
    )
    assert "torn-tail" in caplog.text and str(path) in caplog.text

    # u-3 never became durable, so appending it again is not a duplicate.
    store.append(KEY, [user(3)])
    assert store.load(KEY) == [user(1), user(2), user(3)]
    assert path.read_bytes().endswith(
        b'"message":{"ro\x18\n' + json.dumps(user(3), separators=(",", ":")).encode() + b"\n"
    )
    (problem,) = store.problems(KEY)
    assert (problem.kind, problem.line) == ("corrupt-line", 3)
    assert list(store.iter_entries(KEY)) == [user(1), user(2), user(3)]


def test_a_fresh_handle_on_a_torn_file_also_starts_on_a_new_line(tmp_path: Path) -> None:
    first = JsonfsSessionStore(tmp_path)
    first.append(KEY, [user(1)])
    path = tmp_path / PROJECT / f"{SID}.jsonl"
    with path.open("ab") as f:
        f.write(b'{"type":"us')
    JsonfsSessionStore(tmp_path).append(KEY, [user(2)])
    assert JsonfsSessionStore(tmp_path).load(KEY) == [user(1), user(2)]


def test_a_torn_tail_that_parses_is_still_no_entry(tmp_path: Path) -> None:
    # A crash just before the newline leaves a line that parses: it was never committed
    # (load, the uuid index and last_usage must all agree), so u-2 is not a duplicate.
    JsonfsSessionStore(tmp_path).append(KEY, [user(1)])
    path = tmp_path / PROJECT / f"{SID}.jsonl"
    torn = json.dumps(user(2), separators=(",", ":")).encode()
    with path.open("ab") as f:
        f.write(torn)
    reader = JsonfsSessionStore(tmp_path)
    assert reader.load(KEY) == [user(1)]
    assert [(p.kind, p.line) for p in reader.problems(KEY)] == [("torn-tail", 2)]
    assert list(reader.iter_entries(KEY)) == [user(1)]

    JsonfsSessionStore(tmp_path).append(KEY, [user(2, message={"content": "again"})])
    assert reader.load(KEY) == [user(1), user(2, message={"content": "again"})]
    assert [(p.kind, p.line) for p in reader.problems(KEY)] == [("corrupt-line", 2)]
    assert path.read_bytes().splitlines()[1] == torn + b"\x18"  # kept, but never valid JSON
    assert list(reader.iter_entries(KEY)) == [user(1), user(2, message={"content": "again"})]


def test_last_usage_ignores_a_torn_tail(store: JsonfsSessionStore) -> None:
    def assistant(n: int) -> dict[str, object]:
        usage = {"input_tokens": n, "output_tokens": 1}
        return {"type": "assistant", "uuid": f"a-{n}", "message": {"usage": usage}}

    store.append(KEY, [assistant(1)])
    with (store.root / PROJECT / f"{SID}.jsonl").open("ab") as f:
        f.write(json.dumps(assistant(2)).encode())  # complete JSON, but no newline
    assert store.last_usage(KEY) == {"input_tokens": 1, "output_tokens": 1}
    store.append(KEY, [user(3)])
    assert store.last_usage(KEY) == {"input_tokens": 1, "output_tokens": 1}


# -- batches cut short ------------------------------------------------------------------


def test_a_batch_marks_every_line_but_its_last(store: JsonfsSessionStore) -> None:
    store.append(KEY, [user(1), user(2), user(3)])
    store.append(KEY, [user(4)])
    path = store.root / PROJECT / f"{SID}.jsonl"
    batch, single = [compact(user(n)) for n in (1, 2, 3)], compact(user(4))
    assert path.read_bytes() == b"\t\n".join(batch) + b"\n" + single + b"\n"
    assert raw_lines(path) == [user(1), user(2), user(3), user(4)]  # any JSON reader agrees


def test_an_append_cut_short_anywhere_shows_nothing_of_its_batch(tmp_path: Path) -> None:
    batch = [user(n) for n in range(3, 7)]
    scratch = JsonfsSessionStore(tmp_path / "scratch", fsync=False)
    scratch.append(KEY, batch)
    written = (scratch.root / PROJECT / f"{SID}.jsonl").read_bytes()  # what one append writes
    root = tmp_path / "cut"
    for cut in range(1, len(written)):  # a crash can stop the write after any byte
        key = SessionKey(PROJECT, f"cut-{cut}")
        JsonfsSessionStore(root, fsync=False).append(key, [user(1), user(2)])
        with (root / PROJECT / f"cut-{cut}.jsonl").open("ab") as f:
            f.write(written[:cut])
        reader = JsonfsSessionStore(root)
        assert reader.load(key) == [user(1), user(2)], f"cut after byte {cut}"
        assert list(reader.iter_entries(key)) == [user(1), user(2)], f"cut after byte {cut}"
        kinds = [p.kind for p in reader.problems(key)]
        assert kinds and set(kinds) <= {"incomplete-batch", "torn-tail"}, f"cut {cut}: {kinds}"

        # None of the batch was committed, so a retry writes all of it, and what the
        # crash left can never be finished by it.
        JsonfsSessionStore(root, fsync=False).append(key, batch)
        assert reader.load(key) == [user(1), user(2), *batch], f"cut after byte {cut}"
        assert list(reader.iter_entries(key)) == [user(1), user(2), *batch]
        assert reader.problems(key), f"cut after byte {cut}: what the crash left is reported"
    assert written.endswith(b"\n")


KILLED_WRITER = """
import sys
from flower.core.records import SessionKey
from flower_plugins.jsonfs import JsonfsSessionStore
small = [{"type": "user", "uuid": f"b-{n}"} for n in range(4)]
big = {"type": "user", "uuid": "b-big", "blob": "x" * (64 << 20)}
JsonfsSessionStore(sys.argv[1], fsync=False).append(SessionKey(*sys.argv[2:]), [*small, big])
"""


def test_a_batch_cut_short_by_sigkill_is_not_half_visible(tmp_path: Path) -> None:
    # Linux stops a write() at a page boundary when a fatal signal arrives: killing the
    # writer while it writes a 64 MB entry leaves the four small ones before it complete.
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    path = tmp_path / PROJECT / f"{SID}.jsonl"
    JsonfsSessionStore(tmp_path).append(KEY, [user(1)])
    before = path.stat().st_size
    for _ in range(5):
        writer = subprocess.Popen(
            [sys.executable, "-c", KILLED_WRITER, str(tmp_path), PROJECT, SID], env=env
        )
        while path.stat().st_size == before and writer.poll() is None:
            pass  # the write has begun once the file grows
        writer.kill()
        assert writer.wait(30) == -signal.SIGKILL
        if not path.read_bytes().endswith(b"\n"):
            break  # cut short mid-batch
        JsonfsSessionStore(tmp_path).delete(KEY)  # it finished before the kill: again
        JsonfsSessionStore(tmp_path).append(KEY, [user(1)])
    else:
        pytest.fail("the writer was never killed in the middle of its write")
    assert path.read_bytes()[before:].count(b"\n") == 4  # the small entries are all there
    reader = JsonfsSessionStore(tmp_path)
    assert reader.load(KEY) == [user(1)]
    assert [p.kind for p in reader.problems(KEY)] == ["incomplete-batch", "torn-tail"]
    reader.append(KEY, [user(2)])
    assert reader.load(KEY) == [user(1), user(2)]


def test_a_first_append_cut_short_by_sigkill_leaves_no_transcript(tmp_path: Path) -> None:
    # A new session's first batch (a fork's single write) is all or nothing: killed while
    # it writes, there is no transcript to list or load, not an empty or half one.
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    folder = tmp_path / PROJECT
    writer = subprocess.Popen(
        [sys.executable, "-c", KILLED_WRITER, str(tmp_path), PROJECT, SID], env=env
    )

    def grown() -> bool:  # the write has begun once a file grows (the transcript or its tmp)
        for path in folder.glob(f"*{SID}.jsonl*"):
            with contextlib.suppress(FileNotFoundError):
                if path.stat().st_size:
                    return True
        return False

    while writer.poll() is None and not grown():
        pass
    writer.kill()
    assert writer.wait(30) == -signal.SIGKILL
    reader = JsonfsSessionStore(tmp_path)
    assert not (folder / f"{SID}.jsonl").exists()
    assert reader.list_sessions(PROJECT) == [] and reader.load(KEY) is None
    reader.append(KEY, [user(1)])  # a retry creates it whole
    assert reader.load(KEY) == [user(1)]
    assert [i.session_id for i in reader.list_sessions(PROJECT)] == [SID]


def test_last_usage_skips_an_unfinished_batch(store: JsonfsSessionStore) -> None:
    def assistant(n: int) -> dict[str, object]:
        usage = {"input_tokens": n, "output_tokens": 1}
        return {"type": "assistant", "uuid": f"a-{n}", "message": {"usage": usage}}

    first = {"input_tokens": 1, "output_tokens": 1}
    store.append(KEY, [user(1), assistant(1), user(2)])
    assert store.last_usage(KEY) == first
    path = store.root / PROJECT / f"{SID}.jsonl"
    with path.open("ab") as f:  # [a-2, u-3, u-4] cut by a crash after its second line
        f.write(compact(assistant(2)) + b"\t\n" + compact(user(3)) + b"\t\n")
    assert store.last_usage(KEY) == first
    store.append(KEY, [user(5)])  # must not finish that batch
    assert store.last_usage(KEY) == first
    with path.open("ab") as f:  # [a-6, u-7] cut inside its last line
        f.write(compact(assistant(6)) + b"\t\n" + compact(user(7))[:-3])
    assert store.last_usage(KEY) == first
    store.append(KEY, [assistant(8), user(9)])
    assert store.last_usage(KEY) == {"input_tokens": 8, "output_tokens": 1}
    assert store.load(KEY) == [user(1), assistant(1), user(2), user(5), assistant(8), user(9)]


def test_non_object_lines_and_blank_lines(store: JsonfsSessionStore) -> None:
    store.append(KEY, [user(1)])
    path = store.root / PROJECT / f"{SID}.jsonl"
    with path.open("ab") as f:
        f.write(b"\n[1, 2]\n\n")
    store.append(KEY, [user(2)])
    assert store.load(KEY) == [user(1), user(2)]
    assert [p.kind for p in store.problems(KEY)] == ["not-an-object"]
    store.delete(KEY)
    assert store.problems(KEY) == []


# -- idempotency index ---------------------------------------------------------------------


def test_uuid_index_follows_other_writers(tmp_path: Path) -> None:
    mine, theirs = JsonfsSessionStore(tmp_path), JsonfsSessionStore(tmp_path)
    mine.append(KEY, [user(1)])
    theirs.append(KEY, [user(2)])  # mine's cached index is now behind the file
    mine.append(KEY, [user(2), user(3)])
    assert mine.load(KEY) == [user(1), user(2), user(3)]


def test_uuid_index_resets_when_the_file_is_replaced(tmp_path: Path) -> None:
    mine, theirs = JsonfsSessionStore(tmp_path), JsonfsSessionStore(tmp_path)
    mine.append(KEY, [user(1), user(2)])
    theirs.delete(KEY)
    theirs.append(KEY, [user(9)])
    mine.append(KEY, [user(1)])  # u-1 is gone with the old file: it must be written again
    assert mine.load(KEY) == [user(9), user(1)]


def test_rejected_batch_creates_no_file(store: JsonfsSessionStore) -> None:
    with pytest.raises(InvalidEntryError):
        store.append(KEY, [user(1), {"type": "user", "x": {1, 2}}])
    assert not store.root.exists()


# -- listing and deleting ----------------------------------------------------------------


def test_list_sessions_newest_first_in_epoch_ms(store: JsonfsSessionStore) -> None:
    old, new = SessionKey(PROJECT, "old"), SessionKey(PROJECT, "new")
    store.append(old, [user(1)])
    store.append(new, [user(1)])
    os.utime(store.root / PROJECT / "old.jsonl", ns=(1_700_000_000_123_456_789,) * 2)
    os.utime(store.root / PROJECT / "new.jsonl", ns=(1_800_000_000_987_000_000,) * 2)
    infos = store.list_sessions(PROJECT)
    assert [(i.session_id, i.mtime_ms) for i in infos] == [
        ("new", 1_800_000_000_987),
        ("old", 1_700_000_000_123),
    ]


def test_listing_ignores_what_is_not_a_transcript(store: JsonfsSessionStore) -> None:
    store.append(KEY, [user(1)])
    (store.root / ".locks").mkdir()
    (store.root / "stray.txt").write_text("x")
    (store.root / PROJECT / "notes.md").write_text("x")
    (store.root / PROJECT / "folder.jsonl").mkdir()
    (store.root / PROJECT / SID / "readme.txt").parent.mkdir(parents=True, exist_ok=True)
    (store.root / PROJECT / SID / "readme.txt").write_text("x")
    assert store.list_projects() == [PROJECT]
    assert [i.session_id for i in store.list_sessions(PROJECT)] == [SID]
    assert store.list_subkeys(KEY) == []


def test_delete_removes_the_subkey_folder(store: JsonfsSessionStore) -> None:
    store.append(KEY, [user(1)])
    store.append(KEY.child("subagents/a"), [user(2)])
    store.delete(KEY)
    assert not (store.root / PROJECT / SID).exists()
    assert not (store.root / PROJECT / f"{SID}.jsonl").exists()


def test_last_usage_reads_from_the_end_without_loading(
    store: JsonfsSessionStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    usage = {"input_tokens": 80_200, "output_tokens": 7}
    assistant = {
        "type": "assistant",
        "uuid": "a-1",
        "message": {"role": "assistant", "usage": usage},
    }
    big_tail = [user(n, blob="x" * 300_000) for n in range(3)]
    store.append(KEY, [user(0), assistant, *big_tail])

    def no_full_loads(*args: object) -> None:
        raise AssertionError("last_usage must not load the whole transcript")

    monkeypatch.setattr(store, "load", no_full_loads)
    monkeypatch.setattr(store, "iter_entries", no_full_loads)
    assert store.last_usage(KEY) == usage


# -- path guards ---------------------------------------------------------------------------
@pytest.mark.usefixtures("english")
def test_symlink_out_of_the_root_is_refused(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "escape").symlink_to(outside, target_is_directory=True)
    store = JsonfsSessionStore(root)
    key = SessionKey("escape", "s")
    with pytest.raises(InvalidKeyError, match="outside the store"):
        store.append(key, [user(1)])
    with pytest.raises(InvalidKeyError):
        store.load(key)
    assert list(outside.iterdir()) == []


@pytest.mark.usefixtures("english")
def test_listings_skip_a_project_linked_out_of_the_root_with_one_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    JsonfsSessionStore(outside).append(SessionKey("-away", "s9"), [user(9)])
    store = JsonfsSessionStore(root)
    store.append(KEY, [user(1)])
    (root / "-away").symlink_to(outside / "-away", target_is_directory=True)
    with caplog.at_level(logging.WARNING, logger="flower.jsonfs"):
        assert store.list_projects() == [PROJECT]
        assert store.list_sessions("-away") == []
        assert store.find_session("s9") is None
    warned = [r.getMessage() for r in caplog.records]
    assert warned == [
        f"{root / '-away'} is a symlink to {outside / '-away'}, outside the store at {root}; "
        "its sessions are skipped"
    ]
    with pytest.raises(InvalidKeyError, match="outside the store"):
        store.load(SessionKey("-away", "s9"))


def test_symlinked_root_and_inner_links_that_stay_inside_work(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real, target_is_directory=True)
    store = JsonfsSessionStore(tmp_path / "link")
    store.append(KEY, [user(1)])
    (real / "alias").symlink_to(real / PROJECT, target_is_directory=True)
    assert store.load(SessionKey("alias", SID)) == [user(1)]


def test_too_long_session_id_is_a_key_error(store: JsonfsSessionStore) -> None:
    with pytest.raises(InvalidKeyError, match="作为文件名太长"):
        store.append(SessionKey(PROJECT, "s" * 300), [user(1)])


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (SessionKey(PROJECT, "b.jsonl", "sub"), SessionKey(PROJECT, "b")),
        (SessionKey(PROJECT, "b"), SessionKey(PROJECT, "b.jsonl", "sub")),
        (SessionKey(PROJECT, SID, "a"), SessionKey(PROJECT, SID, "a.jsonl/x")),
        (SessionKey(PROJECT, SID, "a.jsonl/x"), SessionKey(PROJECT, SID, "a")),
    ],
    ids=["subkey-then-main", "main-then-subkey", "file-then-folder", "folder-then-file"],
)
def test_names_ending_in_jsonl_are_key_errors(
    store: JsonfsSessionStore, first: SessionKey, second: SessionKey
) -> None:
    """``s.jsonl``'s subkeys would live in the folder ``s.jsonl``: ``s``'s transcript file."""
    for key in (first, second):
        try:
            store.append(key, [user(1)])
        except InvalidKeyError as exc:
            assert ".jsonl" in str(exc)
        else:
            assert store.load(key) == [user(1)] and store.exists(key)


def test_a_claude_code_line_with_a_lone_surrogate_escape_is_an_entry(tmp_path: Path) -> None:
    """Node writes "\\ud83d" for a string cut mid-emoji: valid JSON msgspec alone refuses."""
    from flower.core.transcript import check_conversation, conversation

    key = SessionKey("-p", "s")
    path = tmp_path / "-p" / "s.jsonl"
    path.parent.mkdir(parents=True)
    lines = [
        '{"type":"user","uuid":"u1","parentUuid":null,"message":{"role":"user","content":"go"}}',
        '{"type":"assistant","uuid":"a1","parentUuid":"u1","message":{"id":"m1",'
        '"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash",'
        '"input":{"command":"tail log"}}]}}',
        '{"type":"user","uuid":"r1","parentUuid":"a1","message":{"role":"user","content":'
        '[{"type":"tool_result","tool_use_id":"t1","content":"all good \\ud83d"}]}}',
        '{"type":"assistant","uuid":"a2","parentUuid":"r1","message":{"id":"m2",'
        '"role":"assistant","content":[{"type":"text","text":"The log shows success."}]}}',
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    store = JsonfsSessionStore(tmp_path)
    loaded = store.load(key)
    assert loaded is not None and [e["uuid"] for e in loaded] == ["u1", "a1", "r1", "a2"]
    assert loaded[2]["message"]["content"][0]["content"] == "all good \ud83d"
    assert store.problems(key) == []
    check_conversation(conversation(loaded))  # the whole conversation, not its tail
    store.append(key, [loaded[2]])  # its uuid is known: appending it again adds nothing
    assert [e["uuid"] for e in JsonfsSessionStore(tmp_path).load(key) or []] == [
        "u1",
        "a1",
        "r1",
        "a2",
    ]


def test_a_byte_order_mark_before_the_first_line_hides_no_entry(tmp_path: Path) -> None:
    key = SessionKey("-p", "s")
    path = tmp_path / "-p" / "s.jsonl"
    path.parent.mkdir(parents=True)
    first = {"type": "user", "uuid": "u1", "message": {"role": "user", "content": "hi"}}
    second = {"type": "user", "uuid": "u2", "message": {"role": "user", "content": "again"}}
    path.write_bytes(
        b"\xef\xbb\xbf" + (json.dumps(first) + "\n" + json.dumps(second) + "\n").encode()
    )
    store = JsonfsSessionStore(tmp_path)
    assert store.load(key) == [first, second] and store.problems(key) == []
    assert list(store.iter_entries(key)) == [first, second]
    store.append(key, [first])  # known by its uuid: not appended twice
    assert JsonfsSessionStore(tmp_path).load(key) == [first, second]


def test_a_transcript_another_handle_deleted_and_wrote_again_is_not_taken_for_the_old(
    tmp_path: Path,
) -> None:
    # ext4 hands a deleted file's inode to the next file created: the cache of what a
    # handle appended must not take the new transcript for the one it knew
    first = JsonfsSessionStore(tmp_path / "projects")
    other = JsonfsSessionStore(tmp_path / "projects")
    first.append(KEY, [user(1), user(2)])
    other.delete(KEY)
    other.append(KEY, [user(n) for n in range(10, 20)])  # longer than what first saw
    (path,) = (tmp_path / "projects").rglob("*.jsonl")
    for index in first._indexes.values():  # the new file got the old one's inode
        index.inode = os.stat(path).st_ino
    first.append(KEY, [user(1), user(2), user(3)])
    assert [e["uuid"] for e in first.load(KEY) or []] == [
        *(f"u-{n}" for n in range(10, 20)),
        "u-1",
        "u-2",
        "u-3",
    ]
