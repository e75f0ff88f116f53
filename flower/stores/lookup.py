"""The one way a session id a person typed becomes a store key.

An id is found across every project of the store; a unique prefix of at least
:data:`MIN_PREFIX` characters stands for the whole id (as git takes ``71a21bd9``); an
ambiguous prefix is :class:`AmbiguousSessionError` listing its candidates (exit 2).
Every command that takes a session id finds it here, and so can Python::

    from flower import open_session_store
    from flower.stores.lookup import find_session_key

    with open_session_store() as store:
        found = find_session_key(store, "71a21bd9", "my store")
        print(found.key, found.other_projects)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from flower.core.display import utc_time
from flower.core.errors import UnknownSessionError, UsageError
from flower.core.i18n import _
from flower.core.protocols import SessionStoreBase
from flower.core.records import SessionKey, check_name

MIN_PREFIX = 4
"""The shortest prefix that stands for a whole session id (git's minimum too)."""
SHOWN_CANDIDATES = 20
"""How many candidates an ambiguity error lists."""


class AmbiguousSessionError(UsageError):
    """A prefix that starts the ids of several sessions."""


@dataclass(frozen=True)
class FoundSession:
    """What :func:`find_session_key` found."""

    key: SessionKey
    """The main key, in the project the session was written in last."""
    other_projects: list[str]
    """The other projects holding the same id, newest first."""


def find_session_key(
    store: SessionStoreBase,
    session_id: str,
    where: str,
    project: str | None = None,
) -> FoundSession:
    """The main key of ``session_id`` (or of the one session whose id it starts) in
    ``project``, else in any project of ``store`` (the newest, with the others named).
    ``where`` names the store in the errors (its redacted URL, say)."""
    keys = session_keys(store, session_id, where, project)
    if len(keys) == 1:
        return FoundSession(keys[0], [])
    found, others = newest(store, keys)
    return FoundSession(found, others)


def session_keys(
    store: SessionStoreBase, session_id: str, where: str, project: str | None = None
) -> list[SessionKey]:
    """Every main key of the one session ``session_id`` names (one per project holding
    it; only ``project``'s when given). No such session is :class:`UnknownSessionError`;
    a prefix of several is :class:`AmbiguousSessionError`."""
    if not session_id.strip() or not session_id.isprintable():
        raise UsageError(
            _("session id {id}: give a session's id, one line ({command})").format(
                id=repr(session_id), command="flower sessions list"
            )
        )
    check_name("session id", session_id)
    if project is not None:
        if not project.strip() or not project.isprintable():
            raise UsageError(
                _("{option} {value}: give a project key, one line").format(
                    option="--project", value=repr(project)
                )
            )
        key = SessionKey(check_name("project key", project), session_id)
        if store.exists(key):
            return [key]
        keys = _by_prefix(store, session_id, where, [project])
        if not keys:
            raise UnknownSessionError(
                _("no session {session} in project {project} of {store}").format(
                    session=session_id, project=project, store=where
                )
            )
        return keys
    exact = _exact(store, session_id)
    if exact:
        return exact
    keys = _by_prefix(store, session_id, where, None)
    if not keys:
        raise UnknownSessionError(
            _("no session {session} in {store}").format(session=session_id, store=where)
        )
    return keys


def _exact(store: SessionStoreBase, session_id: str) -> list[SessionKey]:
    """The keys of ``session_id`` itself, in every project that has it."""
    from flower.core.keys import project_key

    try:
        found = store.find_session(session_id)
    except NotImplementedError:
        # A store that cannot list its projects: look in this workspace's project.
        candidate = SessionKey(project_key(Path.cwd()), session_id)
        return [candidate] if store.exists(candidate) else []
    if found is None:
        return []
    return [found, *(SessionKey(p, session_id) for p in _other_projects(store, found))]


def _by_prefix(
    store: SessionStoreBase, prefix: str, where: str, projects: list[str] | None
) -> list[SessionKey]:
    """The keys of the one session whose id starts with ``prefix``; none when no id
    does (or the prefix is too short); several ids are an ambiguity error."""
    from flower.core.keys import project_key

    if len(prefix) < MIN_PREFIX:
        return []
    if projects is None:
        try:
            projects = store.list_projects()
        except NotImplementedError:
            projects = [project_key(Path.cwd())]
    matches: dict[str, list[tuple[str, int]]] = {}
    for project in projects:
        try:
            infos = store.list_sessions(project)
        except NotImplementedError:
            return []
        for info in infos:
            if info.session_id.startswith(prefix):
                matches.setdefault(info.session_id, []).append((project, info.mtime_ms))
    if len(matches) > 1:
        raise AmbiguousSessionError(_ambiguity(prefix, where, matches))
    return [SessionKey(p, sid) for sid, found in matches.items() for p, _ in found]


def _ambiguity(prefix: str, where: str, matches: dict[str, list[tuple[str, int]]]) -> str:
    """The error: one line per candidate id, newest first, with every project it is in
    (newest first too), so the lines count the ids the first line counts."""
    candidates = sorted(
        (sorted(found, key=lambda place: place[1], reverse=True), sid)
        for sid, found in matches.items()
    )
    candidates.sort(key=lambda candidate: candidate[0][0][1], reverse=True)
    lines = [
        _(
            "session id prefix {prefix} is ambiguous in {store}: it starts {count} session "
            "ids; give more of the id. The candidates, newest first:"
        ).format(prefix=prefix, store=where, count=len(matches))
    ]
    for places, sid in candidates[:SHOWN_CANDIDATES]:
        stamp = utc_time(places[0][1])
        projects = _(", ").join(project for project, _mtime in places)
        lines.append(f"  {sid}  {stamp}  {projects}")
    if len(candidates) > SHOWN_CANDIDATES:
        more = _("  ... and {count} more ({command})")
        lines.append(
            more.format(count=len(candidates) - SHOWN_CANDIDATES, command="flower sessions list")
        )
    return "\n".join(lines)


def newest(store: SessionStoreBase, keys: list[SessionKey]) -> tuple[SessionKey, list[str]]:
    """Of one session's keys, the one in the project where it was written last, and the
    other projects."""

    def written(key: SessionKey) -> int:
        infos = store.list_sessions(key.project_key)
        return next((i.mtime_ms for i in infos if i.session_id == key.session_id), 0)

    ranked = sorted(keys, key=written, reverse=True)
    return ranked[0], [key.project_key for key in ranked[1:]]


def _other_projects(store: SessionStoreBase, found: SessionKey) -> list[str]:
    try:
        projects = store.list_projects()
    except NotImplementedError:
        return []
    return [
        project
        for project in projects
        if project != found.project_key and store.exists(SessionKey(project, found.session_id))
    ]


def resume_key(
    store: SessionStoreBase, session_id: str, where: str, project: str | None, workspace: Path
) -> SessionKey:
    """The session ``flower once --resume ID`` continues: in ``project`` when given,
    else in ``workspace``'s project. One found only in another project is an error
    that names the ``--project`` resuming it here, never resumed unasked."""
    from flower.core.keys import project_key

    if project is not None:
        return find_session_key(store, session_id, where, project).key
    here = project_key(workspace)
    try:
        return find_session_key(store, session_id, where, here).key
    except UnknownSessionError:
        pass
    try:
        elsewhere = session_keys(store, session_id, where)
    except UnknownSessionError:
        elsewhere = []
    if not elsewhere:
        raise UnknownSessionError(
            _(
                "no session {id} for {workspace} in {store}; {command} shows the ones there are"
            ).format(
                id=repr(session_id),
                workspace=workspace,
                store=where,
                command="`flower sessions list`",
            )
        )
    found, _others = newest(store, elsewhere)
    raise UnknownSessionError(
        _(
            "no session {id} for {workspace} in {store}: it is in project {project}; "
            "{command} continues it here"
        ).format(
            id=repr(session_id),
            workspace=workspace,
            store=where,
            project=found.project_key,
            command=f"`flower once --resume {found.session_id} --project {found.project_key} ...`",
        )
    )


__all__ = [
    "MIN_PREFIX",
    "AmbiguousSessionError",
    "FoundSession",
    "find_session_key",
    "newest",
    "resume_key",
    "session_keys",
]
