"""A third language is one catalog: dropped beside zh_CN, it is chosen from the locale,
names the steps and gives the judge's verdict its words; the words of the others are
still understood."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from flower.core import i18n
from flower.core.i18n import available_languages, choose_language, language
from flower.core.labels import shown_step
from flower.workflow.verdict import GOAL_PREFIXES, MET_WORDS, NOT_MET_WORDS, parse_verdict

FRENCH = {
    MET_WORDS: "atteint|réussi|oui",
    NOT_MET_WORDS: "non atteint|pas atteint|échec|non",
    GOAL_PREFIXES: "objectif",
    "work": "travail",
}
"""A few messages of a French catalog (the rest falls back to English, as gettext does)."""

GOALS = ["un", "deux", "trois", "quatre", "cinq", "six", "sept"]
REPLY = (
    "1. atteint — ok\n2. non atteint — il manque README\n3. met\n4. 未达成 — 缺\n5. 达成\n"
    "Objectif 6 : atteint\n目标 7: 达成"
)
"""A judge answering in French, English and Chinese at once."""


def _compile(directory: Path, code: str, messages: dict[str, str]) -> None:
    from babel.messages.catalog import Catalog
    from babel.messages.mofile import write_mo

    catalog = Catalog(locale=code, domain=i18n.DOMAIN)
    for msgid, msgstr in messages.items():
        catalog.add(msgid, msgstr)
    folder = directory / code / "LC_MESSAGES"
    folder.mkdir(parents=True)
    with (folder / f"{i18n.DOMAIN}.mo").open("wb") as handle:
        write_mo(handle, catalog)


@pytest.fixture
def with_french(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """flower's catalogs plus a French one, as if fr/LC_MESSAGES/flower.mo were added."""
    locale = tmp_path / "locale"
    shutil.copytree(i18n.LOCALE_DIR, locale, ignore=lambda folder, _names: ["fr"])
    _compile(locale, "fr", FRENCH)
    monkeypatch.setattr(i18n, "LOCALE_DIR", locale)
    return locale


def test_a_dropped_in_catalog_is_a_language(with_french: Path) -> None:
    dropped = sorted(p.parent.parent.name for p in with_french.glob("*/LC_MESSAGES/*.mo"))
    assert "fr" in dropped and "zh_CN" in dropped
    assert available_languages() == ["en", *dropped]
    assert choose_language(None, None, {"LANG": "fr_FR.UTF-8"}) == ("fr", "env LANG")
    assert choose_language("fr_CA", "[tool.flower] language", {}) == (
        "fr",
        "[tool.flower] language",
    )
    with language("fr"):
        assert shown_step("干活") == "travail"


def test_the_verdict_words_come_from_the_catalogs(with_french: Path) -> None:
    for lang in ("fr", "en", "zh_CN"):  # a judge may answer in any language flower has
        with language(lang):
            verdict = parse_verdict(REPLY, GOALS)
        assert verdict.met == [True, False, True, False, True, True, True], lang
        assert verdict.notes[:2] == ["ok", "il manque README"]


def test_without_the_catalog_french_words_are_no_verdict() -> None:
    """The check above can fail: English and Chinese alone do not know `atteint`."""
    with language("en"):
        verdict = parse_verdict(REPLY, GOALS)
    assert verdict.met == [False, False, True, False, True, False, True]
    assert verdict.notes[0] == "the judge gave no verdict"
