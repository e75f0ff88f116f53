"""flower's built-in plugins are listed once, and pyproject.toml declares the same ones."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from flower.core import plugins
from flower.core.plugins import BUILTIN_MODULES, build_plugin_manager

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def test_pyproject_entry_points_are_the_builtin_list() -> None:
    declared = tomllib.loads(PYPROJECT.read_text())["project"]["entry-points"]["flower"]
    assert declared == BUILTIN_MODULES


def test_every_builtin_registers_without_installed_metadata(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(plugins, "_entry_points", list)
    pm, infos = build_plugin_manager()
    assert {info.name for info in infos if info.error is None} == set(BUILTIN_MODULES)
    assert all(pm.get_plugin(name) is not None for name in BUILTIN_MODULES)
