"""``flower prune ID``: the command on an app of its own (`add_prune_command`)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pruning_memory_store
import pytest
import typer
from pruning_builders import TranscriptBuilder
from typer.testing import CliRunner

from flower.cli.prune import add_prune_command
from flower.core.plugins import reset_registry
from flower.core.records import SessionKey
from flower.stores.prune import PruningWarning

# the expected text below is flower's English output (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("english")

KEY = SessionKey("-home-user-proj", "sess-cli")


@pytest.fixture
def app(in_tmp: Path) -> Iterator[typer.Typer]:
    (in_tmp / "pyproject.toml").write_text(
        '[tool.flower.sessions]\nbackend = "prune-test-memory"\n'
    )
    reset_registry(extra=[pruning_memory_store])
    b = TranscriptBuilder(session_id=KEY.session_id)
    b.user("go")
    b.denied("rm -rf a")
    b.denied("rm -rf b")
    b.api_error()
    b.user("continue")
    b.tool_round([("Read", {"file_path": "/big"}, "q" * 9000, False)])
    for i in range(7):
        b.user(f"q{i}")
        b.assistant([{"type": "text", "text": f"a{i}"}])
    pruning_memory_store.SHARED.clear()
    pruning_memory_store.SHARED[KEY] = b.entries
    application = typer.Typer()

    @application.callback()
    def main() -> None:
        """flower (test app)"""

    add_prune_command(application)
    yield application
    pruning_memory_store.SHARED.clear()
    reset_registry()


def test_prune_json_reports_each_policy(app: typer.Typer, in_tmp: Path) -> None:
    result = CliRunner().invoke(app, ["prune", KEY.session_id, "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    rows = {p["policy"]: p for p in report["policies"]}
    assert list(rows) == [
        "synthetic-errors",
        "denials",
        "interrupted",
        "ephemeral",
        "trim",
        "(repair)",
    ]
    assert rows["synthetic-errors"]["removed"] == 1
    assert rows["denials"]["removed"] == 2
    assert rows["trim"]["changed"] == 1 and rows["trim"]["bytes_saved"] > 8000
    assert report["chain_bytes"]["saved"] > 8000
    assert report["tokens_saved"] == round(report["chain_bytes"]["saved"] / 4)
    assert report["entries"]["raw"] > report["entries"]["pruned"]
    assert report["entries"]["off_chain"] == 0  # never compacted, no branch: all of it is sent
    assert not (in_tmp / "runs" / "trimmed").exists()  # a report writes no trim files
    assert any(e.get("isApiErrorMessage") for e in pruning_memory_store.SHARED[KEY])  # storage kept


def test_prune_reports_the_entries_off_the_chain(app: typer.Typer) -> None:
    b = TranscriptBuilder(session_id=KEY.session_id)
    b.user("go")
    b.api_error()
    b.user("continue")
    b.compact("We started.")
    b.user("on with it")
    b.assistant([{"type": "text", "text": "yes"}])
    pruning_memory_store.SHARED[KEY] = b.entries
    history = next(i for i, e in enumerate(b.entries) if e.get("subtype") == "compact_boundary")

    report = json.loads(CliRunner().invoke(app, ["prune", KEY.session_id, "--json"]).stdout)
    assert report["entries"] == {
        "raw": len(b.entries),
        "chain": len(b.entries) - history,
        "pruned": len(b.entries) - history,  # the API error is history: not on the chain
        "off_chain": history,
    }
    assert {p["policy"]: p["removed"] for p in report["policies"]}["synthetic-errors"] == 0
    text = CliRunner().invoke(app, ["prune", KEY.session_id]).stdout
    assert f"the {history} stored entries off the active chain" in text


def test_prune_text_output_and_no_trim(app: typer.Typer) -> None:
    result = CliRunner().invoke(app, ["prune", KEY.session_id, "--no-trim"])
    assert result.exit_code == 0, result.output
    assert "synthetic-errors" in result.stdout and "denials" in result.stdout
    assert "trim" not in result.stdout.split("(repair)")[0].split("denials")[1]
    assert "saved" in result.stdout


def test_prune_unknown_session_is_a_clear_error(app: typer.Typer) -> None:
    result = CliRunner().invoke(app, ["prune", "nope"])
    assert result.exit_code == 1
    assert result.stderr.strip() == (
        "flower: error: no session nope in the 'prune-test-memory' session store"
    )
    assert CliRunner().invoke(app, ["prune", " "]).exit_code == 2  # a usage error


def test_prune_finds_an_id_as_sessions_show_does(app: typer.Typer) -> None:
    from flower.cli.main import build_app

    other = SessionKey("-home-user-other", KEY.session_id)
    pruning_memory_store.SHARED[other] = list(pruning_memory_store.SHARED[KEY])
    runner = CliRunner()
    for argv in (
        [KEY.session_id, "--json"],
        [KEY.session_id, "--json", "--project", other.project_key],
        [KEY.session_id, "--project", "nope"],
        [KEY.session_id, "--project", " "],
        [" "],
    ):
        shown = runner.invoke(build_app(), ["sessions", "show", *argv])
        pruned = runner.invoke(app, ["prune", *argv])
        assert (pruned.exit_code, pruned.stderr) == (shown.exit_code, shown.stderr), argv
        if shown.exit_code == 0:
            picked = json.loads(shown.stdout)["project_key"]
            assert json.loads(pruned.stdout)["project_key"] == picked
    both = runner.invoke(app, ["prune", KEY.session_id, "--json"])
    assert f"flower: note: session {KEY.session_id} is also in project" in both.stderr
    chosen = runner.invoke(app, ["prune", KEY.session_id, "--project", other.project_key])
    assert chosen.stderr == "" and f"({other.project_key})" in chosen.stdout
    nope = runner.invoke(app, ["prune", KEY.session_id, "--project", "nope"])
    assert nope.exit_code == 1
    assert nope.stderr == (
        f"flower: error: no session {KEY.session_id} in project nope of the "
        "'prune-test-memory' session store\n"
    )
    stats = ["sessions", "show", KEY.session_id, "--pruned", "--stats"]
    assert runner.invoke(build_app(), stats).stderr == both.stderr  # the same report
    assert "--project KEY" in runner.invoke(build_app(), ["prune", "--help"]).stdout


def test_prune_with_a_bad_policy_name_exits_2(app: typer.Typer, in_tmp: Path) -> None:
    (in_tmp / "pyproject.toml").write_text(
        '[tool.flower.sessions]\nbackend = "prune-test-memory"\n'
        '[tool.flower.pruning]\npolicies = ["typo"]\n'
    )
    result = CliRunner().invoke(app, ["prune", KEY.session_id])
    assert result.exit_code == 2
    assert "typo" in result.output and "available" in result.output


def test_prune_honours_the_global_store_options(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from flower.cli.main import build_app
    from flower.core.config import Settings
    from flower.stores.open import open_session_store

    url = f"sqlite:///{tmp_path / 'elsewhere' / 'sessions.db'}"
    (tmp_path / "elsewhere").mkdir()
    store = open_session_store(url, settings=Settings())
    b = TranscriptBuilder(session_id="sess-global")
    b.user("go")
    b.api_error()
    b.user("continue")
    b.assistant([{"type": "text", "text": "done"}])
    store.append(SessionKey("-p", "sess-global"), b.entries)
    store.close()
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    reset_registry()
    result = CliRunner().invoke(
        build_app(), ["--sessions-url", url, "prune", "sess-global", "--json"]
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert {p["policy"]: p["removed"] for p in report["policies"]}["synthetic-errors"] == 1
    assert not (tmp_path / "cwd" / "runs").exists()  # the default store was never opened


def test_a_failing_policy_is_reported_once(app: typer.Typer, in_tmp: Path) -> None:
    (in_tmp / "pyproject.toml").write_text(
        '[tool.flower.sessions]\nbackend = "prune-test-memory"\n'
        '[tool.flower.pruning]\npolicies = ["synthetic-errors", "failing-test"]\n'
    )
    result = CliRunner().invoke(app, ["prune", KEY.session_id, "--no-trim"])
    assert result.exit_code == 0, result.output
    failed = "pruning policy 'failing-test' failed on session"
    assert result.output.count(failed) == 1  # in the report, not also as a Python warning
    assert "failing-test (FAILED)" in result.stdout
    report = json.loads(CliRunner().invoke(app, ["prune", KEY.session_id, "--json"]).stdout)
    rows = {p["policy"]: p for p in report["policies"]}
    assert "kaboom" in rows["failing-test"]["error"] and rows["synthetic-errors"]["removed"] == 1


def test_a_policy_that_cannot_be_created_is_a_warning_in_the_report(
    app: typer.Typer, in_tmp: Path
) -> None:
    (in_tmp / "pyproject.toml").write_text(
        '[tool.flower.sessions]\nbackend = "prune-test-memory"\n'
        '[tool.flower.pruning]\npolicies = ["broken-factory-test", "synthetic-errors"]\n'
    )
    result = CliRunner().invoke(app, ["prune", KEY.session_id, "--no-trim", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["policies"][0]["policy"] == "synthetic-errors"
    assert len(report["warnings"]) == 1 and "'broken-factory-test'" in report["warnings"][0]
    assert "broken-factory-test" not in result.stderr  # carried by the report only


def test_sessions_show_pruned_stats_prints_the_prune_report(app: typer.Typer) -> None:
    from flower.cli.main import build_app

    full = build_app()
    args = ["sessions", "show", KEY.session_id, "--pruned", "--stats"]
    shown = CliRunner().invoke(full, [*args, "--json"])
    assert shown.exit_code == 0, shown.output
    reported = CliRunner().invoke(app, ["prune", KEY.session_id, "--json"])
    assert json.loads(shown.stdout) == json.loads(reported.stdout)
    assert "synthetic-errors" in CliRunner().invoke(full, args).stdout
    for extra in (["--raw"], ["--since", "1d"]):
        assert CliRunner().invoke(full, [*args, *extra]).exit_code == 2
    assert CliRunner().invoke(full, ["sessions", "show", KEY.session_id, "--stats"]).exit_code == 2


def test_sessions_show_pruned_says_what_the_model_is_not_sent(app: typer.Typer) -> None:
    from flower.cli.main import build_app

    shown = ["sessions", "show", KEY.session_id, "--pruned"]
    assert "off the active chain" not in CliRunner().invoke(build_app(), shown).stderr
    b = TranscriptBuilder(session_id=KEY.session_id)
    b.user("first try")
    b.assistant([{"type": "text", "text": "an answer on a branch"}])
    b.user("second try", parentUuid=None)  # started over: the first try is abandoned
    b.assistant([{"type": "text", "text": "the answer kept"}])
    pruning_memory_store.SHARED[KEY] = b.entries
    done = CliRunner().invoke(build_app(), shown)
    assert done.exit_code == 0, done.output
    assert "flower: note: 2 messages of this session are off the active chain" in done.stderr
    assert "an answer on a branch" not in done.stdout  # the view is what the model is sent
    assert "the answer kept" in done.stdout


def test_sessions_show_pruned_says_why_each_message_is_not_sent(app: typer.Typer) -> None:
    from flower.cli.main import build_app

    shown = ["sessions", "show", KEY.session_id, "--pruned"]
    b = TranscriptBuilder(session_id=KEY.session_id)
    b.user("first try")
    b.user("second try", parentUuid=None)  # started over: one message on an older branch
    b.assistant([{"type": "text", "text": "the answer kept"}])
    lost = b.user("a prompt stored without its uuid")
    del lost["uuid"]
    pruning_memory_store.SHARED[KEY] = b.entries
    with pytest.warns(PruningWarning, match="no uuid"):
        done = CliRunner().invoke(build_app(), shown)
    assert done.exit_code == 0, done.output
    notes = [line for line in done.stderr.splitlines() if line.startswith("flower: note:")]
    assert notes == [
        "flower: note: 1 message of this session has no uuid, so it has no place in the chain: "
        "the model is not sent it",
        "flower: note: 1 message of this session is off the active chain, on an older branch "
        "(a rewind, or a resume from an earlier point): the model is not sent it",
    ]
    b = TranscriptBuilder(session_id=KEY.session_id)
    b.user("go")
    b.assistant([{"type": "text", "text": "gone"}])
    b.compact("We started.")
    b.user("on with it")
    b.assistant([{"type": "text", "text": "yes"}])
    pruning_memory_store.SHARED[KEY] = b.entries
    done = CliRunner().invoke(build_app(), shown)
    assert done.exit_code == 0, done.output
    assert done.stderr == (
        "flower: note: 2 messages of this session are from before the last "
        "compaction, which its summary stands for: the model is not sent them\n"
    )


def test_sessions_show_pruned_says_an_older_compaction_is_compacted_history(
    app: typer.Typer,
) -> None:
    from flower.cli.main import build_app

    shown = ["sessions", "show", KEY.session_id, "--pruned"]
    b = TranscriptBuilder(session_id=KEY.session_id)
    b.summary("Greeting")  # a title of the conversation below: no compaction
    b.user("go")
    b.assistant([{"type": "text", "text": "gone"}])
    # older Claude Code compacted this way: a summary of what came before, then a new root
    b.summary("We started.")
    b.user("This session is being continued from a previous conversation.", parentUuid=None)
    b.assistant([{"type": "text", "text": "yes"}])
    pruning_memory_store.SHARED[KEY] = b.entries
    done = CliRunner().invoke(build_app(), shown)
    assert done.exit_code == 0, done.output
    assert done.stderr == (
        "flower: note: 2 messages of this session are from before the last "
        "compaction, which its summary stands for: the model is not sent them\n"
    )
    b = TranscriptBuilder(session_id=KEY.session_id)
    b.user("go")
    b.assistant([{"type": "text", "text": "gone"}])
    b.summary("Greeting")  # the title of the new conversation, written after it began
    b.user("start over", parentUuid=None)
    b.assistant([{"type": "text", "text": "yes"}])
    b.entries[2]["leafUuid"] = b.leaf
    pruning_memory_store.SHARED[KEY] = b.entries
    done = CliRunner().invoke(build_app(), shown)
    assert "2 messages of this session are off the active chain, on an older branch" in done.stderr


def test_sessions_show_pruned_is_a_dry_run_of_trim(app: typer.Typer, in_tmp: Path) -> None:
    from flower.cli.main import build_app

    shown = ["sessions", "show", KEY.session_id, "--pruned"]
    for extra in ([], ["--raw"], ["--json"]):
        done = CliRunner().invoke(build_app(), [*shown, *extra])
        assert done.exit_code == 0, done.output
    folder = in_tmp.resolve() / "runs" / "trimmed" / KEY.session_id
    pointer = json.dumps(f"the full output is in {folder}{os.sep}")[1:-1]
    assert pointer in done.stdout  # the view shows trim's pointer, as a resume would send it
    assert not (in_tmp / "runs" / "trimmed").exists()  # but looking writes no file


def test_the_report_from_python_names_the_configured_store(app: typer.Typer) -> None:
    from flower.core.config import load_settings
    from flower.core.errors import UnknownSessionError
    from flower.stores.prune_report import prune_report

    settings = load_settings().settings
    report = prune_report(settings, KEY.session_id[:6], trim=False)
    assert report["session_id"] == KEY.session_id
    assert "trim" not in [p["policy"] for p in report["policies"]]
    with pytest.raises(UnknownSessionError, match="'prune-test-memory' session store"):
        prune_report(settings, "no-such-session")
