"""``flower sessions show --since/--follow`` and ``flower sessions stats``."""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from claude_code_home import PROJECT, SESSION, make_claude_home
from typer.testing import CliRunner, Result

from flower.cli.main import build_app
from flower.stores.tail import BadSinceError, parse_since

# the expected text below is flower's English output (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("english")

NOW = datetime(2026, 1, 1, 10, 10, tzinfo=UTC)


def flower(url: str, *args: str) -> Result:
    return CliRunner().invoke(build_app(), ["--sessions-url", url, *args])


@pytest.fixture
def imported(in_tmp: Path) -> str:
    make_claude_home(in_tmp / "cc")
    url = f"sqlite:///{in_tmp}/s.db"
    done = flower(url, "sessions", "import", "--claude-code", str(in_tmp / "cc"))
    assert done.exit_code == 0, done.output
    return url


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("10m", datetime(2026, 1, 1, 10, 0, tzinfo=UTC)),
        ("2h", datetime(2026, 1, 1, 8, 10, tzinfo=UTC)),
        ("1d", datetime(2025, 12, 31, 10, 10, tzinfo=UTC)),
        ("90s", datetime(2026, 1, 1, 10, 8, 30, tzinfo=UTC)),
        ("2026-01-01T09:00:00Z", datetime(2026, 1, 1, 9, tzinfo=UTC)),
        ("2026-01-01T09:00:00", datetime(2026, 1, 1, 9, tzinfo=UTC)),
        ("2026-01-01T11:00:00+02:00", datetime(2026, 1, 1, 9, tzinfo=UTC)),
    ],
)
def test_parse_since(text: str, expected: datetime) -> None:
    assert parse_since(text, NOW) == expected


@pytest.mark.parametrize("text", ["yesterday", "10 minutes", "-5m", ""])
def test_parse_since_rejects_garbage(text: str) -> None:
    with pytest.raises(BadSinceError, match="expected a duration"):
        parse_since(text, NOW)


def test_show_since_filters_by_entry_timestamp(imported: str) -> None:
    shown = flower(
        imported, "sessions", "show", SESSION, "--since", "2026-01-01T10:00:04Z", "--raw"
    )
    assert shown.exit_code == 0, shown.output
    uuids = [json.loads(line).get("uuid") for line in shown.stdout.splitlines()]
    assert uuids == ["c-error", "c-final"]
    everything = flower(imported, "sessions", "show", SESSION, "--since", "1000w", "--raw")
    assert len(everything.stdout.splitlines()) == 6  # the 6 stamped entries; not the 2 unstamped


def test_bad_since_is_a_usage_error(imported: str) -> None:
    shown = flower(imported, "sessions", "show", SESSION, "--since", "soon")
    assert shown.exit_code == 2
    assert "--since 'soon'" in shown.output


def test_stats_json(imported: str) -> None:
    done = flower(imported, "sessions", "stats", SESSION, "--json")
    assert done.exit_code == 0, done.output
    stats: dict[str, Any] = json.loads(done.stdout)
    kinds = stats["by_kind"]
    # main transcript (6 turns + 2 bookkeeping lines) plus the subagent's 2 entries
    assert stats["transcripts"] == 2 and stats["entries"] == 10
    assert kinds["assistant"]["entries"] == 4 and kinds["user"]["entries"] == 2
    assert kinds["tool result"]["entries"] == 1 and kinds["api error"]["entries"] == 1
    assert kinds["summary"]["est_tokens"] == 0 and kinds["summary"]["bytes"] > 0
    assert stats["bytes"] == sum(k["bytes"] for k in kinds.values())
    # usage repeated on both block entries of msg_01A counts once: 40 + 12
    assert stats["usage"]["output_tokens"] == 52
    assert stats["usage"]["last_context_tokens"] == 1300
    assert stats["pruning"]["would_remove"] == {"api error": 1}
    assert stats["pruning"]["policies"]["synthetic-errors"]["removed"] == 1


def test_stats_readable_and_for_the_whole_store(imported: str) -> None:
    one = flower(imported, "sessions", "stats", SESSION)
    assert "pruning would remove: 1 api error" in one.stdout
    assert "an estimate" in one.stdout and "from the API" in one.stdout
    every = flower(imported, "sessions", "stats", "--json")
    assert json.loads(every.stdout)["sessions"] == 2


WRITER = """
import sys, time
from flower.core.records import SessionKey
from flower.stores.open import open_session_store
store = open_session_store(sys.argv[1])
key = SessionKey(sys.argv[2], sys.argv[3])
for n in range(3):
    time.sleep(0.3)
    store.append(key, [{"type": "user", "uuid": f"live-{n}", "parentUuid": None,
                        "timestamp": "2026-01-01T11:00:00Z",
                        "message": {"role": "user", "content": f"live message {n}"}}])
store.close()
"""


def _read_until(proc: subprocess.Popen[bytes], needle: bytes, deadline: float) -> bytes:
    assert proc.stdout is not None
    seen = b""
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        while needle not in seen:
            left = deadline - time.monotonic()
            if left <= 0 or proc.poll() is not None:
                break
            if sel.select(timeout=left):
                chunk = os.read(proc.stdout.fileno(), 65536)
                if not chunk:
                    break
                seen += chunk
    return seen


@pytest.mark.parametrize("backend", ["sqlite", "jsonfs"])
def test_follow_tails_a_session_another_process_writes(backend: str, in_tmp: Path) -> None:
    make_claude_home(in_tmp / "cc")
    url = f"sqlite:///{in_tmp}/s.db" if backend == "sqlite" else f"jsonfs://{in_tmp}/js"
    assert flower(url, "sessions", "import", "--claude-code", str(in_tmp / "cc")).exit_code == 0
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLOWER_")}
    follower = subprocess.Popen(
        [sys.executable, "-m", "flower.cli.main", "--sessions-url", url,
         "sessions", "show", SESSION, "--follow", "--interval", "0.1"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        seen = _read_until(follower, b"There are two markdown files.", deadline)
        assert b"user: list the files" in seen  # the existing transcript first
        writer = subprocess.run(
            [sys.executable, "-c", WRITER, url, PROJECT, SESSION], env=env, timeout=30
        )
        assert writer.returncode == 0
        seen += _read_until(follower, b"live message 2", deadline)
        assert b"user: live message 0\nuser: live message 1\nuser: live message 2\n" in seen
        follower.send_signal(signal.SIGINT)  # Ctrl-C: a quiet, clean exit
        assert follower.wait(timeout=10) == 0
    finally:
        if follower.poll() is None:
            follower.kill()
            follower.wait()
        follower.stdout.close()  # type: ignore[union-attr]
