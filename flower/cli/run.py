"""The everyday commands: ``flower "..."`` (``run``), ``once``, ``status`` and ``demo``.

``flower "do this"`` runs the built-in workflow in the working directory: confirm the
brief, set the goals, work under the goal judge, with trim and relay on. In a used
directory what you say is the next sentence of the same conversation; ``flower``
alone carries on (on a terminal it shows the wake prompt first); ``--new`` archives
and starts over. See docs/everyday.md.

Imported when one of these commands runs (see flower.cli.main), and it still imports
nothing heavy at module level: the engine, the stores and rich load inside the command
that needs them.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TextIO, cast

import typer

from flower.cli.context import RunDirOption, get_settings, get_state
from flower.cli.lazy import command_help
from flower.core.errors import NothingToDoError
from flower.core.i18n import N_, _
from flower.core.run_lock import RunDirError, require_run_dirs, require_writable
from flower.runtime.credentials import require_api_key
from flower.runtime.stopping import (
    INTERRUPTED_EXIT,
    interrupted_exit,
    reading_answer,
    run_stoppable,
)
from flower.workflow.run_wake import LogGoals, LogWake

if TYPE_CHECKING:
    from flower.core.config import Settings
    from flower.core.rewind import RewindPlan
    from flower.workflow.clarify import Ask, GoalsOffer, RequestAsBrief
    from flower.workflow.context import WorkflowContext
    from flower.workflow.live import Live
    from flower.workflow.wake import WakeChoice


def _say_interrupted(live: Live, what: str) -> None:
    with contextlib.suppress(OSError):  # after SIGHUP the terminal may be gone
        live.line("")
        live.line(_("interrupted: {what}").format(what=what), "yellow")


# -- options shared by run and once ----------------------------------------------------

ModelOption = Annotated[
    str | None, typer.Option("--model", metavar="MODEL", help=N_("Model id for every agent."))
]
JsonOption = Annotated[
    bool,
    typer.Option(
        "--json", help=N_("Print the final StepResults as JSON on stdout (and nothing else).")
    ),
]
PromptArgument = Annotated[
    list[str] | None,
    typer.Argument(metavar="TEXT", help=N_("What to do, or what to add (quote it).")),
]


def _joined(words: list[str] | None) -> str | None:
    from flower.cli.wake import typed_text

    text = typed_text(" ".join(words or [])).strip()
    return text or None


def _settings(ctx: typer.Context, run_dir: str | None, model: str | None) -> Settings:
    import msgspec

    if run_dir:
        get_state(ctx).run_dir = run_dir
    from flower.stores.resolve import check_configured_plugins

    settings = get_settings(ctx)
    # a typo in a store's table must stop a run or a status, not quietly change what they use
    check_configured_plugins(settings)
    if model:
        engine = msgspec.structs.replace(settings.engine, model=model)
        settings = msgspec.structs.replace(settings, engine=engine)
    return settings


def _preflight(settings: Settings) -> None:
    """Everything that must hold before a single byte is written."""
    require_api_key()
    require_run_dirs(Path.cwd(), settings.run_path)


def _print_json(value: object) -> None:
    from flower.cli.output import print_json

    print_json(value)


# -- run ------------------------------------------------------------------------------


@command_help(
    N_(
        'Run the built-in workflow here (what `flower "..."` does).\n'
        "\n"
        "In a used directory the text is the next sentence of the same conversation;\n"
        "no text carries on (on a terminal, the wake prompt asks first)."
    )
)
def run(
    ctx: typer.Context,
    prompt: PromptArgument = None,
    new: Annotated[
        bool, typer.Option("--new", help=N_("Archive the last conversation and start over."))
    ] = False,
    no_trim: Annotated[
        bool, typer.Option("--no-trim", help=N_("Keep large old tool results in the context."))
    ] = False,
    rounds: Annotated[
        int | None,
        typer.Option("--rounds", min=1, metavar="N", help=N_("Work rounds this wake (default 3).")),
    ] = None,
    run_dir: RunDirOption = None,
    model: ModelOption = None,
    yes: Annotated[
        bool,
        typer.Option("--yes", "-y", help=N_("Ask nothing: no brief questions, no wake prompt.")),
    ] = False,
    json_out: JsonOption = False,
) -> None:
    settings = _settings(ctx, run_dir, model)
    code = _run_builtin(
        settings,
        _joined(prompt),
        preflight=lambda: _preflight(settings),
        new=new,
        trim=not no_trim,
        rounds=rounds,
        interactive=sys.stdin.isatty() and not yes,
        json_out=json_out,
    )
    raise typer.Exit(code)


def _run_builtin(
    settings: Settings,
    said: str | None,
    *,
    preflight: Callable[[], None],
    new: bool,
    trim: bool,
    rounds: int | None,
    interactive: bool,
    json_out: bool,
) -> int:
    from flower.cli.output import OutputMayClose
    from flower.cli.wake import read_line
    from flower.fleet import shared_gate
    from flower.workflow.documents import workflow_names
    from flower.workflow.live import Live
    from flower.workflow.outcome import (
        closing_session,
        goals_said,
        outcome_json,
        run_code,
        transcript_hint,
    )
    from flower.workflow.run_wake import WakeAnswers, run_builtin_wake

    out: TextIO = sys.stderr if json_out else sys.stdout
    workspace = Path.cwd().resolve()
    live = Live(
        cast(TextIO, OutputMayClose(out)),
        rounds=rounds or settings.workflow.rounds,
        work_step=workflow_names(settings).work_step,
    )

    def read() -> str:
        return read_line("> ", out)

    reader = read if interactive else None

    def answers(settings: Settings) -> WakeAnswers:
        return WakeAnswers(
            ask=_asker(read, out) if interactive else None,
            request_as_brief=_request_as_brief(live, settings, reader, out),
            goals_fallback=TerminalGoals(live, reader, out),
        )

    def drive(main: Coroutine[Any, Any, WorkflowContext]) -> WorkflowContext:
        try:
            return run_stoppable(main)
        except KeyboardInterrupt as exc:
            _say_interrupted(live, _("lineage and transcript are saved; `flower` here carries on"))
            raise _Interrupted(interrupted_exit(exc)) from None

    def hint(settings: Settings, ctx: WorkflowContext) -> str:
        return transcript_hint(settings, closing_session(ctx, live.work_step))

    # what a wake does, and in which order, is decided in flower.workflow.wake; the lock it
    # takes is held until the run ends
    with contextlib.ExitStack() as held:
        try:
            done = run_builtin_wake(
                settings,
                workspace,
                said,
                live=live,
                io=TerminalWake(settings, workspace, live, read, out, preflight),
                held=held,
                answers=answers,
                drive=drive,
                hint=hint,
                new=new,
                interactive=interactive,
                trim=trim,
                rounds=rounds,
                gate=shared_gate(settings),
            )
        except KeyboardInterrupt:  # Ctrl-C at a prompt leaves, as the conventional 130
            out.write("\n")
            return INTERRUPTED_EXIT
        except _Interrupted as stopped:
            return stopped.code
    if done is None:
        return 0
    closing = goals_said(done.ctx)
    if closing is not None:
        live.line(closing, "yellow")
    if json_out:
        _print_json(outcome_json(done.ctx))
    return run_code(done.ctx)


class _Interrupted(Exception):
    """Ctrl-C stopped the workflow (said already): the run exits with ``code``."""

    def __init__(self, code: int) -> None:
        self.code = code


class TerminalWake(LogWake):
    """The :class:`~flower.workflow.wake.WakeIO` of ``flower``: asks on the terminal
    (``read``), prints on ``live``."""

    def __init__(
        self,
        settings: Settings,
        workspace: Path,
        live: Live,
        read: Callable[[], str],
        out: TextIO,
        preflight: Callable[[], None],
    ) -> None:
        super().__init__(settings, workspace, live, preflight)
        self.read = read
        self.out = out

    def ask_new_task(self) -> str | None:
        from flower.cli.wake import ask_new_task

        return ask_new_task(self.read, self.out)

    def ask_wake(self) -> WakeChoice:
        from flower.cli.wake import wake_prompt

        return wake_prompt(self.read, self.out)

    def rewind_finished(self, plan: RewindPlan) -> None:
        from flower.cli.rewind import say_rewind_finished

        say_rewind_finished(plan)


def _asker(read: Callable[[], str], out: TextIO) -> Ask:
    """The clarify step's ``ask``: the questions were streamed already; read the answer."""

    def ask(questions: str) -> str | None:
        from flower.cli.banner import answer_hint

        out.write("\n" + answer_hint() + "\n")
        with reading_answer():
            try:
                return read()
            except EOFError:
                return None

    return ask


_YES = ("", "y", "yes", "是", "好")


def _request_as_brief(
    live: Live, settings: Settings, read: Callable[[], str] | None, out: TextIO
) -> RequestAsBrief:
    """The clarify step's ``request_as_brief``: with no one to ask (``--yes``, no
    terminal) the request itself becomes the brief and one line says so; on a terminal
    the user is asked once (Enter or y: go on)."""
    from flower.workflow.run_wake import log_request_as_brief

    go_on = log_request_as_brief(live, settings, Path.cwd().resolve())

    def decide(request: str) -> bool:
        from flower.cli.banner import request_as_brief_question

        if read is not None:
            out.write("\n" + request_as_brief_question() + "\n")
            out.flush()
            with reading_answer():
                try:
                    answer = read().strip().lower()
                except EOFError:
                    answer = "n"
            if answer not in _YES:
                return False
        return go_on(request)

    return decide


class TerminalGoals(LogGoals):
    """The goals step's :class:`~flower.workflow.clarify.GoalsFallback`: with no one to
    ask (``--yes``, no terminal) the goals offered are used and one line says so; on a
    terminal the user is asked once (type the goals, or Enter to use those)."""

    def __init__(self, live: Live, read: Callable[[], str] | None, out: TextIO) -> None:
        super().__init__(live)
        self.read = read
        self.out = out

    def choose(self, offer: GoalsOffer) -> list[str] | None:
        return self.chosen(offer, self._ask(offer) if self.read is not None else [])

    def _ask(self, offer: GoalsOffer) -> list[str]:
        from flower.cli.banner import goals_question
        from flower.workflow.documents import parse_goals

        assert self.read is not None
        self.out.write("\n" + goals_question(offer.goals_file, offer.goals) + "\n")
        self.out.flush()
        typed: list[str] = []
        with reading_answer():
            try:
                while line := self.read().strip():
                    typed.append((parse_goals(line) or [line])[0])
            except EOFError:
                pass  # no more lines: what was typed (or, with none, the offer) is used
        return typed


# -- once -----------------------------------------------------------------------------


@command_help(
    N_(
        "One agent, no workflow, no lineage.\n"
        "\n"
        "Prints its session id; continue it by hand with --resume."
    )
)
def once(
    ctx: typer.Context,
    prompt: PromptArgument = None,
    resume: Annotated[
        str | None,
        typer.Option(
            "--resume",
            metavar="SESSION_ID",
            help=N_("Continue that session by hand (a unique prefix of its id will do)."),
        ),
    ] = None,
    project: Annotated[
        str | None,
        typer.Option(
            "--project",
            metavar="KEY",
            help=N_("With --resume: the project key holding the session."),
        ),
    ] = None,
    run_dir: RunDirOption = None,
    model: ModelOption = None,
    no_trim: Annotated[bool, typer.Option("--no-trim", help=N_("Do not trim on resume."))] = False,
    json_out: JsonOption = False,
) -> None:
    said = _joined(prompt)
    if said is None:
        raise NothingToDoError(_('flower once needs something to say: flower once "what to do"'))
    if project is not None and resume is None:
        from flower.cli.session_ids import UsageFlowerError

        raise UsageFlowerError(_("--project names the project of --resume's session: add --resume"))
    settings = _settings(ctx, run_dir, model)
    _preflight(settings)
    raise typer.Exit(
        _run_once(settings, said, resume, project, trim=not no_trim, json_out=json_out)
    )


def _run_once(
    settings: Settings,
    said: str,
    resume: str | None,
    project: str | None,
    *,
    trim: bool,
    json_out: bool,
) -> int:
    from flower.cli.output import OutputMayClose
    from flower.fleet import shared_gate
    from flower.workflow.live import Live
    from flower.workflow.run_wake import run_once

    out: TextIO = sys.stderr if json_out else sys.stdout
    live = Live(cast(TextIO, OutputMayClose(out)), rounds=1, work_step="once")
    live.woke = None  # `once` is one run by hand, not a wake
    gate = shared_gate(settings)
    try:
        result = run_once(
            settings,
            said,
            live=live,
            drive=run_stoppable,
            resume=resume,
            project=project,
            trim=trim,
            gate=gate,
        )
    except KeyboardInterrupt as exc:
        _say_interrupted(live, _("the transcript is saved"))
        return interrupted_exit(exc)
    if json_out:
        from flower.core.manifest import result_line

        _print_json({"ok": result.ok, "results": [result_line(result)]})
    return 0 if result.ok else 1


# -- status ---------------------------------------------------------------------------


@command_help(
    N_(
        "What the next `flower` here would resume.\n"
        "\n"
        "Starts nothing and needs no API key. Exits 0 when a bare `flower` here would "
        "wake,\n"
        "1 when there is nothing to carry on, 3 when `flower` would stop (the session "
        "store\n"
        "cannot be read)."
    )
)
def status(
    ctx: typer.Context,
    run_dir: RunDirOption = None,
    json_out: Annotated[bool, typer.Option("--json", help=N_("wake_state as JSON."))] = False,
) -> None:
    from flower.workflow.plan import wake_state
    from flower.workflow.status import describe_state, status_code

    settings = _settings(ctx, run_dir, None)
    workspace = Path.cwd().resolve()
    state = wake_state(workspace, settings.run_dir, settings=settings, read_only=True)
    if json_out:
        _print_json(state)
    else:
        for line in describe_state(state, workspace, settings):
            typer.echo(line)
    raise typer.Exit(status_code(state, settings))


# -- demo -----------------------------------------------------------------------------


@command_help(
    N_(
        "See it work offline, no API key needed.\n"
        "\n"
        "A first run is killed midway; a second run in the same directory resumes it."
    )
)
def demo(
    keep: Annotated[
        bool, typer.Option("--keep", help=N_("Keep the demo directory instead of removing it."))
    ] = False,
) -> None:
    from flower.cli.output import OutputMayClose
    from flower.core.i18n import choose_language, set_language
    from flower.demo.play import run_demo

    set_language(choose_language(None, None, os.environ)[0])
    raise typer.Exit(run_demo(keep=keep, out=cast(TextIO, OutputMayClose(sys.stdout))))


__all__ = [
    "NothingToDoError",
    "RunDirError",
    "require_api_key",
    "require_writable",
]
