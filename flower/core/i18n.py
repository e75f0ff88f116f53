"""Messages in the user's language: stdlib gettext over the catalogs in flower/locale.

English is the source language (the msgids); ``zh_CN`` carries the seed page's
strings byte for byte. One language is active per process: the CLI picks it once
from the settings and the environment, see :func:`choose_language`. A fleet wake, one
of several in a worker's process, speaks its own workspace's language inside
:func:`speaking` (a context variable: its threads and event loop, not the process).
"""

from __future__ import annotations

import gettext
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

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
_SPEAKING: ContextVar[tuple[str, gettext.NullTranslations] | None] = ContextVar(
    "flower_language", default=None
)
"""The language of the wake this context runs (:func:`speaking`), else None: the process's."""


def set_language(language: str) -> None:
    """Make ``language`` the one every message of this process is shown in (a wake
    inside :func:`speaking` keeps its own)."""
    global _language, _active
    _active = translations(language)
    _language = language


def current_language() -> str:
    """The language messages are shown in here: this wake's, else the process's."""
    speaking_now = _SPEAKING.get()
    return speaking_now[0] if speaking_now is not None else _language


def _translations() -> gettext.NullTranslations:
    speaking_now = _SPEAKING.get()
    return speaking_now[1] if speaking_now is not None else _active


@contextmanager
def language(code: str) -> Iterator[None]:
    """Speak ``code`` inside the block, then the language before it again (the
    process's language: for a command or a test, not for one of several wakes)."""
    before = _language
    set_language(code)
    try:
        yield
    finally:
        set_language(before)


@contextmanager
def speaking(code: str) -> Iterator[None]:
    """Speak ``code`` in this context only (this thread, and the event loops and
    threads started from it, which copy it) inside the block: a fleet wake's language,
    its workspace's, while other wakes of the same process speak theirs."""
    token = _SPEAKING.set((code, translations(code)))
    try:
        yield
    finally:
        _SPEAKING.reset(token)


def _(message: str) -> str:
    """``message`` (an English msgid) in the active language."""
    return _translations().gettext(message)


def N_(message: str) -> str:
    """Mark ``message`` for extraction only; translate it where it is shown."""
    return message


def ngettext(singular: str, plural: str, count: int) -> str:
    return _translations().ngettext(singular, plural, count)


__all__ = [
    "N_",
    "_",
    "available_languages",
    "checked_language",
    "choose_language",
    "current_language",
    "environment_language",
    "every_translation",
    "language",
    "language_name",
    "ngettext",
    "normalize_language",
    "set_language",
    "speaking",
    "translations",
]


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
