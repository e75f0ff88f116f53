"""The API key and database passwords never reach transcripts, manifest, lineage, logs,
error messages or `flower config` output: a real Runtime against the fake API."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from typer.testing import CliRunner

from flower import AgentSpec, Step, Workflow
from flower.cli.main import build_app
from flower.core.config import SessionsConfig, Settings
from flower.core.errors import FlowerError
from flower.stores.open import open_session_store
from flower.testing.fake_api import FakeMessagesAPI, text

API_KEY = "sk-ant-api03-HYGIENEkey0123456789abcdefXYZ"
PASSWORD = "Pg-Pa55word-HYGIENE"


def _with_password(url: str) -> str:
    return sa.make_url(url).set(password=PASSWORD).render_as_string(hide_password=False)


def _grep_tree(root: Path) -> list[str]:
    hits = []
    for path in root.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            if API_KEY.encode() in data or PASSWORD.encode() in data:
                hits.append(str(path))
    return hits


def test_a_real_run_leaks_neither_secret(
    in_tmp: Path,
    pg_url: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    caplog.set_level(logging.DEBUG)
    url = _with_password(pg_url)
    settings = Settings(sessions=SessionsConfig(backend="postgres", url=url, auto_migrate=True))
    with FakeMessagesAPI(api_key=API_KEY) as api:
        for name, value in api.env().items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("FLOWER_RESILIENCE_MAX_ATTEMPTS", "1")
        api.add(text("done"), text("done again"))
        from flower.runtime.engine import Runtime

        agent = AgentSpec(name="a", instructions="be brief", allowed_tools=[], max_turns=2)
        for _ in range(2):
            rt = Runtime(workspace=".", run_dir="runs", settings=settings)
            try:
                asyncio.run(Workflow([Step("step", agent, "go", resume_prompt="on")]).run(rt))
            finally:
                rt.close()
        assert api.requests and all(r.api_key == API_KEY for r in api.requests)

        # A wrong key: the 401 error must not carry either key.
        monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY + "-wrong")
        rt = Runtime(workspace=".", run_dir="runs", settings=settings)
        try:
            failed = asyncio.run(rt.run(agent, "go"))
        finally:
            rt.close()
        assert not failed.ok and "401" in (failed.error or "") + failed.text
        assert "HYGIENEkey" not in repr(failed)

    assert Path("runs/lineage.json").is_file() and Path("runs/manifest.json").is_file()
    assert _grep_tree(in_tmp) == []
    with open_session_store(url, settings=settings) as store:
        stored = [store.load(k) for p in store.list_projects() for k in _keys(store, p)]
    dump = repr(stored)
    assert "go" in dump and API_KEY not in dump and PASSWORD not in dump
    out, err = capfd.readouterr()
    assert API_KEY not in out + err + caplog.text and PASSWORD not in out + err + caplog.text

    # Error messages: an unreachable server named with the same password.
    bad = _with_password("postgresql+psycopg://postgres@127.0.0.1:1/test")
    with pytest.raises(FlowerError) as unreachable:
        open_session_store(bad, settings=settings)
    assert PASSWORD not in str(unreachable.value)


def _keys(store: Any, project: str) -> list[Any]:
    from flower.core.records import SessionKey

    return [SessionKey(project, i.session_id) for i in store.list_sessions(project)]


def test_flower_config_masks_both(in_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)
    monkeypatch.setenv(
        "FLOWER_SESSIONS_URL", f"postgresql+psycopg://app:{PASSWORD}@127.0.0.1:5432/test"
    )
    for args in (["config"], ["config", "--json"]):
        result = CliRunner().invoke(build_app(), args)
        assert result.exit_code == 0, result.output
        assert PASSWORD not in result.output and API_KEY not in result.output
        assert "app:***@" in result.output
