"""What a killed jsonfs writer leaves (a first batch's temporary file): listed by
``leftovers``, removed by ``remove_leftover`` and ``flower sessions gc``, never one a
writer is still at work on."""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from flower.cli.main import build_app
from flower.core.errors import InvalidKeyError
from flower.core.records import Leftover, SessionKey
from flower.stores.retention import LEFTOVER_AGE
from flower_plugins.jsonfs import JsonfsSessionStore

PROJECT = "-Users-you-proj"
SID = "0d6b6a4e-3c1f-4d7e-9a59-2f1f0c2b8e11"
KEY = SessionKey(PROJECT, SID)
ENV = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}

KILLED_WRITER = """
import os, sys
from flower.core.records import SessionKey
from flower_plugins.jsonfs import JsonfsSessionStore
write = os.write
def cut_write(fd, data):  # half the first batch is written: wait for the test's kill
    write(fd, data[: len(data) // 2])
    print("half written", flush=True)
    sys.stdin.readline()
    raise SystemExit("never killed")
os.write = cut_write
big = {"type": "user", "uuid": "b-big", "blob": "x" * 4096}
JsonfsSessionStore(sys.argv[1], fsync=False).append(SessionKey(*sys.argv[2:]), [big])
"""

PAUSED_WRITER = """
import os, sys
from flower.core.records import SessionKey
from flower_plugins.jsonfs import JsonfsSessionStore
link = os.link
def paused_link(src, dst):  # the batch is written: wait for the test before linking it
    print("written", flush=True)
    sys.stdin.readline()
    link(src, dst)
os.link = paused_link
JsonfsSessionStore(sys.argv[1]).append(SessionKey(*sys.argv[2:]), [{"type": "user", "uuid": "p-1"}])
print("done", flush=True)
"""


def user(n: int) -> dict[str, object]:
    return {"type": "user", "uuid": f"u-{n}", "message": {"role": "user", "content": f"#{n}"}}


def temp_files(root: Path) -> list[Path]:
    return sorted((root / PROJECT).glob(f".{SID}.jsonl.*.tmp"))


def age(path: Path, seconds: float) -> None:
    """Date ``path`` as last written ``seconds`` ago."""
    then = time.time() - seconds
    os.utime(path, (then, then))


def killed_first_append(root: Path) -> Path:
    """SIGKILL a writer half-way through writing a new session's first batch; its temp file."""
    writer = subprocess.Popen(
        [sys.executable, "-c", KILLED_WRITER, str(root), PROJECT, SID],
        env=ENV,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert writer.stdout is not None
    try:
        assert writer.stdout.readline() == "half written\n"
    finally:
        writer.kill()
        writer.wait(30)
    assert writer.returncode == -signal.SIGKILL
    (left,) = temp_files(root)
    assert left.stat().st_size > 0
    return left


def test_a_killed_first_append_leaves_a_leftover_that_is_removed_once_old(tmp_path: Path) -> None:
    left = killed_first_append(tmp_path)
    store = JsonfsSessionStore(tmp_path)
    assert store.list_sessions(PROJECT) == [] and store.load(KEY) is None  # never listed
    assert store.leftovers(LEFTOVER_AGE, time.time()) == []  # too fresh to be sure of

    age(left, LEFTOVER_AGE + 60)
    (found,) = store.leftovers(LEFTOVER_AGE, time.time())
    assert found.path == str(left) and found.size == left.stat().st_size > 0
    assert store.remove_leftover(found)
    assert not left.exists()
    assert not store.remove_leftover(found)  # gone: nothing to do, no error
    store.append(KEY, [user(1)])  # the retry of the killed append creates it whole
    assert store.load(KEY) == [user(1)]
    assert store.leftovers(0, time.time() + 3600) == []  # a transcript is never one


def test_a_writer_at_work_keeps_its_temp_file_whatever_its_age(tmp_path: Path) -> None:
    writer = subprocess.Popen(
        [sys.executable, "-c", PAUSED_WRITER, str(tmp_path), PROJECT, SID],
        env=ENV,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert writer.stdin is not None and writer.stdout is not None
    try:
        assert writer.stdout.readline() == "written\n"
        (tmp,) = temp_files(tmp_path)
        age(tmp, 10 * 86400)  # old by its time, but its writer holds it
        store = JsonfsSessionStore(tmp_path)
        assert store.leftovers(LEFTOVER_AGE, time.time()) == []
        forged = Leftover(str(tmp), tmp.stat().st_size, tmp.stat().st_mtime_ns // 1_000_000)
        assert not store.remove_leftover(forged)
        assert tmp.exists()
        writer.stdin.write("go\n")
        writer.stdin.flush()
        assert writer.stdout.readline() == "done\n"
        assert writer.wait(30) == 0
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait(30)
    assert store.load(KEY) == [{"type": "user", "uuid": "p-1"}]
    assert temp_files(tmp_path) == []


def test_a_leftover_changed_since_it_was_listed_is_kept(tmp_path: Path) -> None:
    left = killed_first_append(tmp_path)
    age(left, LEFTOVER_AGE + 60)
    store = JsonfsSessionStore(tmp_path)
    (found,) = store.leftovers(LEFTOVER_AGE, time.time())
    with left.open("ab") as out:
        out.write(b"more")
    age(left, LEFTOVER_AGE + 60)
    assert not store.remove_leftover(found)
    assert left.exists()


def test_remove_leftover_takes_nothing_but_this_stores_temp_files(tmp_path: Path) -> None:
    root = tmp_path / "root"
    store = JsonfsSessionStore(root)
    store.append(KEY, [user(1)])
    transcript = root / PROJECT / f"{SID}.jsonl"
    st = transcript.stat()
    with pytest.raises(InvalidKeyError):
        store.remove_leftover(Leftover(str(transcript), st.st_size, st.st_mtime_ns // 1_000_000))
    outside = tmp_path / f".{SID}.jsonl.123-0badc0de.tmp"
    outside.write_bytes(b"x")
    with pytest.raises(InvalidKeyError):
        store.remove_leftover(Leftover(str(outside), 1, outside.stat().st_mtime_ns // 1_000_000))
    assert transcript.exists() and outside.exists()
    assert store.load(KEY) == [user(1)]


def test_a_leftover_under_a_subkey_is_found_too(tmp_path: Path) -> None:
    store = JsonfsSessionStore(tmp_path)
    store.append(KEY.child("subagents/agent-a"), [user(1)])
    folder = tmp_path / PROJECT / SID / "subagents"
    left = folder / ".agent-b.jsonl.4242-00c0ffee.tmp"  # as _create names it
    left.write_bytes(b'{"type": "user"}\n')
    age(left, LEFTOVER_AGE + 60)
    assert [x.path for x in store.leftovers(LEFTOVER_AGE, time.time())] == [str(left)]
    assert store.list_subkeys(KEY) == ["subagents/agent-a"]


@pytest.mark.usefixtures("english")
def test_gc_lists_leftovers_on_a_dry_run_and_removes_them(
    in_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLOWER_SESSIONS_BACKEND", "jsonfs")
    root = in_tmp / "runs" / "transcripts"
    left = killed_first_append(root)
    fresh = root / PROJECT / ".other.jsonl.4242-00c0ffee.tmp"  # perhaps a writer's: kept
    fresh.write_bytes(b"x")
    age(left, LEFTOVER_AGE + 60)
    held = os.open(left, os.O_RDONLY)
    try:
        fcntl.flock(held, fcntl.LOCK_EX)  # while a writer holds it, gc does not see it
        busy = CliRunner().invoke(build_app(), ["sessions", "gc", "--older-than", "30d", "-y"])
        assert busy.exit_code == 0, busy.output
        assert "leftover" not in busy.output and left.exists()
    finally:
        os.close(held)

    dry = CliRunner().invoke(build_app(), ["sessions", "gc", "--older-than", "30d", "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert f"leftover {left}: {left.stat().st_size} bytes a killed writer left" in dry.output
    assert "1 leftover file to remove" in dry.output
    assert left.exists()

    done = CliRunner().invoke(build_app(), ["sessions", "gc", "--older-than", "30d", "--yes"])
    assert done.exit_code == 0, done.output
    assert "removed 1 leftover file a killed writer left" in done.output
    assert not left.exists() and fresh.exists()


def test_gc_says_it_in_chinese_too(in_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLOWER_SESSIONS_BACKEND", "jsonfs")
    folder = in_tmp / "runs" / "transcripts" / PROJECT
    folder.mkdir(parents=True)
    left = folder / f".{SID}.jsonl.4242-00c0ffee.tmp"
    left.write_bytes(b'{"type": "user"}\n')
    age(left, LEFTOVER_AGE + 60)
    args = ["sessions", "gc", "--older-than", "30d"]
    dry = CliRunner().invoke(build_app(), [*args, "--dry-run"], env={"FLOWER_LANG": "zh_CN"})
    assert f"遗留文件 {left}:被杀掉的写入者留下的 17 字节,最后写入于" in dry.output
    assert "1 个遗留文件待移除" in dry.output
    done = CliRunner().invoke(build_app(), [*args, "--yes"], env={"FLOWER_LANG": "zh_CN"})
    assert "已移除 1 个被杀掉的写入者留下的遗留文件" in done.output
    assert not left.exists()


def test_the_encrypted_wrapper_lists_and_removes_its_inner_stores_leftovers(
    tmp_path: Path,
) -> None:
    from flower.stores.encrypt import EncryptedSessionStore
    from flower.stores.keyring import generate_key, parse_keys

    inner = JsonfsSessionStore(tmp_path)
    store = EncryptedSessionStore(inner, parse_keys(generate_key(), "test key"))
    store.append(KEY, [user(1)])
    left = tmp_path / PROJECT / f".{OTHER}.jsonl.4242-00c0ffee.tmp"
    left.write_bytes(b'{"type": "user"}\n')
    age(left, LEFTOVER_AGE + 60)
    (found,) = store.leftovers(LEFTOVER_AGE, time.time())
    assert found.path == str(left)
    assert store.remove_leftover(found) and not left.exists()
    assert store.load(KEY) == [user(1)]


OTHER = "5f1c1e4a-0000-4000-8000-000000000002"
