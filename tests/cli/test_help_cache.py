"""``flower --help`` from the help cache: the same bytes as typer's, invalidated exactly."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from flower.cli.launch import cache_dir, is_help_request

LAUNCH = "from flower.cli.launch import main; main()"
PLUGIN_MODULE = '''
from flower import hookimpl

@hookimpl
def register_commands(app):
    @app.command()
    def hello() -> None:
        """Say hello from a plugin installed after the help was cached."""
'''


def launch(
    *args: str, cache: Path, cwd: Path, extra_env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The console script's entry function in a fresh process, as a user runs it.

    With ``python -c`` the working directory is on ``sys.path`` (and so in the key):
    it is a folder of its own, beside the cache, as the script's folder would be.
    """
    cwd = cwd / "work"
    cwd.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLOWER_")}
    env.update({"XDG_CACHE_HOME": str(cache), "COLUMNS": "100", **(extra_env or {})})
    return subprocess.run(
        [sys.executable, "-c", LAUNCH, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def cached_files(cache: Path) -> list[Path]:
    folder = cache / "flower" / "help"
    return sorted(folder.glob("*.txt")) if folder.is_dir() else []


def test_help_requests_are_command_words_then_help() -> None:
    assert is_help_request(["--help"])
    assert is_help_request(["sessions", "show", "-h"])
    assert not is_help_request([])
    assert not is_help_request(["--help", "sessions"])
    assert not is_help_request(["write a script", "--help"])
    assert not is_help_request(["--sessions-url", "sqlite:///x.db", "--help"])


def test_the_cache_lives_under_xdg_cache_home(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", "/somewhere")
    assert cache_dir() == os.path.join("/somewhere", "flower", "help")


@pytest.mark.parametrize(
    "args", [["--help"], ["-h"], ["sessions", "--help"], ["sessions", "show", "--help"]]
)
def test_cached_help_is_byte_for_byte_typers_help(args: list[str], tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    uncached = launch(*args, cache=cache, cwd=tmp_path, extra_env={"FLOWER_NO_HELP_CACHE": "1"})
    assert uncached.returncode == 0 and "Usage: flower" in uncached.stdout
    assert cached_files(cache) == []  # the switch really turns the cache off

    first = launch(*args, cache=cache, cwd=tmp_path)
    (written,) = cached_files(cache)
    assert oct(written.stat().st_mode & 0o777) == "0o600"
    second = launch(*args, cache=cache, cwd=tmp_path)
    assert first.stdout == second.stdout == uncached.stdout
    assert (first.returncode, second.returncode) == (0, 0)
    assert first.stderr == second.stderr == ""


def test_the_second_run_is_served_from_the_file(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    launch("--help", cache=cache, cwd=tmp_path)
    (written,) = cached_files(cache)
    key, _, text = written.read_text(encoding="utf-8").partition("\n")
    written.write_text(f"{key}\n{text}MARKER\n", encoding="utf-8")
    assert launch("--help", cache=cache, cwd=tmp_path).stdout.endswith("MARKER\n")


def test_width_and_flower_variables_are_part_of_the_key(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    wide = launch("sessions", "--help", cache=cache, cwd=tmp_path)
    narrow = launch("sessions", "--help", cache=cache, cwd=tmp_path, extra_env={"COLUMNS": "60"})
    assert max(map(len, narrow.stdout.splitlines())) <= 60 < max(map(len, wide.stdout.splitlines()))
    launch("sessions", "--help", cache=cache, cwd=tmp_path, extra_env={"FLOWER_DEBUG": "1"})
    assert len(cached_files(cache)) == 3


def test_installing_a_plugin_shows_its_command_at_once(tmp_path: Path) -> None:
    cache, site = tmp_path / "cache", tmp_path / "site"
    site.mkdir()
    env = {"PYTHONPATH": str(site)}
    before = launch("--help", cache=cache, cwd=tmp_path, extra_env=env)
    assert "hello" not in before.stdout and len(cached_files(cache)) == 1

    (site / "hello_plugin.py").write_text(PLUGIN_MODULE, encoding="utf-8")
    info = site / "hello_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: hello-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[flower]\nhello = hello_plugin\n")

    after = launch("--help", cache=cache, cwd=tmp_path, extra_env=env)
    assert "hello" in after.stdout and after.returncode == 0


def test_a_broken_plugins_warning_is_never_cached_away(tmp_path: Path) -> None:
    cache, site = tmp_path / "cache", tmp_path / "site"
    info = site / "broken_plugin-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[flower]\nbroken = no_such_module_anywhere\n")
    env = {"PYTHONPATH": str(site)}
    for _ in range(2):
        done = launch("--help", cache=cache, cwd=tmp_path, extra_env=env)
        assert done.returncode == 0 and "Usage: flower" in done.stdout
        assert "broken" in done.stderr
    assert cached_files(cache) == []


def test_a_usage_error_is_not_cached_and_keeps_exit_code_2(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    for _ in range(2):
        done = launch("sesions", "--help", cache=cache, cwd=tmp_path)
        assert done.returncode == 2 and "sessions" in done.stderr
    assert cached_files(cache) == []


def test_a_damaged_or_unwritable_cache_only_costs_speed(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    expected = launch("--help", cache=cache, cwd=tmp_path).stdout
    (written,) = cached_files(cache)
    written.write_bytes(b"\xff\xfe not text")
    repaired = launch("--help", cache=cache, cwd=tmp_path)
    assert repaired.stdout == expected and written.read_text(encoding="utf-8").count("\n") > 3

    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the cache folder would go", encoding="utf-8")
    done = launch("--help", cache=blocked, cwd=tmp_path)
    assert done.returncode == 0 and done.stdout == expected and done.stderr == ""


def test_version_without_typer_prints_what_typer_prints(tmp_path: Path) -> None:
    fast = launch("--version", cache=tmp_path / "cache", cwd=tmp_path)
    typer_version = subprocess.run(
        [sys.executable, "-m", "flower.cli.main", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert fast.returncode == typer_version.returncode == 0
    assert fast.stdout == typer_version.stdout and fast.stdout.startswith("flower ")
