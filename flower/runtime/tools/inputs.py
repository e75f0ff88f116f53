"""Tool inputs: one msgspec Struct per tool, and turning raw input into one of them.

Unknown keys are refused, unlike Claude Code which tolerates them: a misspelt key that
is silently ignored (``cwd`` for Bash, ``replaceAll`` for Edit) would make the tool do
something other than what the model believes it asked for. The refusal names the
accepted keys so the model can correct itself on the next turn. Types are checked in
msgspec's lax mode, so ``"10"`` is accepted for an integer and ``"true"`` for a boolean.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal, TypeVar, get_args

import msgspec

from flower.runtime.tools.base import ToolInputError

PositiveInt = Annotated[int, msgspec.Meta(ge=1)]
NonNegativeInt = Annotated[int, msgspec.Meta(ge=0)]


class _Input(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    pass


class ReadInput(_Input):
    file_path: str
    offset: NonNegativeInt | None = None
    """1-based line number to start at (0 is taken as 1)."""
    limit: PositiveInt | None = None


class WriteInput(_Input):
    file_path: str
    content: str


class EditInput(_Input):
    file_path: str
    old_string: str
    new_string: str
    replace_all: bool = False


class GlobInput(_Input):
    pattern: str
    path: str | None = None


class GrepInput(_Input):
    pattern: str
    path: str | None = None
    glob: str | None = None
    output_mode: Literal["content", "files_with_matches", "count"] = "files_with_matches"
    case_insensitive: bool = msgspec.field(default=False, name="-i")
    line_numbers: bool = msgspec.field(default=True, name="-n")
    after: NonNegativeInt | None = msgspec.field(default=None, name="-A")
    before: NonNegativeInt | None = msgspec.field(default=None, name="-B")
    context: NonNegativeInt | None = msgspec.field(default=None, name="-C")
    head_limit: PositiveInt | None = None
    multiline: bool = False


class BashInput(_Input):
    command: str
    timeout: Annotated[float, msgspec.Meta(gt=0)] | None = None
    """Milliseconds, as in Claude Code."""
    description: str | None = None
    """Accepted because Claude Code's Bash has it; flower does not use it."""


INPUTS: dict[str, type[_Input]] = {
    "Read": ReadInput,
    "Write": WriteInput,
    "Edit": EditInput,
    "Glob": GlobInput,
    "Grep": GrepInput,
    "Bash": BashInput,
}

T = TypeVar("T", bound=_Input)
_json = msgspec.json.Decoder()
_AT = re.compile(r" - at `\$\.?(?P<path>[^`]*)`")


def accepted_keys(struct: type[_Input]) -> list[str]:
    return [f.encode_name for f in msgspec.structs.fields(struct)]


def _choices(struct: type[_Input], key: str) -> str:
    for f in msgspec.structs.fields(struct):
        if f.encode_name == key:
            return ", ".join(map(str, get_args(f.type)))
    return "?"


def _explain(exc: msgspec.ValidationError, struct: type[_Input]) -> str:
    text = str(exc)
    match = _AT.search(text)
    where = match.group("path") if match else ""
    reason = _AT.sub("", text)
    keys = ", ".join(accepted_keys(struct))
    if reason.startswith("Object contains unknown field"):
        return f"unknown key {reason.split('`')[1]!r} (accepted keys: {keys})"
    if reason.startswith("Object missing required field"):
        return f"missing required key {reason.split('`')[1]!r} (accepted keys: {keys})"
    if reason.startswith("Expected `object`"):
        return f"the input must be a JSON object with the keys {keys}"
    if reason.startswith("Invalid enum value"):
        choices = _choices(struct, where)
        reason = f"{reason[0].lower()}{reason[1:]}; expected one of: {choices}"
    reason = reason.replace("Expected", "expected", 1)
    return f"{where!r}: {reason}" if where else reason


def parse_input(tool: str, raw: object, struct: type[T]) -> T:
    """``raw`` is the tool_use ``input``: a dict, or the raw text when the stream sent bad JSON."""
    if isinstance(raw, str | bytes):
        text = raw
        try:
            raw = _json.decode(text)
        except msgspec.DecodeError as exc:
            preview = text[:200] if isinstance(text, str) else text[:200].decode("utf-8", "replace")
            raise ToolInputError(
                f"Invalid input for {tool}: the input is not valid JSON ({exc}); "
                f"received {len(text)} characters: {preview!r}"
            ) from None
        except RecursionError:
            raise ToolInputError(
                f"Invalid input for {tool}: the JSON is nested too deeply"
            ) from None
    try:
        return msgspec.convert(raw, struct, strict=False)
    except msgspec.ValidationError as exc:
        raise ToolInputError(f"Invalid input for {tool}: {_explain(exc, struct)}") from None
    except RecursionError:
        raise ToolInputError(f"Invalid input for {tool}: the input is nested too deeply") from None
