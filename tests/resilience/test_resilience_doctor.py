"""``flower doctor`` against a real SQLite store and real loopback endpoints."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from resilience_helpers import LoopbackServer
from typer.testing import CliRunner

from flower.cli.main import build_app
from flower.stores.open import open_session_store

pytestmark = pytest.mark.usefixtures("english")  # expects flower's English output

SECRET = "sk-ant-doctor-test-secret-value"


def _configure(folder: Path, strategy: str = "tcp") -> None:
    (folder / "pyproject.toml").write_text(
        f'[tool.flower.probe]\nstrategy = "{strategy}"\ntimeout = 0.5\n', encoding="utf-8"
    )


def _doctor(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(build_app(), ["doctor", *args])
    return result.exit_code, result.output


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for var in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


def test_all_checks_pass(
    in_tmp: Path, clean_env: pytest.MonkeyPatch, loopback: Callable[..., LoopbackServer]
) -> None:
    _configure(in_tmp)
    open_session_store(settings=None).close()  # creates runs/sessions.db, schema current
    server = loopback("close")
    clean_env.setenv("ANTHROPIC_BASE_URL", f"http://127.0.0.1:{server.port}")
    clean_env.setenv("ANTHROPIC_API_KEY", SECRET)
    code, output = _doctor()
    assert code == 0, output
    lines = output.splitlines()
    assert lines[0].startswith("ok    config") and str(in_tmp / "pyproject.toml") in lines[0]
    assert re.fullmatch(r"ok    plugins   \d+ loaded", lines[1])
    assert lines[2] == "ok    run dir   runs writable"
    assert lines[3].startswith("ok    store") and "schema current" in lines[3]
    assert lines[4] == (
        "ok    pruning   synthetic-errors -> denials -> interrupted -> ephemeral -> trim"
    )
    assert lines[5].startswith("ok    endpoint")
    assert f"127.0.0.1:{server.port} (ANTHROPIC_BASE_URL) reachable by tcp probe in" in lines[5]
    assert lines[6] == "ok    api key   ANTHROPIC_API_KEY set"
    assert lines[7].startswith("ok    traces    ")
    assert lines[8] == "all checks ok"
    assert SECRET not in output


def test_unreachable_endpoint_and_missing_key_fail(
    in_tmp: Path, clean_env: pytest.MonkeyPatch, closed_port: int
) -> None:
    _configure(in_tmp)
    clean_env.setenv("ANTHROPIC_BASE_URL", f"http://127.0.0.1:{closed_port}")
    code, output = _doctor()
    assert code == 1
    assert f"fail  endpoint  127.0.0.1:{closed_port} (ANTHROPIC_BASE_URL) unreachable" in output
    assert "(timeout 0.5 s)" in output
    assert "fail  api key" in output and "ANTHROPIC_API_KEY" in output
    assert output.splitlines()[-1] == "2 of 8 checks failed"
    assert not (in_tmp / "runs").exists()  # doctor leaves no files behind


def test_auth_token_counts_as_a_key_and_is_never_shown(
    in_tmp: Path, clean_env: pytest.MonkeyPatch
) -> None:
    _configure(in_tmp, strategy="none")
    clean_env.setenv("ANTHROPIC_AUTH_TOKEN", SECRET)
    code, output = _doctor()
    assert code == 0, output
    assert "ANTHROPIC_AUTH_TOKEN set" in output
    assert SECRET not in output


def test_broken_store_is_a_failed_check_not_a_crash(
    in_tmp: Path, clean_env: pytest.MonkeyPatch
) -> None:
    _configure(in_tmp, strategy="none")
    (in_tmp / "runs").mkdir()
    (in_tmp / "runs" / "sessions.db").write_bytes(b"this is not a database" * 100)
    clean_env.setenv("ANTHROPIC_API_KEY", SECRET)
    code, output = _doctor()
    assert code == 1
    store_line = next(line for line in output.splitlines() if line.split()[1] == "store")
    assert store_line.startswith("fail  store")
    assert "sessions.db" in store_line
    assert "Traceback" not in output


def test_malformed_base_url_and_unknown_strategy(
    in_tmp: Path, clean_env: pytest.MonkeyPatch
) -> None:
    _configure(in_tmp, strategy="carrier-pigeon")
    clean_env.setenv("ANTHROPIC_API_KEY", SECRET)
    code, output = _doctor()
    assert code == 1
    assert "no prober named 'carrier-pigeon'; available: http, none, tcp" in output
    _configure(in_tmp, strategy="tcp")
    clean_env.setenv("ANTHROPIC_BASE_URL", "api.anthropic.com")
    code, output = _doctor()
    assert code == 1
    assert "fail  endpoint  ANTHROPIC_BASE_URL='api.anthropic.com'" in output
    assert "http:// or https://" in output


def test_invalid_config_fails_every_dependent_check(
    in_tmp: Path, clean_env: pytest.MonkeyPatch
) -> None:
    (in_tmp / "pyproject.toml").write_text("[tool.flower.probe]\nstrateg = 1\n")
    code, output = _doctor()
    assert code == 1
    assert "fail  config" in output and "strateg: unknown key" in output
    assert "skipped: the configuration is invalid" in output


def test_json_output(
    in_tmp: Path, clean_env: pytest.MonkeyPatch, loopback: Callable[..., LoopbackServer]
) -> None:
    _configure(in_tmp, strategy="http")
    server = loopback("http", status=503)
    clean_env.setenv("ANTHROPIC_BASE_URL", f"http://127.0.0.1:{server.port}")
    code, output = _doctor("--json")
    assert code == 1  # no key
    report = json.loads(output)
    assert report["ok"] is False
    by_name = {c["name"]: c for c in report["checks"]}
    assert set(by_name) == {
        "config",
        "plugins",
        "run dir",
        "store",
        "pruning",
        "endpoint",
        "api key",
        "traces",
    }
    assert by_name["plugins"]["ok"], by_name["plugins"]
    assert by_name["endpoint"]["ok"] is True  # a 503 is still an answer
    assert "reachable by http probe" in by_name["endpoint"]["detail"]
    assert 0 <= by_name["endpoint"]["seconds"] < 5
    assert by_name["api key"]["ok"] is False


def test_a_misspelt_pruning_policy_fails_the_pruning_check(
    in_tmp: Path, clean_env: pytest.MonkeyPatch
) -> None:
    (in_tmp / "pyproject.toml").write_text(
        '[tool.flower.pruning]\npolicies = ["denials", "ephemral"]\n', encoding="utf-8"
    )
    code, output = _doctor()
    assert code == 1
    line = next(line for line in output.splitlines() if line.startswith("fail  pruning"))
    assert f"{in_tmp / 'pyproject.toml'}: [tool.flower.pruning] policies" in line
    assert "(did you mean 'ephemeral'?)" in line


def test_a_run_dir_that_cannot_be_made_and_an_unprobed_endpoint_are_said_as_they_are(
    in_tmp: Path, clean_env: pytest.MonkeyPatch
) -> None:
    (in_tmp / "runs").write_text("a file where the run directory goes")
    clean_env.setenv("FLOWER_PROBE_STRATEGY", "none")
    clean_env.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1")
    code, output = _doctor("--json")
    assert code == 1
    by_name = {c["name"]: c for c in json.loads(output)["checks"]}
    assert not by_name["run dir"]["ok"]
    assert "'runs' is not a directory" in by_name["run dir"]["detail"]
    assert by_name["endpoint"]["detail"] == (
        "127.0.0.1:1 (ANTHROPIC_BASE_URL) not probed (strategy none)"
    )
