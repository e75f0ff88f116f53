"""How every command turns a session id the user typed into a store key.

The lookup is :mod:`flower.stores.lookup` (a unique prefix of at least
:data:`~flower.stores.lookup.MIN_PREFIX` characters stands for the whole id; an
ambiguous prefix lists its candidates, exit 2); this module adds what the command line
says about it: ``--project KEY``, and the note when the id is in several projects.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from flower.core.errors import UsageError
from flower.core.i18n import N_, _

if TYPE_CHECKING:
    from flower.core.protocols import SessionStoreBase
    from flower.core.records import SessionKey

ProjectOption = Annotated[
    str | None,
    typer.Option(
        "--project", metavar="KEY", help=N_("The session's project key, when its id is in several.")
    ),
]
"""``--project KEY`` of every command that takes a session id."""


class UsageFlowerError(UsageError):
    """Options that do not go together (exit code 2, like any usage error)."""


def find_key(
    store: SessionStoreBase,
    session_id: str,
    where: str,
    project: str | None = None,
    *,
    only_one: bool = False,
) -> SessionKey:
    """The main key of ``session_id`` (or of the one session whose id it starts) in
    ``project``, else in any project of ``store`` (the newest). The same id in several
    projects is said on stderr; with ``only_one`` (a command that deletes) it is an
    error asking for ``--project``."""
    from flower.stores.lookup import find_session_key

    found = find_session_key(store, session_id, where, project)
    if not found.other_projects:
        return found.key
    key, others = found.key, found.other_projects
    if only_one:
        raise UsageFlowerError(
            _(
                "session {session} is in {count} projects of {store} ({projects}): "
                "pick one with {option}"
            ).format(
                session=key.session_id,
                count=len(others) + 1,
                store=where,
                projects=", ".join([key.project_key, *others]),
                option="--project",
            )
        )
    note = _(
        "flower: note: session {session} is also in project {others}; this is the newest, "
        "in {project} ({option} picks another)"
    )
    typer.echo(
        note.format(
            session=key.session_id,
            others=", ".join(others),
            project=key.project_key,
            option="--project",
        ),
        err=True,
    )
    return key
