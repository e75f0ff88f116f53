from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_run_helpers import Flower, ScriptedModel, flower_env

from flower.testing.fake_api import FakeMessagesAPI


@pytest.fixture
def model() -> ScriptedModel:
    return ScriptedModel()


@pytest.fixture
def api(model: ScriptedModel) -> Iterator[FakeMessagesAPI]:
    with FakeMessagesAPI(model) as fake:
        yield fake


@pytest.fixture
def ws(in_tmp: Path) -> Path:
    """The workspace: a fresh directory (the real path, as flower prints it)."""
    path = in_tmp / "proj"
    path.mkdir()
    return path.resolve()


@pytest.fixture
def flower(ws: Path, api: FakeMessagesAPI, tmp_path: Path) -> Flower:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return Flower(ws, flower_env(api, home))
