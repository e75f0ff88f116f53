"""``flower doctor``: is everything a run needs in place? One line per check, ok or fail.

The checks are :mod:`flower.runtime.doctor`'s; this module prints them. Exits 1 when
any check fails.
"""

from __future__ import annotations

import contextlib
from dataclasses import asdict
from typing import TYPE_CHECKING, Annotated

import typer

from flower.cli.lazy import command_help
from flower.core.errors import FlowerError
from flower.core.i18n import N_, _, language

if TYPE_CHECKING:
    from flower.core.config import LoadedSettings


@command_help(
    N_(
        "Check configuration, session store, pruning chain, API endpoint and API key; "
        "exit 1 if\n"
        "any fails."
    )
)
def doctor(
    ctx: typer.Context,
    json: Annotated[bool, typer.Option("--json", help=N_("Machine-readable output."))] = False,
) -> None:
    from flower.cli.context import get_loaded_settings
    from flower.cli.output import print_json
    from flower.core.display import pad, shown_width
    from flower.runtime.doctor import CHECK_NAMES, run_checks

    def load() -> LoadedSettings:
        return get_loaded_settings(ctx)

    if json:
        # read first, as reading the settings sets the language they choose; an error in
        # them is the config check's to say
        with contextlib.suppress(FlowerError):
            load()
        with language("en"):  # --json's values are data: the same words in every language
            checks = run_checks(load)
    else:
        checks = run_checks(load)
    failed = [c for c in checks if not c.ok]
    if json:
        print_json({"ok": not failed, "checks": [asdict(c) for c in checks]})
    else:
        names = {c.name: _(CHECK_NAMES.get(c.name, c.name)) for c in checks}
        marks = {True: _("ok"), False: _("fail")}
        width = max(shown_width(name) for name in names.values())
        mark_width = max(shown_width(mark) for mark in marks.values())
        for check in checks:
            name, mark = names[check.name], marks[check.ok]
            typer.echo(f"{pad(mark, mark_width)}  {pad(name, width)}  {check.detail}")
        if failed:
            typer.echo(
                _("{failed} of {total} checks failed").format(failed=len(failed), total=len(checks))
            )
        else:
            typer.echo(_("all checks ok"))
    if failed:
        raise typer.Exit(1)
