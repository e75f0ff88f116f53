"""Which language flower speaks: settings > FLOWER_LANG > the locale > English."""

from __future__ import annotations

from pathlib import Path

import pytest

from flower.core.config import load_settings
from flower.core.errors import ConfigError
from flower.core.i18n import choose_language, normalize_language


def test_nothing_set_is_english() -> None:
    assert choose_language(None, None, {}) == ("en", "default")


@pytest.mark.parametrize(
    ("code", "language"),
    [
        ("zh_CN.UTF-8", "zh_CN"),
        ("zh-cn", "zh_CN"),
        ("zh", "zh_CN"),
        ("en_US.UTF-8", "en"),
        ("C.UTF-8", "en"),
        ("POSIX", "en"),
        ("fr_FR.UTF-8", None),
        ("", None),
    ],
)
def test_locale_names_normalize(code: str, language: str | None) -> None:
    assert normalize_language(code) == language


def test_locale_variables_in_gettext_order() -> None:
    env = {"LANG": "en_US.UTF-8", "LC_MESSAGES": "zh_CN.UTF-8"}
    assert choose_language(None, None, env) == ("zh_CN", "env LC_MESSAGES")
    env["LC_ALL"] = "C.UTF-8"
    assert choose_language(None, None, env) == ("en", "env LC_ALL")


def test_an_unknown_locale_is_english_silently() -> None:
    assert choose_language(None, None, {"LANG": "fr_FR.UTF-8"}) == ("en", "env LANG")


def test_flower_lang_beats_the_locale_and_settings_beat_it() -> None:
    env = {"LANG": "en_US.UTF-8", "FLOWER_LANG": "zh_CN"}
    assert choose_language(None, None, env) == ("zh_CN", "env FLOWER_LANG")
    assert choose_language("en", "pyproject.toml [tool.flower] language", env) == (
        "en",
        "pyproject.toml [tool.flower] language",
    )


def test_unknown_flower_lang_is_a_config_error(english: None) -> None:
    with pytest.raises(
        ConfigError, match=r"FLOWER_LANG: unknown language 'klingon' \(available: en, zh_CN\)"
    ):
        choose_language(None, None, {"FLOWER_LANG": "klingon"})


def test_pyproject_language_wins_and_is_reported(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.flower]\nlanguage = "zh_CN"\n')
    loaded = load_settings(tmp_path, environ={"FLOWER_LANG": "en", "LANG": "en_US.UTF-8"})
    assert loaded.language == "zh_CN"
    assert loaded.language_source == f"{tmp_path / 'pyproject.toml'} [tool.flower] language"


def test_unknown_pyproject_language_names_file_key_and_choices(
    tmp_path: Path, english: None
) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.flower]\nlanguage = "xx"\n')
    with pytest.raises(ConfigError) as caught:
        load_settings(tmp_path, environ={})
    text = str(caught.value)
    assert str(tmp_path / "pyproject.toml") in text and "[tool.flower] language" in text
    assert "unknown language 'xx' (available: en, zh_CN)" in text
    assert caught.value.exit_code == 2
