"""Which key each built-in step uses in a workspace, from Python: step_lookups."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec

from flower.core.config import Settings
from flower.core.i18n import language
from flower.workflow.documents import StepLookup, step_lookups


def test_a_new_workspace_uses_this_languages_names_and_creates_nothing(in_tmp: Path) -> None:
    with language("en"):
        found = step_lookups(in_tmp, Settings())
    assert found["work_step"] == StepLookup("work", "language")
    assert not (in_tmp / "runs").exists()


def test_lineage_keys_win_over_the_language_and_settings_over_both(in_tmp: Path) -> None:
    runs = in_tmp / "runs"
    runs.mkdir()
    record = {"workspace": str(in_tmp), "steps": {"干活": "s1"}, "woke": 1}
    (runs / "lineage.json").write_text(json.dumps(record), encoding="utf-8")
    settings = Settings()
    conf = msgspec.structs.replace(settings.workflow, goals_step="aims")
    with language("en"):
        found = step_lookups(in_tmp, msgspec.structs.replace(settings, workflow=conf))
    assert found["work_step"] == StepLookup("干活", "lineage")
    assert found["goals_step"] == StepLookup("aims", "configured")
    assert found["clarify_step"].how == "language"


def test_flower_config_says_why_a_step_has_its_key() -> None:
    with language("en"):
        assert StepLookup("干活", "lineage").said() == "default: found in lineage"
        assert StepLookup("work", "language").said() == "default: English"
    with language("zh_CN"):
        assert StepLookup("干活", "language").said() == "默认:中文"
