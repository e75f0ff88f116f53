"""``flower ui`` as a command: where it listens, what it says when it cannot."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from typer.testing import CliRunner

from flower.cli.main import build_app

pytestmark = pytest.mark.usefixtures("english")  # expects flower's English output

FLOWER = [sys.executable, "-m", "flower.cli.main"]


def env_in(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLOWER_")}
    env["FLOWER_SESSIONS_URL"] = f"sqlite:///{tmp_path / 'sessions.db'}"
    return env


@contextmanager
def flower_ui(
    tmp_path: Path, *args: str, env: dict[str, str] | None = None
) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """``flower ui ARGS`` started for real; yields it and the URL it printed."""
    process = subprocess.Popen(
        [*FLOWER, "ui", "--port", "0", *args],
        cwd=tmp_path,
        env={**env_in(tmp_path), **(env or {})},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        assert "flower ui:" in line, line
        yield process, line.split(" at ", 1)[1].split()[0]
    finally:
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=20)
        assert "Traceback" not in err, err


@pytest.mark.slow  # starts flower
def test_it_listens_on_loopback_and_serves_the_list(tmp_path: Path) -> None:
    from ui_helpers import PROJECT, WORKING, working_session

    from flower.core.config import SessionsConfig, Settings
    from flower.core.records import SessionKey
    from flower.stores.open import open_session_store

    with flower_ui(tmp_path) as (_, url):
        assert url.startswith("http://127.0.0.1:")
        with urllib.request.urlopen(url, timeout=10) as page:
            before = page.read().decode()
        assert not (tmp_path / "sessions.db").exists()  # read-only: no database created
        settings = Settings(sessions=SessionsConfig(url=env_in(tmp_path)["FLOWER_SESSIONS_URL"]))
        with open_session_store(settings=settings) as store:  # a run starts writing
            store.append(SessionKey(PROJECT, WORKING), working_session(WORKING))
        with urllib.request.urlopen(url, timeout=10) as page:
            after = page.read().decode()
    assert "no sessions" in before
    assert WORKING in after  # the store is looked for again once it exists


@pytest.mark.slow  # starts flower
def test_another_host_needs_the_token_it_prints(tmp_path: Path) -> None:
    with flower_ui(tmp_path, "--host", "127.0.0.1") as (_, url):
        assert "?token=" in url
        bare = url.split("?", 1)[0]
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(bare, timeout=10)
        with urllib.request.urlopen(url, timeout=10) as page:
            status = page.status
    assert refused.value.code == 403
    assert status == 200


@pytest.mark.slow  # starts flower
def test_open_hands_the_url_to_the_browser(tmp_path: Path) -> None:
    opened = tmp_path / "opened"
    browser = tmp_path / "browser.sh"
    browser.write_text(f'#!/bin/sh\necho "$1" > {opened}\n')
    browser.chmod(0o700)
    with flower_ui(tmp_path, "--open", env={"BROWSER": str(browser)}) as (_, url):
        deadline = time.monotonic() + 20
        while not opened.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
    assert opened.read_text().strip() == url


@pytest.mark.slow  # starts flower
def test_a_port_in_use_is_a_clear_error(tmp_path: Path) -> None:
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    try:
        done = subprocess.run(
            [*FLOWER, "ui", "--port", str(port)],
            cwd=tmp_path,
            env=env_in(tmp_path),
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        taken.close()
    assert done.returncode == 1
    assert done.stderr.strip() == (
        f"flower: error: port {port} on 127.0.0.1 is in use: pick another with --port N "
        "(--port 0 takes a free one)"
    )


def test_without_the_extra_it_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "uvicorn" else real(name, *a),
    )
    result = CliRunner().invoke(build_app(), ["ui"])
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        "flower: error: flower ui needs the ui extra: pip install 'flower[ui]'"
    ]


def test_a_bad_port_is_a_usage_error() -> None:
    result = CliRunner().invoke(build_app(), ["ui", "--port", "70000"])
    assert result.exit_code == 2
