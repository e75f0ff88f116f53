"""Without ``flower[otel]`` (or without the ``OTEL_*`` variables) nothing is traced and
nothing of OpenTelemetry's SDK is imported; with them, spans leave the process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from telemetry_helpers import Collector

HERE = Path(__file__).parent
_SCRIPT = Path(sys.executable).with_name("flower")
FLOWER = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "flower.cli.main"]


def clean_env(**extra: str) -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "FLOWER_", "ANTHROPIC_"))
    }
    env.update(extra)
    return env


def run_once(root: Path, *args: str, **env: str) -> tuple[dict[str, Any], str]:
    done = subprocess.run(
        [sys.executable, str(HERE / "run_once.py"), str(root), *args],
        env=clean_env(**env),
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith("RESULT "), done.stdout
    return json.loads(last[len("RESULT ") :]), done.stdout


def sdk_modules(found: dict[str, Any]) -> list[str]:
    return [m for m in found["modules"] if m.startswith(("opentelemetry.sdk", "opentelemetry.exp"))]


def test_the_cli_imports_nothing_of_opentelemetry(in_tmp: Path) -> None:
    code = (
        "import sys, atexit\n"
        "atexit.register(lambda: print('MODULES', sorted(m for m in sys.modules "
        "if m.startswith('opentelemetry'))))\n"
        "from flower.cli.main import main\n"
        "sys.argv = ['flower', 'config']\n"
        "main()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=in_tmp,
        env=clean_env(OTEL_TRACES_EXPORTER="console"),
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    assert "MODULES []" in done.stdout


@pytest.mark.slow
def test_a_run_without_otel_variables_traces_nothing_and_loads_no_sdk(tmp_path: Path) -> None:
    found, _ = run_once(tmp_path)
    assert found["ok"] is True
    assert sdk_modules(found) == []


@pytest.mark.slow
def test_a_run_without_the_extra_ignores_the_otel_variables(tmp_path: Path) -> None:
    found, out = run_once(tmp_path, "--block", OTEL_TRACES_EXPORTER="console")
    assert found["ok"] is True
    assert sdk_modules(found) == []
    assert "invoke_agent" not in out


@pytest.mark.slow
def test_the_otel_variables_send_spans_to_an_otlp_collector(tmp_path: Path) -> None:
    with Collector() as collector:
        found, _ = run_once(
            tmp_path,
            OTEL_EXPORTER_OTLP_ENDPOINT=collector.endpoint,
            OTEL_EXPORTER_OTLP_PROTOCOL="http/protobuf",
        )
    assert found["ok"] is True and "opentelemetry.sdk.trace" in found["modules"]
    assert set(collector.paths) == {"/v1/traces"}
    ours = [name for service, scope, name in collector.spans if scope == "flower"]
    assert sorted(ours) == sorted(
        [
            "invoke_agent worker",
            "flower.attempt",
            "chat claude-sonnet-4-6",
            "execute_tool Read",
            "chat claude-sonnet-4-6",
        ]
    )
    # OTEL_SERVICE_NAME unset: the service is flower (the SDK's default would be
    # unknown_service); the anthropic SDK's own spans share the provider
    assert {service for service, _, _ in collector.spans} == {"flower"}


def test_a_typo_in_the_telemetry_table_is_a_config_error(in_tmp: Path) -> None:
    (in_tmp / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.flower.telemetry]\ncapture_contnet = true\n',
        encoding="utf-8",
    )
    done = subprocess.run(
        [*FLOWER, "config"],
        cwd=in_tmp,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2
    assert "[tool.flower.telemetry] capture_contnet" in done.stderr
    assert "unknown key" in done.stderr and "capture_content" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.slow
def test_console_spans_go_to_stderr_so_json_output_stays_json(tmp_path: Path) -> None:
    """``--json`` promises JSON on stdout and nothing else: the console exporter's spans
    (issue 29 item 9) are printed on stderr."""
    from flower.testing.fake_api import FakeMessagesAPI, text

    (tmp_path / "seed.txt").write_text("tulip\n", encoding="utf-8")
    with FakeMessagesAPI() as api:
        api.add(text("tulip"))
        done = subprocess.run(
            [*FLOWER, "once", "--json", "Which word is in seed.txt?"],
            cwd=tmp_path,
            env=clean_env(
                **api.env(), FLOWER_PROBE_STRATEGY="none", OTEL_TRACES_EXPORTER="console"
            ),
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    assert printed["ok"] is True and printed["results"][0]["text"] == "tulip"
    assert '"name": "invoke_agent worker"' in done.stderr
