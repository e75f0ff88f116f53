"""Keep pydantic out of start-up: plain ``str``/``bool`` parameters skip typer's TypeAdapter.

typer >= 0.28 coerces every parameter value through a pydantic ``TypeAdapter``, built
on first use; the first one imports pydantic (about 100 ms, several times a bare
interpreter start), even for a flag left unset. A ``str`` option or a ``bool`` flag
needs no coercion, so those parameters get a pass-through instead. Anything else
(ints, paths, choices) keeps typer's own coercion and its error messages. If typer's
internals change, this does nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

try:
    from typer._click.exceptions import BadParameter
    from typer._coercion import RuntimeParam
except ImportError:  # another typer: no fast path, same behaviour
    RuntimeParam = None  # type: ignore[assignment,misc]


if RuntimeParam is not None:

    @dataclass(frozen=True)
    class _PlainStr(RuntimeParam):  # type: ignore[misc,valid-type]
        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            if isinstance(value, str):
                return value
            raise BadParameter(f"{value!r} is not a string", ctx=ctx, param=param)

    @dataclass(frozen=True)
    class _PlainBool(RuntimeParam):  # type: ignore[misc,valid-type]
        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            if isinstance(value, bool):
                return value
            raise BadParameter(f"{value!r} is not a boolean", ctx=ctx, param=param)

    _PASS_THROUGH = {str: _PlainStr, bool: _PlainBool}


def speed_up(params: list[Any]) -> None:
    """Give every plain ``str`` or ``bool`` parameter a pass-through coercion."""
    if RuntimeParam is None:
        return
    for param in params:
        descriptor = getattr(param, "type_descriptor", None)
        if descriptor is None or getattr(param, "_runtime_param", False) is not None:
            continue
        info = descriptor.parameter_info
        fast = _PASS_THROUGH.get(descriptor.annotation)
        if fast is not None and getattr(info, "parser", None) is None:
            param._runtime_param = fast(parameter_info=info, annotation=descriptor.annotation)
