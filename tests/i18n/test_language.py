"""Which language flower speaks: settings > FLOWER_LANG > the locale > English."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from flower.cli.main import build_app
from flower.core.config import load_settings
from flower.core.errors import ConfigError
from flower.core.i18n import available_languages, choose_language, normalize_language

UNKNOWN = "xx"
"""A language code no catalog will ever have (ISO 639 leaves ``xx`` unassigned)."""


def available() -> str:
    """How an error lists the languages there are (more once a catalog is added)."""
    return ", ".join(available_languages())


def test_nothing_set_is_english() -> None:
    assert choose_language(None, None, {}) == ("en", "default")


@pytest.mark.parametrize(
    ("code", "language"),
    [
        ("zh_CN.UTF-8", "zh_CN"),
        ("zh-cn", "zh_CN"),
        ("zh", "zh_CN"),
        ("zh_SG.UTF-8", "zh_CN"),
        ("zh_Hans", "zh_CN"),
        ("zh-Hans-CN", "zh_CN"),
        ("zh_CN.GB18030@pinyin", "zh_CN"),
        ("en_US.UTF-8", "en"),
        ("C.UTF-8", "en"),
        ("POSIX", "en"),
        (f"{UNKNOWN}_XX.UTF-8", None),
        ("", None),
    ],
)
def test_locale_names_normalize(code: str, language: str | None) -> None:
    assert normalize_language(code) == language


@pytest.mark.parametrize(
    "code", ["zh_TW", "zh_TW.UTF-8", "zh_HK.UTF-8", "zh_MO", "zh_Hant", "zh-Hant-TW", "zh_Hant_CN"]
)
def test_traditional_chinese_is_not_simplified(code: str) -> None:
    """zh_CN's catalog is Simplified Chinese: a Traditional locale has no catalog here,
    as gettext (which would look for zh_TW, then zh) finds none."""
    assert normalize_language(code) is None
    assert choose_language(None, None, {"LANG": code}) == ("en", "env LANG")
    assert choose_language(None, None, {"LC_ALL": code, "LANG": "zh_CN.UTF-8"}) == (
        "en",
        "env LC_ALL",
    )


@pytest.mark.parametrize("code", ["zh_TW", "zh_HK", "zh_Hant"])
def test_traditional_chinese_in_flowers_settings_is_exit_2(
    in_tmp: Path, english: None, code: str
) -> None:
    by_env = CliRunner().invoke(build_app(), ["status"], env={"FLOWER_LANG": code})
    assert by_env.exit_code == 2
    assert by_env.stderr == (
        f"flower: error: env FLOWER_LANG: unknown language '{code}' (available: {available()})\n"
    )
    (in_tmp / "pyproject.toml").write_text(f'[tool.flower]\nlanguage = "{code}"\n')
    by_file = CliRunner().invoke(build_app(), ["status"], env={"FLOWER_LANG": "en"})
    assert by_file.exit_code == 2
    assert by_file.stderr == (
        f"flower: error: {in_tmp.resolve() / 'pyproject.toml'} [tool.flower] language: "
        f"unknown language '{code}' (available: {available()})\n"
    )


def test_a_traditional_chinese_locale_is_english_without_a_word(in_tmp: Path) -> None:
    env = {"FLOWER_LANG": "", "LC_ALL": "", "LC_MESSAGES": "", "LANG": "zh_HK.UTF-8"}
    done = CliRunner().invoke(build_app(), ["status"], env=env)
    assert done.exit_code == 1 and done.stderr == ""
    assert done.stdout.startswith("workspace   ")


def test_an_empty_pyproject_language_names_the_file_and_key(in_tmp: Path, english: None) -> None:
    (in_tmp / "pyproject.toml").write_text('[tool.flower]\nlanguage = ""\n')
    done = CliRunner().invoke(build_app(), ["config"], env={"FLOWER_LANG": "en"})
    assert done.exit_code == 2
    assert done.stderr == (
        f"flower: error: {in_tmp.resolve() / 'pyproject.toml'} [tool.flower] language: "
        f"the language is empty (available: {available()})\n"
    )


def test_an_empty_language_variable_is_unset(tmp_path: Path) -> None:
    env = {"FLOWER_LANGUAGE": "", "FLOWER_LANG": "", "LANG": "zh_CN.UTF-8"}
    loaded = load_settings(tmp_path, environ=env)
    assert (loaded.language, loaded.language_source) == ("zh_CN", "env LANG")


def test_locale_variables_in_gettext_order() -> None:
    env = {"LANG": "en_US.UTF-8", "LC_MESSAGES": "zh_CN.UTF-8"}
    assert choose_language(None, None, env) == ("zh_CN", "env LC_MESSAGES")
    env["LC_ALL"] = "C.UTF-8"
    assert choose_language(None, None, env) == ("en", "env LC_ALL")


def test_an_unknown_locale_is_english_silently() -> None:
    assert choose_language(None, None, {"LANG": f"{UNKNOWN}_XX.UTF-8"}) == ("en", "env LANG")


def test_flower_lang_beats_the_locale_and_settings_beat_it() -> None:
    env = {"LANG": "en_US.UTF-8", "FLOWER_LANG": "zh_CN"}
    assert choose_language(None, None, env) == ("zh_CN", "env FLOWER_LANG")
    assert choose_language("en", "pyproject.toml [tool.flower] language", env) == (
        "en",
        "pyproject.toml [tool.flower] language",
    )


def test_unknown_flower_lang_is_a_config_error(english: None) -> None:
    with pytest.raises(ConfigError) as caught:
        choose_language(None, None, {"FLOWER_LANG": "klingon"})
    assert str(caught.value) == (
        f"env FLOWER_LANG: unknown language 'klingon' (available: {available()})"
    )


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
    assert f"unknown language 'xx' (available: {available()})" in text
    assert caught.value.exit_code == 2
