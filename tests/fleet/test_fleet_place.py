"""Which fleet a command works on, called from Python (no workers, no database)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from flower.core.config import Settings
from flower.fleet.places import FleetExtraMissingError, fleet_place


def test_the_fleet_place_is_the_run_directorys_sqlite_file_by_default(tmp_path: Path) -> None:
    place = fleet_place(Settings(), cwd=tmp_path)
    assert place.database == f"sqlite:///{tmp_path.resolve() / 'runs' / 'fleet.sqlite'}"
    assert place.workspaces == tmp_path.resolve()


def test_without_the_fleet_extra_it_says_how_to_install_it_and_makes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, english: None
) -> None:
    monkeypatch.setitem(sys.modules, "dbos", None)  # as if not installed
    with pytest.raises(FleetExtraMissingError, match=r"pip install 'flower\[fleet\]'") as err:
        fleet_place(Settings(), cwd=tmp_path)
    assert err.value.exit_code == 2
    assert list(tmp_path.iterdir()) == []
