"""The main ``flower`` group: free-text routing, plugin commands, error reporting.

typer >= 0.26 bundles its own click, so click plugins such as click-default-group do
not plug in; this ``TyperGroup`` subclass does three things itself:

- **Routing.** ``flower "do this"`` goes to the ``run`` command, while a mistyped
  subcommand (``flower sesions``) is a usage error with a suggestion, never a prompt.
  Everything after a bare ``--`` is always a prompt (``flower -- sessions``).
- **Lazy built-ins.** The commands of :attr:`FlowerGroup.lazy_commands` are built
  only when one is invoked or help is asked (see :mod:`flower.cli.lazy`).
- **Plugin commands.** The ``register_commands(app)`` hook runs only when a command
  name is not a built-in or when commands are listed (``--help``), so everyday
  commands do not pay for loading every plugin. A plugin whose hook raises is a
  warning (fatal under ``FLOWER_STRICT_PLUGINS=1``) and the CLI keeps working.
- **Errors.** A :class:`~flower.core.errors.FlowerError` becomes one line on stderr
  and its ``exit_code``; ``FLOWER_DEBUG=1`` adds the traceback.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Sequence
from difflib import get_close_matches
from typing import Any, Protocol

import typer
from typer.core import TyperGroup

from flower.cli.errors import report_error
from flower.cli.lazy import LazyCommand, translate_help
from flower.core.errors import FlowerError
from flower.core.i18n import _

ClickContext = Any
"""click's ``Context``, which the overridden methods receive: typer's own copy of click
(typer >= 0.26) or click itself (older typer), so it has no one public name to use."""

RUN_COMMAND = "run"
_COMMAND_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_-]*\Z")


def _as_prompt(args: Sequence[str], index: int) -> str:
    """The command line that sends ``args[index:]`` to ``run`` as the prompt, as typed."""
    import shlex

    return shlex.join(["flower", *args[:index], "--", *args[index:]])


class CommandParameter(Protocol):
    """What routing reads of a click parameter (typer's own or click's, by version)."""

    param_type_name: str
    opts: list[str]
    secondary_opts: list[str]


def strict_plugins() -> bool:
    return os.environ.get("FLOWER_STRICT_PLUGINS") == "1"


class FlowerGroup(TyperGroup):
    """The root group; see the module docstring."""

    lazy_commands: tuple[LazyCommand, ...] = ()
    """Built-in commands loaded on first use, in the order ``--help`` lists them (a
    command registered on the app itself under the same name takes their place)."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self.lazy: dict[str, LazyCommand] = {
            c.name: c for c in self.lazy_commands if c.name not in self.commands
        }
        """Name -> the built-in command not loaded yet."""
        self.plugin_commands: dict[str, str] = {}
        """Command name -> plugin that registered it."""
        self._plugins_loaded = False

    def has_command(self, name: str) -> bool:
        """Whether ``name`` is a command, loaded or not (plugins' only once loaded)."""
        return name in self.commands or name in self.lazy

    # -- plugin commands -------------------------------------------------------

    def load_plugin_commands(self) -> None:
        """Call every plugin's ``register_commands`` once; isolate the broken ones."""
        if self._plugins_loaded:
            return
        self._plugins_loaded = True
        from flower.core.plugins import get_registry, report_problem

        registry = get_registry()
        for impl in registry.pm.hook.register_commands.get_hookimpls():
            plugin = registry.pm.get_name(impl.plugin) or repr(impl.plugin)
            plugin_app = typer.Typer(rich_markup_mode=None, add_completion=False)
            try:
                impl.function(app=plugin_app)
                added = _commands_of(plugin_app)
            except (FlowerError, KeyboardInterrupt):
                raise
            except BaseException as exc:  # sys.exit() too: one broken plugin must not stop the CLI
                report_problem(
                    registry.plugins,
                    plugin,
                    _("register_commands failed: {error}").format(error=repr(exc)),
                )
                continue
            for name, command in added.items():
                if self.has_command(name):
                    owner = self.plugin_commands.get(name, "flower")
                    report_problem(
                        registry.plugins,
                        plugin,
                        _("its command {name} is ignored: {owner} already provides one").format(
                            name=repr(name), owner=repr(owner)
                        ),
                        skipped=False,
                    )
                    continue
                self.commands[name] = translate_help(command)
                self.plugin_commands[name] = plugin

    def get_command(self, ctx: ClickContext, cmd_name: str) -> Any:
        lazy = self.lazy.pop(cmd_name, None)
        if lazy is not None:
            self.commands[cmd_name] = lazy.load()
        command = self.commands.get(cmd_name)
        if command is None and not self._plugins_loaded:
            self.load_plugin_commands()
            command = self.commands.get(cmd_name)
        return command

    def list_commands(self, ctx: ClickContext) -> list[str]:
        self.load_plugin_commands()
        builtin = [c.name for c in self.lazy_commands]
        return [*builtin, *(name for name in super().list_commands(ctx) if name not in builtin)]

    # -- routing ---------------------------------------------------------------

    def _first_positional(self, ctx: typer.Context, args: Sequence[str]) -> int | None:
        """Index of the first argument that is not one of the group's own options.

        An option the group does not know is where ``run``'s own arguments begin
        (``flower --new "something else"``).
        """
        return _first_positional(self.get_params(ctx), args)

    def _command_after_run_options(
        self, ctx: typer.Context, args: list[str], index: int
    ) -> str | None:
        """The subcommand name that follows ``run``'s options at ``index``, if any:
        ``flower --no-trim sessions list`` reads as a subcommand with a misplaced
        option, never as the prompt "sessions list"."""
        if not self.has_command(RUN_COMMAND):
            return None
        run = self.get_command(ctx, RUN_COMMAND)
        at = _first_positional(run.get_params(ctx), args[index:])
        if at is None:
            return None
        word = args[index + at]
        if word == "--" or not _COMMAND_WORD.match(word):
            return None
        if not self.has_command(word):
            self.load_plugin_commands()
        return word if self.has_command(word) and word != RUN_COMMAND else None

    def _route(self, ctx: typer.Context, args: list[str]) -> list[str]:
        has_run = self.has_command(RUN_COMMAND)
        index = self._first_positional(ctx, args)
        if index is None:
            if args and _takes_value(self.get_params(ctx), args[-1]):
                return args  # `flower -r`: click says the option needs a value
            return [*args, RUN_COMMAND] if has_run else args
        token = args[index]
        if token == "--":
            if not has_run:
                ctx.fail(_("free-text prompts need the 'run' command"))
            return [*args[:index], RUN_COMMAND, *args[index:]]
        if token.startswith("-") and token != "-":  # an option of run's, or a typo
            command = self._command_after_run_options(ctx, args, index) if has_run else None
            if command is not None:
                ctx.fail(
                    _(
                        "{token} is an option of the default command (run), so this would "
                        "send {command} to the model as a prompt. Put options after the "
                        "command (flower {name} ...), or to send the words as a prompt: "
                        "flower {option} -- {name} ..."
                    ).format(token=repr(token), command=repr(command), name=command, option=token)
                )
            return [*args[:index], RUN_COMMAND, *args[index:]] if has_run else args
        if self.has_command(token):
            return args
        self.load_plugin_commands()
        if self.has_command(token):
            return args
        if _COMMAND_WORD.match(token):
            close = get_close_matches(token.lower(), self.list_commands(ctx), n=3)
            if close:
                suggestions = ", ".join(repr(name) for name in close)
                hint = (
                    " "
                    + _("To send it as a prompt: {command}").format(command=_as_prompt(args, index))
                    if has_run
                    else ""
                )
                ctx.fail(
                    _("No such command {token}. Did you mean {suggestions}?").format(
                        token=repr(token), suggestions=suggestions
                    )
                    + hint
                )
        if has_run:
            return [*args[:index], RUN_COMMAND, *args[index:]]
        return args

    def parse_args(self, ctx: ClickContext, args: list[str]) -> list[str]:
        if strict_plugins():
            self.load_plugin_commands()
        if not ctx.resilient_parsing:
            args = self._route(ctx, list(args))
        if not args:
            typer.echo(ctx.get_help())
            ctx.exit(0)
        return super().parse_args(ctx, args)

    # -- errors ----------------------------------------------------------------

    def main(self, *args: Any, **kwargs: Any) -> Any:
        from flower.core.config import configured_language
        from flower.core.i18n import set_language

        # before any command is built, so every --help speaks it (a mistake in the
        # settings is said in the environment's language, by the command that loads them)
        set_language(configured_language())
        translate_help(self)  # built before the language was known
        standalone = kwargs.get("standalone_mode", True)
        try:
            return super().main(*args, **kwargs)
        except FlowerError as exc:
            code = report_error(exc)
            if not standalone:
                raise
            sys.exit(code)
        except OSError as exc:  # a full disk or read-only file system under flower's feet
            from flower.core.fileperms import local_fault

            fault = local_fault(exc)
            if fault is None:
                raise
            code = report_error(fault)
            if not standalone:
                raise fault from exc
            sys.exit(code)


def _value_options(params: Sequence[CommandParameter]) -> dict[str, bool]:
    """Each option string of ``params`` -> whether it takes a value (a flag does not)."""
    takes_value: dict[str, bool] = {}
    for param in params:
        if param.param_type_name == "option":
            flag = bool(getattr(param, "is_flag", False) or getattr(param, "count", False))
            for opt in (*param.opts, *param.secondary_opts):
                takes_value[opt] = not flag
    return takes_value


def _takes_value(params: Sequence[CommandParameter], token: str) -> bool:
    """Whether ``token`` is one of ``params``' options that takes a value, given bare."""
    return "=" not in token and _value_options(params).get(token, False)


def _first_positional(params: Sequence[CommandParameter], args: Sequence[str]) -> int | None:
    """Index of the first argument that is not one of ``params``' options (an option
    they do not know counts as that argument); ``None`` when there is none."""
    takes_value = _value_options(params)
    i = 0
    while i < len(args):
        token = args[i]
        if token == "--" or not token.startswith("-") or token == "-":
            return i
        name = token.split("=", 1)[0]
        if name not in takes_value:
            return i
        if takes_value[name] and "=" not in token:
            i += 1
        i += 1
    return None


def _commands_of(plugin_app: typer.Typer) -> dict[str, Any]:
    """The click commands a plugin added to its own ``Typer``."""
    if not plugin_app.registered_commands and not plugin_app.registered_groups:
        return {}
    group = typer.main.get_group(plugin_app)
    return dict(group.commands)
