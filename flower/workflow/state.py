"""Typed state a wake hands between modules: what ``wake_state`` reports."""

from __future__ import annotations

from typing import Any, Literal

import msgspec


class _Keyed:
    """``state["field"]`` reads a field, as the documented examples index ``wake_state``."""

    __slots__ = ()
    __struct_fields__: tuple[str, ...]

    def __getitem__(self, key: str) -> Any:
        if key in self.__struct_fields__:
            return getattr(self, key)
        raise KeyError(key)


class WakeFresh(_Keyed, msgspec.Struct, frozen=True):
    """Why the next wake starts afresh although lineage is there (the next run sets
    that lineage aside; ``flower adopt`` takes it back)."""

    reason: Literal["moved", "unreadable", "gone"] | str
    moved_from: str | None = None
    steps: list[str] = msgspec.field(default_factory=list)


class WakeRewind(_Keyed, msgspec.Struct, frozen=True):
    """A rewind a crash cut short (its plan is still in the run directory): the next
    ``flower`` or ``flower rewind`` finishes it first. ``damaged``: the plan cannot be
    read (the error says what to do)."""

    step: str | None = None
    turns: int | None = None
    new_session: str | None = None
    damaged: str | None = None


class WakeVerdict(_Keyed, msgspec.Struct, frozen=True):
    """The judge's last verdict on ``step``: ``met`` of ``goals`` goals met (``met`` None:
    the judge gave no verdict), on wake ``woke``."""

    step: str
    goals: int
    met: int | None
    woke: int


class WakeChecks(_Keyed, msgspec.Struct, frozen=True):
    """What :class:`WakeState` rests on; see :func:`~flower.workflow.base.wake_state`."""

    lineage: Literal["ok", "none"]
    fresh: WakeFresh | None
    recorded: dict[str, str]
    alive: dict[str, bool]
    context: dict[str, int | None]
    brief: bool
    goals: int
    store: str | None
    request: str | None
    goals_stale: bool
    unrecorded: list[str]
    rewound: int | None
    unheard: list[str] = msgspec.field(default_factory=list)
    rewind: WakeRewind | None = None
    verdict: WakeVerdict | None = None


class WakeState(_Keyed, msgspec.Struct, frozen=True):
    """What the next run would resume (``st["waking"]``, ``st["checks"]``, ``st["woke"]``
    and ``st["steps"]`` read the fields, as in the product page's example)."""

    waking: bool
    checks: WakeChecks
    woke: int
    steps: dict[str, str]


__all__ = ["WakeChecks", "WakeFresh", "WakeRewind", "WakeState", "WakeVerdict"]
