"""The app itself: help, version, exit codes, error lines, routing, plugin commands."""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

import pytest
import typer
from cli_helpers import run_flower
from typer.testing import CliRunner

from flower import __version__, hookimpl
from flower.cli.main import CORE_COMMANDS, build_app
from flower.core.errors import UnknownSessionError
from flower.core.plugins import PluginWarning, reset_registry

pytestmark = pytest.mark.usefixtures("english")  # expects flower's English output

runner = CliRunner()


@pytest.fixture
def fresh_registry() -> Iterator[None]:
    yield
    reset_registry()


def app_with_fake_run() -> tuple[typer.Typer, list[list[str]]]:
    """The core app (without the engine's commands) plus a tiny ``run`` that records its
    input."""
    calls: list[list[str]] = []
    app = build_app(commands=CORE_COMMANDS)

    @app.command("run")
    def run(
        words: Annotated[list[str] | None, typer.Argument()] = None,
        yes: Annotated[bool, typer.Option("--yes")] = False,
    ) -> None:
        calls.append([*(words or []), *(["--yes"] if yes else [])])

    return app, calls


def test_help_lists_commands_and_global_options(in_tmp: Path) -> None:
    result = runner.invoke(build_app(), ["--help"])
    assert result.exit_code == 0
    for word in ("sessions", "plugins", "config", "--run-dir", "--sessions-url", "--version"):
        assert word in result.stdout
    for sub in (["sessions", "--help"], ["sessions", "copy", "--help"], ["config", "-h"]):
        assert runner.invoke(build_app(), sub).exit_code == 0


def test_version(in_tmp: Path) -> None:
    result = runner.invoke(build_app(), ["--version"])
    assert result.exit_code == 0
    assert result.stdout.strip() == f"flower {__version__}"


def test_mistyped_subcommand_is_usage_error_with_suggestion(in_tmp: Path) -> None:
    done = run_flower("sesions", "list", cwd=in_tmp)
    assert done.returncode == 2
    assert "No such command 'sesions'" in done.stderr
    assert "Did you mean 'sessions'?" in done.stderr
    assert "Traceback" not in done.stderr


def test_unknown_option_is_usage_error(in_tmp: Path) -> None:
    done = run_flower("sessions", "list", "--jsn", cwd=in_tmp)
    assert done.returncode == 2
    assert "--jsn" in done.stderr


@pytest.mark.usefixtures("english")  # the expected text is flower's English output
def test_flower_error_is_one_line_and_exit_1(in_tmp: Path) -> None:
    done = run_flower("sessions", "show", "nope", cwd=in_tmp)
    assert done.returncode == 1
    assert done.stderr.strip() == "flower: error: no session nope in sqlite:///runs/sessions.db"


@pytest.mark.usefixtures("english")  # the expected text is flower's English output
def test_flower_debug_shows_the_traceback(in_tmp: Path) -> None:
    done = run_flower("sessions", "show", "nope", cwd=in_tmp, env={"FLOWER_DEBUG": "1"})
    assert done.returncode == 1
    assert "Traceback" in done.stderr
    assert "UnknownSessionError" in done.stderr
    assert done.stderr.rstrip().endswith(
        "flower: error: no session nope in sqlite:///runs/sessions.db"
    )


def test_no_arguments_without_run_shows_help(in_tmp: Path) -> None:
    result = runner.invoke(build_app(commands=CORE_COMMANDS), [])
    assert result.exit_code == 0
    assert "Commands" in result.stdout


# -- routing free text to `run` ------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["write a script that turns md into html"], ["write a script that turns md into html"]),
        (["写一个脚本"], ["写一个脚本"]),
        (["hello"], ["hello"]),
        (["--", "sessions"], ["sessions"]),
        (["--", "--new idea"], ["--new idea"]),
        (["do this", "--yes"], ["do this", "--yes"]),
        (["-r", "other", "do this"], ["do this"]),
        (["run", "explicit"], ["explicit"]),
        ([], []),
    ],
)
def test_free_text_routes_to_run(in_tmp: Path, argv: list[str], expected: list[str]) -> None:
    app, calls = app_with_fake_run()
    result = runner.invoke(app, argv)
    assert result.exit_code == 0, result.output
    assert calls == [expected]


def test_mistyped_subcommand_never_becomes_a_prompt(in_tmp: Path) -> None:
    app, calls = app_with_fake_run()
    result = runner.invoke(app, ["sesions", "list"])
    assert result.exit_code == 2
    assert "Did you mean 'sessions'?" in result.stderr
    assert "To send it as a prompt: flower -- sesions list" in result.stderr
    assert calls == []


def test_the_prompt_hint_keeps_every_word_and_the_options(in_tmp: Path) -> None:
    """The suggested command sends what was typed, not its first word only."""
    app, calls = app_with_fake_run()
    result = runner.invoke(app, ["-r", "state", "sesions", "list all"])
    assert result.exit_code == 2
    assert "To send it as a prompt: flower -r state -- sesions 'list all'" in result.stderr
    assert calls == []


def test_a_run_option_before_a_subcommand_is_a_usage_error_not_a_prompt(in_tmp: Path) -> None:
    app, calls = app_with_fake_run()
    result = runner.invoke(app, ["--yes", "config", "--json"])
    assert result.exit_code == 2
    assert "'--yes' is an option of the default command (run)" in result.stderr
    assert "flower --yes -- config" in result.stderr
    assert calls == []
    # the words after a bare -- are a prompt, as everywhere
    assert runner.invoke(app, ["--yes", "--", "config"]).exit_code == 0
    assert calls == [["config", "--yes"]]


def test_no_trim_before_a_subcommand_starts_no_run(in_tmp: Path) -> None:
    done = run_flower("--no-trim", "sessions", "list", cwd=in_tmp)
    assert done.returncode == 2
    assert "Put options after the command (flower sessions ...)" in done.stderr
    assert not (in_tmp / "runs" / "lineage.json").exists()


def test_subcommands_still_win_over_run(in_tmp: Path) -> None:
    app, calls = app_with_fake_run()
    result = runner.invoke(app, ["config", "--json"])
    assert result.exit_code == 0
    assert calls == []


def test_free_text_without_run_is_a_usage_error(in_tmp: Path) -> None:
    result = runner.invoke(build_app(commands=CORE_COMMANDS), ["--", "do this"])
    assert result.exit_code == 2
    assert "run" in result.stderr


# -- plugin commands -------------------------------------------------------------


def _plugin(name: str, body: object) -> types.ModuleType:
    module = types.ModuleType(name)
    module.register_commands = hookimpl(body)  # type: ignore[attr-defined]
    sys.modules[name] = module
    return module


def test_plugin_command_is_registered_through_the_hook(in_tmp: Path, fresh_registry: None) -> None:
    def register_commands(app: typer.Typer) -> None:
        @app.command("hello")
        def hello(name: str = "world") -> None:
            """Say hello."""
            typer.echo(f"hello {name}")

    reset_registry(extra=[_plugin("hello_plugin", register_commands)])
    result = runner.invoke(build_app(), ["hello", "--name", "flower"])
    assert result.exit_code == 0, result.output
    assert result.stdout == "hello flower\n"
    assert "hello" in runner.invoke(build_app(), ["--help"]).stdout
    listed = runner.invoke(build_app(), ["plugins", "--json"])
    import json

    rows = {row["name"]: row for row in json.loads(listed.stdout)}
    assert rows["hello_plugin"]["registered"]["commands"] == ["hello"]


def test_plugin_whose_hook_raises_is_a_warning(in_tmp: Path, fresh_registry: None) -> None:
    def register_commands(app: typer.Typer) -> None:
        raise RuntimeError("boom in hook")

    reset_registry(extra=[_plugin("raising_plugin", register_commands)])
    with pytest.warns(PluginWarning, match="boom in hook"):
        result = runner.invoke(build_app(), ["--help"])
    assert result.exit_code == 0
    assert "sessions" in result.stdout


def test_plugin_cannot_replace_a_builtin_command(in_tmp: Path, fresh_registry: None) -> None:
    def register_commands(app: typer.Typer) -> None:
        @app.command("config")
        def hijack() -> None:
            typer.echo("hijacked")

    def register_more(app: typer.Typer) -> None:
        register_commands(app)

        @app.command("hello")
        def hello() -> None:
            typer.echo("hello from the plugin")

    reset_registry(extra=[_plugin("hijack_plugin", register_more)])
    with pytest.warns(
        PluginWarning,
        match=r"flower plugin 'hijack_plugin': its command 'config' is ignored: 'flower' "
        "already provides one",
    ):
        result = runner.invoke(build_app(), ["--help"])
    assert result.exit_code == 0
    result = runner.invoke(build_app(), ["config"])
    assert "hijacked" not in result.stdout
    # its other command works: the plugin was not skipped, one command of it was
    with pytest.warns(PluginWarning, match="its command 'config' is ignored"):
        result = runner.invoke(build_app(), ["hello"])
    assert result.stdout == "hello from the plugin\n"


def test_error_from_a_command_is_reported_not_raised(in_tmp: Path) -> None:
    app = build_app()

    @app.command("fail")
    def fail() -> None:
        raise UnknownSessionError("no session x in somewhere")

    result = runner.invoke(app, ["fail"])
    assert result.exit_code == 1
    assert result.stderr == "flower: error: no session x in somewhere\n"


def test_product_attaches_the_run_family_and_doctor(in_tmp: Path) -> None:
    help_text = runner.invoke(build_app(), ["--help"]).stdout
    for command in ("run", "once", "status", "demo", "doctor"):
        assert f"\n  {command}  " in help_text, command


def test_flower_warnings_are_one_line_without_python_source(capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from flower.cli import main
    from flower.stores.prune import PruningWarning

    shown_as_python: list[object] = []
    monkeypatch.setattr(main, "_default_showwarning", lambda *a: shown_as_python.append(a[0]))
    main._show_flower_warning(PruningWarning("policy 'x' failed"), PruningWarning, "f.py", 3)
    assert capsys.readouterr().err == "flower: warning: policy 'x' failed\n"
    other = DeprecationWarning("old")
    main._show_flower_warning(other, DeprecationWarning, "f.py", 3)
    assert shown_as_python == [other]  # anything else is shown as Python shows it


def test_a_bad_pruning_chain_names_where_it_was_set(in_tmp: Path) -> None:
    (in_tmp / "pyproject.toml").write_text(
        '[tool.flower.pruning]\npolicies = ["synthetic-errors", "interupted"]\n'
    )
    done = run_flower("prune", "some-id", cwd=in_tmp)
    assert done.returncode == 2
    assert done.stderr.startswith(
        f"flower: error: {in_tmp / 'pyproject.toml'}: [tool.flower.pruning] policies: "
        "no plugin provides 'interupted' (did you mean 'interrupted'?)"
    )
    assert not (in_tmp / "runs").exists()  # the configuration is checked before the store
    env = {"FLOWER_PRUNING_POLICIES": '["denials", "denials"]'}
    done = run_flower("prune", "some-id", cwd=in_tmp, env=env)
    assert done.returncode == 2
    assert "'denials' listed twice" in done.stderr
    assert done.stderr.rstrip().endswith("(set by env FLOWER_PRUNING_POLICIES)")


@pytest.mark.usefixtures("english")  # the expected text is flower's English output
def test_reading_commands_create_no_store_file(in_tmp: Path) -> None:
    app = build_app()
    shown = runner.invoke(app, ["sessions", "show", "nope"])
    assert shown.exit_code == 1
    assert "no session nope in sqlite:///runs/sessions.db" in shown.stderr
    listed = runner.invoke(app, ["sessions", "list", "--json"])
    assert listed.exit_code == 0, listed.output
    assert listed.stdout.strip() == "[]"
    assert runner.invoke(app, ["prune", "nope"]).exit_code == 1
    stats = runner.invoke(app, ["sessions", "stats"])
    assert stats.stdout.startswith("0 sessions in sqlite:///runs/sessions.db")
    # nor do dry runs, scans, or commands that fail on a store with nothing in it
    for argv, code in (
        (["sessions", "scan"], 0),
        (["sessions", "gc", "--older-than", "1d", "--dry-run"], 0),
        (["sessions", "archive", "-o", "a.jsonl.gz", "--older-than", "1d", "--dry-run"], 0),
        (["sessions", "rm", "nope", "--yes"], 1),
        (["sessions", "import", "--claude-code", str(in_tmp / "nowhere")], 1),
    ):
        done = runner.invoke(app, argv)
        assert done.exit_code == code, (argv, done.output)
    assert list(in_tmp.iterdir()) == []


def test_a_loose_file_mode_is_one_warning_line(in_tmp: Path) -> None:
    from flower.core.config import Settings
    from flower.stores.open import open_session_store

    open_session_store("sqlite:///runs/sessions.db", settings=Settings()).close()
    (in_tmp / "runs" / "sessions.db").chmod(0o644)
    done = run_flower("sessions", "list", cwd=in_tmp)
    assert done.returncode == 0
    lines = [line for line in done.stderr.splitlines() if "accessible by group or others" in line]
    assert len(lines) == 1  # logged and warned, printed once
    assert lines[0].startswith("flower: warning: file runs/sessions.db is accessible")


def test_a_global_option_without_its_value_is_a_usage_error(in_tmp: Path) -> None:
    app, calls = app_with_fake_run()
    for option in ("-r", "--sessions-url"):
        result = runner.invoke(app, [option])
        assert result.exit_code == 2
        assert f"Option '{option}' requires an argument" in result.stderr
    assert calls == []


def test_a_url_no_backend_handles_is_a_configuration_error(in_tmp: Path) -> None:
    result = runner.invoke(build_app(), ["--sessions-url", "foo://bar", "sessions", "list"])
    assert result.exit_code == 2
    assert "no backend handles URLs of scheme 'foo'" in result.stderr


@pytest.mark.usefixtures("english")  # the expected text is flower's English output
def test_a_transcript_view_counts_its_entries_in_words(capsys) -> None:  # type: ignore[no-untyped-def]
    from flower.cli.render import _print_plain

    user = {"type": "user", "uuid": "u", "message": {"role": "user", "content": "hi"}}
    _print_plain([user], "one")
    assert capsys.readouterr().out.endswith("== 1 entry ==\n")
    _print_plain([user, {**user, "uuid": "v"}], "two")
    assert capsys.readouterr().out.endswith("== 2 entries ==\n")


def test_asyncio_child_watcher_noise_after_ctrl_c_is_dropped() -> None:
    import logging

    from flower.cli.main import _child_watcher_noise

    def record(msg: str, *args: object) -> logging.LogRecord:
        return logging.LogRecord("asyncio", logging.WARNING, __file__, 1, msg, args, None)

    assert not _child_watcher_noise(record("Loop %r that handles pid %r is closed", "l", 5))
    assert not _child_watcher_noise(
        record("Unknown child process pid %d, will report returncode 255", 7)
    )
    assert _child_watcher_noise(record("Task was destroyed but it is pending!"))
