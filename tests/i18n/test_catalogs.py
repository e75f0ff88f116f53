"""The catalogs hold every message of the code, and the shipped .mo files are their .po."""

from __future__ import annotations

import gettext
import io
import re
from pathlib import Path
from typing import Any

import pytest

from flower.core.i18n import LOCALE_DIR, available_languages

ROOT = Path(__file__).resolve().parents[2]
CATALOGS = sorted(LOCALE_DIR.glob("*/LC_MESSAGES/flower.po"))


EXTRACTED = ("flower", "flower_plugins")
"""The packages ``pybabel extract -F babel.cfg ... flower flower_plugins`` reads."""


def _code_msgids() -> set[str]:
    """What ``pybabel extract -F babel.cfg flower flower_plugins`` finds (singular
    msgids): the code's, the built-in plugins' and the viewer's templates', by the
    methods babel.cfg names."""
    from babel.messages.extract import extract_from_dir
    from babel.messages.frontend import parse_mapping_cfg

    with (ROOT / "babel.cfg").open(encoding="utf-8") as handle:
        method_map, options_map = parse_mapping_cfg(handle)
    found = [
        message
        for package in EXTRACTED
        for message in extract_from_dir(str(ROOT / package), method_map, options_map)
    ]
    return {m[2] if isinstance(m[2], str) else m[2][0] for m in found}


def _po(path: Path) -> Any:  # babel Catalog
    from babel.messages.pofile import read_po

    with path.open("rb") as handle:
        return read_po(handle)


def test_there_is_a_chinese_catalog() -> None:
    names = [p.parent.parent.name for p in CATALOGS]
    assert "zh_CN" in names
    assert available_languages() == ["en", *names]  # a catalog more is a language more


def _translator_notes() -> dict[str, list[str]]:
    """The ``# TRANSLATORS:`` comments of the code, by msgid (``pybabel extract -c
    TRANSLATORS:`` puts them into the catalogs as ``#.`` lines)."""
    from babel.messages.extract import extract_from_dir
    from babel.messages.frontend import parse_mapping_cfg

    with (ROOT / "babel.cfg").open(encoding="utf-8") as handle:
        method_map, options_map = parse_mapping_cfg(handle)
    notes: dict[str, list[str]] = {}
    for package in EXTRACTED:
        for _file, _line, message, comments, _context in extract_from_dir(
            str(ROOT / package), method_map, options_map, comment_tags=("TRANSLATORS:",)
        ):
            if comments:
                notes[message if isinstance(message, str) else message[0]] = comments
    return notes


def test_extraction_finds_the_translators_notes() -> None:
    assert "met|pass|yes" in _translator_notes()  # the judge's verdict words


@pytest.mark.parametrize("po", CATALOGS, ids=lambda p: p.parent.parent.name)
def test_catalog_carries_the_translators_notes(po: Path) -> None:
    """A translator reads what a message is for: extracted without ``-c TRANSLATORS:``,
    the notes are lost from the catalog on its next ``pybabel update``."""
    catalog = _po(po)
    lost = {
        msgid: notes
        for msgid, notes in _translator_notes().items()
        if (message := catalog.get(msgid)) is None or list(message.auto_comments) != notes
    }
    assert not lost, (
        f"{po} lacks the translators' notes of {sorted(lost)}: extract with "
        "`pybabel extract -c TRANSLATORS: ...` (see docs/languages.md)"
    )


@pytest.mark.parametrize("po", CATALOGS, ids=lambda p: p.parent.parent.name)
def test_catalog_translates_every_message_of_the_code(po: Path) -> None:
    catalog = _po(po)
    translated = {m.id if isinstance(m.id, str) else m.id[0] for m in catalog if m.id and m.string}
    missing = _code_msgids() - translated
    assert not missing, f"{po} lacks: {sorted(missing)} (see docs/languages.md)"


def test_extraction_finds_the_banner_and_the_prompts() -> None:
    """The check above can fail: the code's messages are really found."""
    ids = _code_msgids()
    assert "brief confirmed" in ids and "work" in ids and "{step}·judge" in ids


def test_extraction_finds_the_viewer_templates() -> None:
    """The templates of flower ui are extracted too (babel.cfg's jinja2 section), plain
    ``{{ _() }}``, ``{% trans %}`` blocks and plurals alike."""
    ids = _code_msgids()
    assert "the store cannot be opened" in ids  # {{ _("...") }} in error.html
    assert "page %(number)s of %(pages)s" in ids  # {% trans %} in sessions.html
    assert "woke %(count)s time" in ids  # {% trans count=... %}{% pluralize %} in run.html


def test_extraction_finds_the_builtin_plugins_messages() -> None:
    """flower_plugins/ is extracted too: a plugin's message missing from a catalog fails."""
    assert "{url}: already at {revision}" in _code_msgids()


@pytest.mark.parametrize("po", CATALOGS, ids=lambda p: p.parent.parent.name)
def test_compiled_catalog_is_the_po(po: Path) -> None:
    """The committed .mo (what a plain ``pip install .`` ships) says what the .po says."""
    from babel.messages.mofile import write_mo

    fresh = io.BytesIO()
    write_mo(fresh, _po(po))
    fresh.seek(0)
    want = gettext.GNUTranslations(fresh)._catalog  # type: ignore[attr-defined]
    with po.with_suffix(".mo").open("rb") as handle:
        shipped = gettext.GNUTranslations(handle)._catalog  # type: ignore[attr-defined]
    shipped.pop("", None)  # the header carries babel's dates, not messages
    want.pop("", None)
    assert shipped == want, f"run: pybabel compile -d flower/locale -D flower ({po} changed)"


ONE_WORD = {
    # 修剪 for pruning (裁剪 is trim's); an option, a dotted key such as
    # [tool.flower.pruning] or a placeholder named so is no word to translate
    "pruning": (r"(?<![-.{\w])prun(?:ing|ed)\b(?!})", "修剪", "剪枝"),
    # 谱系 for lineage (not 接续记录, nor 记录, which is a transcript's 对话记录);
    # lineage.json, lineage_stores or a placeholder named so is no word to translate
    "lineage": (r"(?<![-.{/\w])lineages?\b(?![}.\w])", "谱系", "接续记录"),
}


@pytest.mark.parametrize("term", sorted(ONE_WORD))
def test_the_chinese_catalog_calls_a_term_by_one_word(term: str) -> None:
    """Wherever the English says the term, the Chinese says its one word, never the other."""
    pattern, chosen, dropped = ONE_WORD[term]
    word = re.compile(pattern, re.IGNORECASE)
    catalog = _po(LOCALE_DIR / "zh_CN" / "LC_MESSAGES" / "flower.po")
    saying = [
        m for m in catalog if m.id and word.search(m.id if isinstance(m.id, str) else m.id[0])
    ]
    assert len(saying) > 10
    for message in saying:
        translated = message.string if isinstance(message.string, str) else message.string[0]
        assert chosen in translated and dropped not in translated, (message.id, translated)
