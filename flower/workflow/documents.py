"""The built-in workflow's documents, the brief and the goals, and its file and step names.

Read by the clarify and goal steps and by the wake check, which cannot import the steps
(they build on :mod:`flower.workflow.base`, where the wake check lives).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import msgspec

from flower.core.config import Settings, WorkflowConfig
from flower.core.display import relative_path
from flower.core.i18n import (
    N_,
    _,
    available_languages,
    current_language,
    every_translation,
    language_name,
    translations,
)
from flower.core.labels import CLARIFY_STEP, GOALS_STEP, WORK_STEP, builtin_key

BRIEF_SECTIONS = ("背景", "要做什么", "不做什么", "怎样算完成")
"""The four sections of a complete brief, as ``## <name>`` headings (in Chinese; see
:func:`brief_headings` for the active language's, and any language's are recognised)."""
_SECTION_MESSAGES = (
    N_("Background"),
    N_("What to do"),
    N_("What not to do"),
    N_("When it is done"),
)
ADDENDUM_SECTION = "补充"
"""Where what the user says on later wakes is appended to the brief."""
_ADDENDUM_MESSAGE = N_("Added later")


def brief_headings() -> tuple[str, ...]:
    """The four section names in the language of this wake."""
    return tuple(_(name) for name in _SECTION_MESSAGES)


def _headings_of_every_language() -> list[tuple[str, ...]]:
    return [
        tuple(translations(lang).gettext(name) for name in _SECTION_MESSAGES)
        for lang in available_languages()
    ]


@dataclass(frozen=True)
class WorkflowNames:
    """``[tool.flower.workflow]``'s names for one wake: the files' as set (or ``None``),
    every step's resolved to the key this wake uses (see :func:`workflow_names`)."""

    brief_file: str | None = None
    """The brief's file name when the settings fix one; ``None``: :func:`documents` finds it."""
    goals_file: str | None = None
    """Likewise for the goals."""
    clarify_step: str = ""
    goals_step: str = ""
    work_step: str = ""


def workflow_names(settings: Settings | None = None, recorded: Iterable[str] = ()) -> WorkflowNames:
    """File and step names from ``settings.workflow``. A step name not set there is the
    key ``recorded`` (lineage's step keys) holds for the step in any language, else the
    step's name in this wake's language (:func:`flower.core.labels.builtin_key`); the
    files' names, unless set, are the language's too (see :func:`documents`)."""
    conf = settings.workflow if settings is not None else WorkflowConfig()
    recorded = list(recorded)
    return WorkflowNames(
        brief_file=conf.brief_file,
        goals_file=conf.goals_file,
        clarify_step=conf.clarify_step or builtin_key(CLARIFY_STEP, recorded),
        goals_step=conf.goals_step or builtin_key(GOALS_STEP, recorded),
        work_step=conf.work_step or builtin_key(WORK_STEP, recorded),
    )


# -- where the brief and the goals are -------------------------------------------------

BRIEF_FILE = N_("brief.md")
"""The brief's file name in English; each language's catalog names it in its own words."""
GOALS_FILE = N_("goals.md")
"""The goals' file name in English (``目标.md`` in Chinese)."""


class Documents(msgspec.Struct, frozen=True):
    """Where this wake reads and writes the brief and the goals (see :func:`documents`)."""

    brief: Path
    goals: Path
    not_used: tuple[Path, ...] = ()
    """Files there too under another language's name, left alone because the one under
    this wake's name is used."""


class DocumentLookup(msgspec.Struct, frozen=True):
    """Which file one document is and why: the lookup :func:`documents` makes, told."""

    path: Path
    how: Literal["configured", "found", "default"]
    """``configured``: the settings name it; ``found``: an existing file under a
    language's name; ``default``: none there yet, so the name in this wake's language."""
    not_used: tuple[Path, ...] = ()
    """Other languages' files beside the one found, left alone."""

    def as_json(self, workspace: str | os.PathLike[str]) -> dict[str, object]:
        """What ``flower config --json`` gives for this document: ``file``, ``how`` and
        ``not_used``, the paths relative to ``workspace`` when inside it."""
        return {
            "file": relative_path(self.path, workspace),
            "how": self.how,
            "not_used": [relative_path(p, workspace) for p in self.not_used],
        }

    def said(self, workspace: str | os.PathLike[str]) -> str:
        """Why an unset document setting means this file in ``workspace``, as ``flower
        config`` says it after ``#``, in the active language (a looked-up file)."""
        name = relative_path(self.path, workspace)
        if self.how == "default":
            return _("default: {file} ({language})").format(
                file=name, language=language_name(current_language())
            )
        if self.not_used:
            others = ", ".join(relative_path(p, workspace) for p in self.not_used)
            return _("found: {file} ({others} not used)").format(file=name, others=others)
        return _("found: {file}").format(file=name)


def document_lookups(
    workspace: str | os.PathLike[str], settings: Settings | None = None
) -> tuple[DocumentLookup, DocumentLookup]:
    """The brief's and the goals' :class:`DocumentLookup` in ``workspace``."""
    ws = Path(workspace)
    names = workflow_names(settings)
    return _lookup(ws, names.brief_file, BRIEF_FILE), _lookup(ws, names.goals_file, GOALS_FILE)


class StepLookup(msgspec.Struct, frozen=True):
    """Which lineage key one built-in step uses in a workspace, and why."""

    key: str
    how: Literal["configured", "lineage", "language"]
    """``configured``: the settings name it; ``lineage``: lineage here holds the step
    under this key (in whichever language); ``language``: the name in this wake's language."""

    def said(self) -> str:
        """Why an unset step name is this key here, as ``flower config`` says it after
        ``#``, in the active language (found in lineage, or this language's)."""
        if self.how == "lineage":
            return _("default: found in lineage")
        return _("default: {language}").format(language=language_name(current_language()))


def step_lookups(workspace: str | os.PathLike[str], settings: Settings) -> dict[str, StepLookup]:
    """``{"clarify_step" | "goals_step" | "work_step": StepLookup}`` for ``workspace``:
    the key a run there uses for each step (:func:`workflow_names` over the keys lineage
    holds, read only: a lineage store that is not there is not created)."""
    conf = settings.lineage
    recorded: dict[str, str] = {}
    if conf.backend != "json" or conf.url or (settings.run_path / "lineage.json").exists():
        from flower.stores.lineage import configured_lineage_store, load_lineage

        store = configured_lineage_store(settings, read_only=True)
        recorded = load_lineage(workspace, settings=settings, store=store).steps
    names = workflow_names(settings, recorded)
    found: dict[str, StepLookup] = {}
    for field in ("clarify_step", "goals_step", "work_step"):
        key = getattr(names, field)
        if getattr(settings.workflow, field):
            found[field] = StepLookup(key, "configured")
        else:
            found[field] = StepLookup(key, "lineage" if key in recorded else "language")
    return found


def documents(workspace: str | os.PathLike[str], settings: Settings | None = None) -> Documents:
    """The brief and the goals files of ``workspace``, the one lookup every reader uses.

    A name set in ``[tool.flower.workflow]`` (``brief_file``, ``goals_file``) is used as
    is. Otherwise an existing file under the name of any language flower speaks is the
    one (so a brief outlives a change of language), the name in this wake's language
    first when there are two; and a file not there yet gets that name (``brief.md``,
    ``goals.md`` in English, ``需求.md``, ``目标.md`` in Chinese).
    """
    brief, goals = document_lookups(workspace, settings)
    return Documents(
        brief=brief.path, goals=goals.path, not_used=(*brief.not_used, *goals.not_used)
    )


def _lookup(workspace: Path, configured: str | None, message: str) -> DocumentLookup:
    if configured:
        return DocumentLookup(workspace / configured, "configured")
    own = _(message)
    others = [translations(lang).gettext(message) for lang in available_languages()]
    candidates = [workspace / name for name in dict.fromkeys([own, *others])]
    there = [path for path in candidates if path.is_file()]
    if there:
        return DocumentLookup(there[0], "found", tuple(there[1:]))
    return DocumentLookup(candidates[0], "default")


# -- the brief -----------------------------------------------------------------------

_HEADING = re.compile(r"^##\s+(.+?)\s*#*\s*$", re.MULTILINE)


def brief_sections(text: str) -> dict[str, str]:
    """``{heading: body}`` for every ``## heading`` in ``text``."""
    sections: dict[str, str] = {}
    matches = list(_HEADING.finditer(text))
    for i, match in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
        sections.setdefault(match.group(1).strip(), text[match.end() : end].strip())
    return sections


def is_complete_brief(text: str) -> bool:
    """All four sections have text, under the headings of any one language flower speaks
    (a brief written in Chinese stays complete when the user switches to English)."""
    sections = brief_sections(text)
    return any(
        all(sections.get(name, "").strip() for name in names)
        for names in _headings_of_every_language()
    )


def extract_brief(reply: str) -> str | None:
    """The complete brief inside an agent's reply (from its first section on), or None."""
    firsts = "|".join(re.escape(names[0]) for names in _headings_of_every_language())
    first = re.search(rf"^##\s+(?:{firsts})", reply, re.MULTILINE)
    if first is None:
        return None
    text = reply[first.start() :]
    text = re.sub(r"\n```\s*$", "", text.rstrip()).rstrip()
    return text + "\n" if is_complete_brief(text) else None


_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)]|\d+、)\s+(\S.*?)\s*$")
_STAMP = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\s+")


def _items(body: str) -> list[str]:
    """The goals a section's text reads as: each list item, else each paragraph (its
    lines joined), one line each."""
    items: list[str] = []
    paragraph: list[str] = []
    for line in [*body.splitlines(), ""]:
        item = _ITEM.match(line)
        if item or not line.strip():
            if paragraph:
                items.append(" ".join(paragraph))
                paragraph = []
            if item:
                items.append(" ".join(item.group(1).split()))
        else:
            paragraph.append(" ".join(line.split()))
    return [item for item in items if item]


def goals_from_brief(text: str) -> list[str]:
    """Goals taken from a brief when no one derived any: each item (or paragraph) of
    its "What to do", then each sentence added to it on later wakes (``## Added later``),
    in any language flower speaks."""
    sections = brief_sections(text)
    what = next(
        (sections[names[1]] for names in _headings_of_every_language() if sections.get(names[1])),
        "",
    )
    added = next(
        (sections[name] for name in _addendum_names() if sections.get(name)),
        "",
    )
    later = [_STAMP.sub("", item) for item in _items(added)]
    goals = [*_items(what), *(item for item in later if item)]
    return list(dict.fromkeys(goals))


def _addendum_names() -> set[str]:
    return {ADDENDUM_SECTION} | every_translation(_ADDENDUM_MESSAGE)


def read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def brief_is_complete(path: Path) -> bool:
    """Whether the brief file is complete: then it is frozen, and the clarify step is
    skipped."""
    text = read_text(path)
    return text is not None and is_complete_brief(text)


def goals_frozen(count: int, *, rederive: bool) -> bool:
    """Whether a goals file listing ``count`` goals is frozen (the goals step skipped):
    it lists goals, and nothing said since leaves them to derive again (``rederive``)."""
    return count > 0 and not rederive


def write_atomic(path: Path, text: str) -> None:
    """Replace the brief or the goals. A document the user reads and edits too, so not
    owner-only: a new one is ``0644`` (``0600`` under a umask of ``077``), and a rewrite
    keeps the file's own mode; never writable by group or others, whatever the umask."""
    from flower.core.fileperms import DOCUMENT_MODE, document_mode, replaced_atomically

    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        kept: int | None = document_mode(path.stat().st_mode)
    except FileNotFoundError:
        kept = None
    with replaced_atomically(path, durable=False, mode=DOCUMENT_MODE) as out:
        if kept is not None:
            os.fchmod(out.fileno(), kept)  # exactly its mode, not narrowed by the umask
        out.write(text.encode("utf-8"))


def append_to_brief(path: Path, said: str, when: str) -> None:
    """Append what the user said on a wake under ``## 补充`` (created once)."""
    text = read_text(path) or ""
    known = _addendum_names()
    if not any(f"## {name}" in text for name in known):
        text = text.rstrip() + f"\n\n## {_(_ADDENDUM_MESSAGE)}\n"
    text = text.rstrip() + f"\n\n- {when}: {said.strip()}\n"
    write_atomic(path, text)


# -- the goals -----------------------------------------------------------------------

_GOAL = re.compile(r"^\s*(\d+)(?:[.)]\s+|、\s*)(\S.*?)\s*$")


def parse_goals(text: str) -> list[str]:
    """The numbered goals (``1. ...``) in ``text``, in order."""
    return [m.group(2) for m in map(_GOAL.match, text.splitlines()) if m]


def read_goals(path: Path) -> list[str] | None:
    """The goals in ``path``; ``None`` when missing, ``[]`` when it lists none."""
    text = read_text(path)
    return None if text is None else parse_goals(text)


def render_goals(goals: list[str]) -> str:
    """The goals file: a title in the wake's language, then the numbered goals."""
    title = _(_GOALS_TITLE)
    return f"# {title}\n\n" + "".join(f"{i}. {goal}\n" for i, goal in enumerate(goals, 1))


_GOALS_TITLE = N_("Goals")


class MalformedGoalsWarning(UserWarning):
    """The goals file lists no numbered goal; it is re-derived."""
