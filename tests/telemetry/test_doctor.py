"""``flower doctor`` says whether a run would be traced, and fails on an exporter that
is not there (a run would stop on it)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from flower.cli.main import build_app

runner = CliRunner()


def traces_check(monkeypatch: pytest.MonkeyPatch, **env: str) -> tuple[int, dict[str, Any]]:
    for name in [name for name in os.environ if name.startswith("OTEL_")]:
        monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("FLOWER_PROBE_STRATEGY", "none")
    done = runner.invoke(build_app(), ["doctor", "--json"])
    checks = {check["name"]: check for check in json.loads(done.stdout)["checks"]}
    return done.exit_code, checks["traces"]


def test_doctor_says_traces_are_off_without_otel_variables(
    in_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, check = traces_check(monkeypatch)
    assert check["ok"] is True
    assert check["detail"].startswith("off (no OTEL_TRACES_EXPORTER")


def test_doctor_names_the_exporter_endpoint_and_service(
    in_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, check = traces_check(
        monkeypatch,
        OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:4318",
        OTEL_EXPORTER_OTLP_PROTOCOL="http/protobuf",
        OTEL_SERVICE_NAME="my-agents",
    )
    assert check["ok"] is True
    assert check["detail"] == (
        "on: otlp_proto_http to http://127.0.0.1:4318, service my-agents, no content"
    )


def test_doctor_fails_on_an_exporter_that_is_not_installed(
    in_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, check = traces_check(monkeypatch, OTEL_TRACES_EXPORTER="jaegerr")
    assert code == 1
    assert check["ok"] is False
    assert "OTEL_TRACES_EXPORTER" in check["detail"] and "'jaegerr'" in check["detail"]


def test_doctor_says_when_the_sdk_is_disabled(
    in_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, check = traces_check(monkeypatch, OTEL_TRACES_EXPORTER="console", OTEL_SDK_DISABLED="true")
    assert check == {**check, "ok": True, "detail": "off (OTEL_SDK_DISABLED=true)"}


def test_capture_content_can_be_set_from_the_environment(
    in_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, check = traces_check(
        monkeypatch, OTEL_TRACES_EXPORTER="console", FLOWER_TELEMETRY_CAPTURE_CONTENT="true"
    )
    assert check["detail"] == "on: console, service flower, with content"


def test_enabled_false_in_pyproject_turns_traces_off(
    in_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (in_tmp / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.flower.telemetry]\nenabled = false\n', encoding="utf-8"
    )
    _, check = traces_check(monkeypatch, OTEL_TRACES_EXPORTER="console")
    assert check["detail"] == "off ([tool.flower.telemetry] enabled = false)"
