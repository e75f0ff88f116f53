"""Messages in the user's language: stdlib gettext over the catalogs in flower/locale.

English is the source language (the msgids); ``zh_CN`` carries the seed page's
strings byte for byte. One language is active per process (one per wake): the CLI
picks it once from the settings and the environment, see :func:`choose_language`.
"""

from __future__ import annotations

import gettext
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

from flower.core.errors import ConfigError

DOMAIN = "flower"
SOURCE_LANGUAGE = "en"
LOCALE_DIR = Path(__file__).resolve().parent.parent / "locale"
LOCALE_VARIABLES = ("LC_ALL", "LC_MESSAGES", "LANG")
"""Read in this order, as gettext does; the first one set decides."""


def available_languages() -> list[str]:
    """``en`` plus every language with a compiled catalog under flower/locale."""
    found = sorted(p.parent.parent.name for p in LOCALE_DIR.glob(f"*/LC_MESSAGES/{DOMAIN}.mo"))
    return [SOURCE_LANGUAGE, *(lang for lang in found if lang != SOURCE_LANGUAGE)]


OTHER_WRITTEN_FORMS = {"zh": ("Hans", frozenset({"TW", "HK", "MO"}))}
"""Languages whose catalog is one written form of several: the script it is written in,
and the regions that write another by default. Simplified Chinese (``zh_CN``) answers
for ``zh``, ``zh_SG``, ``zh_Hans``; Traditional Chinese (``zh_TW``, ``zh_HK``,
``zh_Hant``) is another language, with no catalog yet."""


def _same_written_form(subtags: list[str]) -> bool:
    """Whether ``zh_Hant_TW`` (split) is written as the base language's catalog is."""
    form = OTHER_WRITTEN_FORMS.get(subtags[0].lower())
    if form is None:
        return True
    script, other_regions = form
    scripts = [tag for tag in subtags[1:] if len(tag) == 4 and tag.isalpha()]
    if scripts:
        return scripts[0].lower() == script.lower()
    return not any(tag.upper() in other_regions for tag in subtags[1:])


def normalize_language(code: str) -> str | None:
    """``zh_CN.UTF-8``, ``zh-cn``, ``zh``, ``zh-Hans-CN`` -> ``zh_CN``; ``en_US`` ->
    ``en``; ``None`` when flower has no catalog for it (``zh_TW`` and ``zh_Hant`` are
    Traditional Chinese, not ``zh_CN``); ``C`` and ``POSIX`` are English."""
    bare = code.split(".", 1)[0].split("@", 1)[0].replace("-", "_").strip()
    if not bare:
        return None
    if bare in ("C", "POSIX"):
        return SOURCE_LANGUAGE
    languages = available_languages()
    by_lower = {lang.lower(): lang for lang in languages}
    if bare.lower() in by_lower:
        return by_lower[bare.lower()]
    subtags = bare.split("_")
    if not _same_written_form(subtags):
        return None
    base = subtags[0].lower()
    same_base = [lang for lang in languages if lang.split("_", 1)[0].lower() == base]
    return same_base[0] if len(same_base) == 1 else None


def checked_language(code: str, where: str) -> str:
    """``code`` as a supported language, or a :class:`ConfigError` naming ``where``
    and the languages there are."""
    language = normalize_language(code)
    if language is None:
        available = ", ".join(available_languages())
        raise ConfigError(
            _("{where}: unknown language {code} (available: {available})").format(
                where=where, code=repr(code), available=available
            )
        )
    return language


def choose_language(
    configured: str | None, configured_source: str | None, environ: Mapping[str, str]
) -> tuple[str, str]:
    """The language and where it came from: ``[tool.flower] language`` > ``FLOWER_LANG``
    > ``LC_ALL`` / ``LC_MESSAGES`` / ``LANG`` > ``en``.

    A language flower has no catalog for is an error when flower's own settings name
    it, and English when only the locale does (as every gettext program falls back).
    ``language = ""`` in a file is an error too.
    """
    source = configured_source or "[tool.flower] language"
    if configured is not None:
        if not configured.strip():
            available = ", ".join(available_languages())
            raise ConfigError(
                _("{where}: the language is empty (available: {available})").format(
                    where=source, available=available
                )
            )
        return checked_language(configured, source), source
    if environ.get("FLOWER_LANG"):
        return checked_language(environ["FLOWER_LANG"], "env FLOWER_LANG"), "env FLOWER_LANG"
    for var in LOCALE_VARIABLES:
        value = environ.get(var)
        if value:
            return normalize_language(value) or SOURCE_LANGUAGE, f"env {var}"
    return SOURCE_LANGUAGE, "default"


def environment_language(environ: Mapping[str, str]) -> str:
    """The language to speak before the settings are read (a configuration error says
    what is wrong in it): ``FLOWER_LANG``, else the locale, else English; an unknown
    ``FLOWER_LANG`` is left to the settings to report, in the locale's language."""
    try:
        return choose_language(None, None, environ)[0]
    except ConfigError:
        rest = {k: v for k, v in environ.items() if k != "FLOWER_LANG"}
        return choose_language(None, None, rest)[0]


def translations(language: str) -> gettext.NullTranslations:
    """The catalog of ``language`` (English, the msgids themselves, for ``en``)."""
    if language == SOURCE_LANGUAGE:
        return gettext.NullTranslations()
    return gettext.translation(DOMAIN, LOCALE_DIR, languages=[language])


_language = SOURCE_LANGUAGE
_active: gettext.NullTranslations = gettext.NullTranslations()


def set_language(language: str) -> None:
    """Make ``language`` the one every message of this process is shown in."""
    global _language, _active
    _active = translations(language)
    _language = language


def current_language() -> str:
    return _language


@contextmanager
def language(code: str) -> Iterator[None]:
    """Speak ``code`` inside the block, then the language before it again."""
    before = _language
    set_language(code)
    try:
        yield
    finally:
        set_language(before)


def _(message: str) -> str:
    """``message`` (an English msgid) in the active language."""
    return _active.gettext(message)


def N_(message: str) -> str:
    """Mark ``message`` for extraction only; translate it where it is shown."""
    return message


def ngettext(singular: str, plural: str, count: int) -> str:
    return _active.ngettext(singular, plural, count)


__all__ = [
    "N_",
    "LabelParts",
    "_",
    "available_languages",
    "checked_language",
    "choose_language",
    "current_language",
    "environment_language",
    "every_translation",
    "label_parts",
    "language",
    "language_name",
    "ngettext",
    "normalize_language",
    "set_language",
    "shown_label",
    "shown_step",
    "shown_steps",
    "step_named",
    "translations",
]


STEP_NAMES = {"确认需求": N_("confirm the brief"), "设定目标": N_("set goals"), "干活": N_("work")}
"""The built-in steps' keys (stable data: lineage and manifest keys, so a lineage written
in either language resumes in the other) and the English names they are shown by."""


def shown_step(name: str, gettext: Callable[[str], str] = _) -> str:
    """A step's name as shown: a built-in step in the active language (or through
    ``gettext``, a catalog's own), any other as is."""
    message = STEP_NAMES.get(name)
    return gettext(message) if message is not None else name


_LABEL = re.compile(r"^(?P<step>.*?)(?P<judge>·判定)?(?P<tail>#(?:retry|round)?\d+)?$")


class LabelParts(NamedTuple):
    """A run label taken apart: ``干活·判定#1`` is step ``干活``, a judge's, tail ``#1``."""

    step: str
    judge: bool
    tail: str  # "#retry1", "#round2", "#1" or ""


def label_parts(label: str) -> LabelParts:
    """The step, whether it is the judge's run and the tail of a manifest run label."""
    match = _LABEL.match(label)
    assert match is not None  # the pattern matches any string
    return LabelParts(match.group("step"), bool(match.group("judge")), match.group("tail") or "")


def shown_label(label: str, gettext: Callable[[str], str] = _) -> str:
    """A run label as the user reads it: ``干活·判定#1`` -> ``work·judge#1`` in English.
    Labels are data (manifest, lineage keys) and stay as written; only this changes.
    ``gettext`` is a catalog's own for a page that speaks its own language (flower ui)."""
    parts = label_parts(label)
    step = shown_step(parts.step, gettext)
    if parts.judge:
        step = gettext("{step}·judge").format(step=step)
    return step + parts.tail


def shown_steps(labels: Iterable[str]) -> str:
    """Steps or run labels as shown, in one list: ``work, set goals`` in English,
    ``干活、设定目标`` in Chinese (the list separator is the language's too)."""
    return _(", ").join(shown_label(label) for label in labels)


def step_named(name: str, keys: Iterable[str]) -> str | None:
    """The key among ``keys`` that ``name`` names, as a user types it: the key itself
    (``干活``) or its shown name in any language flower speaks (``work``); a key wins
    over another step's shown name. ``None`` when none does."""
    keys = list(keys)
    if name in keys:
        return name
    catalogs = [translations(lang).gettext for lang in available_languages()]
    for key in keys:
        if any(shown_step(key, gettext) == name for gettext in catalogs):
            return key
    return None


def every_translation(message: str) -> set[str]:
    """``message`` in every language flower speaks: to recognise, in a transcript written
    on an earlier wake, a prompt flower sent in whichever language that wake spoke."""
    return {translations(lang).gettext(message) for lang in available_languages()}


LANGUAGE_NAMES = {"en": N_("English"), "zh_CN": N_("Chinese")}
"""The languages flower speaks, by the English name they are shown by."""


def language_name(code: str) -> str:
    """``code``'s name in the active language (the code itself for one without a name)."""
    message = LANGUAGE_NAMES.get(code)
    return _(message) if message is not None else code
