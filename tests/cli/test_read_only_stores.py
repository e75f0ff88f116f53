"""Commands that only read create no store, and read a store they may not write."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from cli_helpers import Cli, transcript

from flower.core.keys import project_key
from flower.core.records import SessionKey
from flower.stores.open import open_session_store
from tests.unprivileged import cannot_write_prefix

SID = "71a21bd9-0d7e-4c6b-9b1e-2f0c1e1f3a10"


@pytest.mark.usefixtures("english")
def test_copy_from_a_store_that_is_not_there_creates_nothing(in_tmp: Path) -> None:
    target = in_tmp / "target.db"
    for source in (f"sqlite:///{in_tmp / 'nonexistent.db'}", f"jsonfs:///{in_tmp / 'nowhere'}"):
        done = Cli(f"sqlite:///{in_tmp / 'configured.db'}")(
            "sessions", "copy", "--from", source, "--to", f"sqlite:///{target}"
        )
        assert done.exit_code == 1, done.output
        assert done.stderr.startswith("flower: error: no ")
        assert "copied" not in done.stdout
    assert sorted(p.name for p in in_tmp.iterdir()) == []  # not the source, not the target


@pytest.mark.usefixtures("english")  # the expected text is flower's English output
def test_reading_an_empty_postgres_schema_migrates_nothing(pg_url: str, in_tmp: Path) -> None:
    (in_tmp / "pyproject.toml").write_text(
        "[tool.flower.sessions]\nauto_migrate = true\n", encoding="utf-8"
    )
    cli = Cli(pg_url)
    listed = cli("sessions", "list")
    assert listed.exit_code == 0, listed.output
    assert "no sessions in" in listed.stderr
    assert cli("sessions", "show", SID).exit_code == 1
    copied = cli("sessions", "copy", "--from", pg_url, "--to", f"sqlite:///{in_tmp / 't.db'}")
    assert copied.exit_code == 1 and "holds no flower sessions" in copied.stderr
    engine = sa.create_engine(pg_url)
    try:
        with engine.connect() as conn:
            assert sa.inspect(conn).get_table_names() == []  # no migration ran
    finally:
        engine.dispose()
    assert not (in_tmp / "t.db").exists()


@pytest.fixture(params=["sqlite", "jsonfs"])
def read_only_run_dir(request: pytest.FixtureRequest, in_tmp: Path) -> Iterator[Path]:
    """A run directory holding one session and its lineage, then made read-only
    (folders 0500, files 0400)."""
    workspace = in_tmp.resolve()
    run_dir = workspace / "runs"
    if request.param == "jsonfs":
        url = f"jsonfs://{run_dir / 'transcripts'}"
        (workspace / "pyproject.toml").write_text(
            f'[tool.flower.sessions]\nurl = "{url}"\n', encoding="utf-8"
        )
    else:
        url = f"sqlite:///{run_dir / 'sessions.db'}"
    with open_session_store(url) as store:
        store.append(SessionKey(project_key(workspace), SID), transcript(SID, str(workspace), 1))
    lineage = {"workspace": str(workspace), "woke": 1, "steps": {"干活": SID}}
    (run_dir / "lineage.json").write_text(json.dumps(lineage), encoding="utf-8")
    for path in sorted(run_dir.rglob("*"), reverse=True):
        path.chmod(0o500 if path.is_dir() else 0o400)
    run_dir.chmod(0o500)
    yield run_dir
    for path in [run_dir, *run_dir.rglob("*")]:
        path.chmod(0o700 if path.is_dir() else 0o600)


def _files(run_dir: Path) -> list[str]:
    return sorted(str(p.relative_to(run_dir)) for p in run_dir.rglob("*"))


EACH_COMMAND = """\
import json, os, sys, tempfile, traceback
from flower.cli.main import main

results = []
for argv in json.loads(sys.argv[1]):
    captured = [tempfile.TemporaryFile(), tempfile.TemporaryFile()]
    saved = [os.dup(1), os.dup(2)]
    for fd, into in ((1, captured[0]), (2, captured[1])):
        os.dup2(into.fileno(), fd)
    try:
        main(argv)
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
    except BaseException:
        traceback.print_exc()
        code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        for fd, old in ((1, saved[0]), (2, saved[1])):
            os.dup2(old, fd)
            os.close(old)
    for f in captured:
        f.seek(0)
    results.append([code, *(f.read().decode() for f in captured)])
print(json.dumps(results))
"""
"""Runs each command line (a JSON list of argv lists) through the console entry point,
one after the other in this one process, with stdout and stderr (the file descriptors)
caught per command; prints ``[[exit code, stdout, stderr], ...]``."""


@pytest.mark.slow
def test_a_run_directory_the_user_cannot_write_can_be_read(read_only_run_dir: Path) -> None:
    import subprocess

    before = _files(read_only_run_dir)
    prefix = cannot_write_prefix()
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLOWER_")}

    def flower(*commands: list[str]) -> list[subprocess.CompletedProcess[str]]:
        """The commands, in one process without the power to write (starting one per
        command is most of the time here, and the store is opened anew by each)."""
        ran = subprocess.run(
            [*prefix, sys.executable, "-c", EACH_COMMAND, json.dumps(commands)],
            cwd=read_only_run_dir.parent,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert ran.returncode == 0 and not ran.stderr, ran.stderr
        return [
            subprocess.CompletedProcess(argv, code, out, err)
            for argv, (code, out, err) in zip(commands, json.loads(ran.stdout), strict=True)
        ]

    new = read_only_run_dir.parent / "new.jsonl"
    new.write_text(json.dumps(transcript("new-1", "/w", 1)[0]) + "\n", encoding="utf-8")
    probe, listed, shown, exported, stats, status, *looked, removed = flower(
        ["sessions", "import", str(new)],  # the sandbox really cannot write
        ["sessions", "list", "--json"],
        ["sessions", "show", SID[:8]],
        ["sessions", "export", SID],
        ["sessions", "stats", SID],
        ["status"],
        ["sessions", "gc", "--older-than", "0d", "--dry-run"],
        ["sessions", "archive", "--older-than", "0d", "--keep", "-o", "old.jsonl.gz"],
        ["sessions", "rm", "--yes", SID],
    )
    assert probe.returncode == 1
    assert len(probe.stderr.splitlines()) == 1, probe.stderr
    assert probe.stderr.startswith("flower: error: cannot write ")
    assert probe.stderr.endswith(" is read-only for this user (only reading works)\n")
    if "sessions.db" in before:
        assert probe.stderr == (
            "flower: error: cannot write runs/sessions.db: the folder runs is read-only for "
            "this user (only reading works)\n"
        )
    assert listed.returncode == 0, listed.stderr
    assert [row["session_id"] for row in json.loads(listed.stdout)] == [SID]
    assert shown.returncode == 0 and "question 0" in shown.stdout, shown.stderr
    assert exported.returncode == 0 and len(exported.stdout.splitlines()) == 3
    assert stats.returncode == 0, stats.stderr
    assert f"step        work: {SID} (in the store" in status.stdout, status.stderr
    assert "unreadable" not in status.stdout
    assert [done.returncode for done in looked] == [0, 0], [d.stderr for d in looked]
    assert removed.returncode == 1 and "is read-only for this user" in removed.stderr
    for done in (probe, listed, shown, exported, stats, status, *looked, removed):
        assert "Traceback" not in done.stderr
    assert _files(read_only_run_dir) == before  # nothing written: no -wal, no -shm


def test_status_with_a_sql_lineage_creates_no_database(in_tmp: Path) -> None:
    from cli_helpers import run_flower

    (in_tmp / "pyproject.toml").write_text(
        '[tool.flower.lineage]\nbackend = "sqlite"\n', encoding="utf-8"
    )
    done = run_flower("status", cwd=in_tmp)
    assert "谱系        'sqlite' 谱系存储 里没有" in done.stdout, done.stderr
    assert "Traceback" not in done.stderr
    assert sorted(p.name for p in in_tmp.iterdir()) == ["pyproject.toml"]
