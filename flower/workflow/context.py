"""What a workflow run hands from step to step and back to its caller: a typed
:class:`WorkflowContext`, readable like the dict the product page's example indexes
(``ctx["_woke"]``, ``ctx["_sessions"]``, ``ctx["取词"]``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

if TYPE_CHECKING:
    from flower.core.lineage import FreshStart, Lineage
    from flower.runtime.spec import StepResult
    from flower.workflow.said import ClarifyMemo, SaidWords, WakeMemo
    from flower.workflow.verdict import Verdict


class RelayMove(msgspec.Struct, kw_only=True):
    """One relay: the step, the session it left (``from``) and the one it moved to
    (``to``), the handoff document's path, and ``turns`` (API responses of the new
    session's first run). ``move["from"]``, ``move["to"]``... read the fields."""

    step: str
    from_session: str = msgspec.field(name="from")
    to: str | None
    doc: str
    turns: int

    def __getitem__(self, key: str) -> Any:
        field = "from_session" if key == "from" else key
        if field not in self.__struct_fields__:
            raise KeyError(key)
        return getattr(self, field)

    def get(self, key: str, default: object = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default


class WorkflowContext(msgspec.Struct, kw_only=True):
    """What a run produced and what its steps share.

    flower's own state is in typed fields; ``ctx["_<field>"]`` reads (and assigns) the
    field, so ``ctx["_woke"]`` is ``ctx.woke``. Every other key (each step's final text
    under the step's name, and whatever the caller's prompts and hooks keep) lives in
    :attr:`values`: ``ctx["task"] = ...`` and ``ctx["取词"]`` work as on a dict.
    flower's keys are always there: ``ctx["_failed"]`` is None when no step failed.
    """

    workspace: str
    """The workspace's real path."""
    woke: int = 1
    """The wake count: 1 on a first run."""
    sessions: dict[str, str] = msgspec.field(default_factory=dict)
    """``{step: session id}`` of this run."""
    results: list[StepResult] = msgspec.field(default_factory=list)
    """Every StepResult in order (judge rounds and retries included)."""
    resumed: dict[str, bool] = msgspec.field(default_factory=dict)
    """``{step: bool}``: whether the step resumed a session."""
    skipped: list[str] = msgspec.field(default_factory=list)
    """Frozen steps that did not run."""
    ok: bool = True
    failed: str | None = None
    """The step that failed (the rest did not run), or None."""
    fresh: FreshStart | None = None
    """What lineage this wake set aside to start afresh, or None."""
    lineage: Lineage | None = None
    """The lineage of a continuous run (None with ``continuous=False``)."""
    known: dict[str, str] = msgspec.field(default_factory=dict)
    """``{step: session id}`` the run started from (lineage, or ``resume_from``)."""
    relays: list[RelayMove] = msgspec.field(default_factory=list)
    """Every relay, in order."""
    verdicts: dict[str, Verdict | None] = msgspec.field(default_factory=dict)
    """The goal gate's last verdict per step (None when the judge itself failed)."""
    goal_met: bool | None = None
    """Whether the last verdict met every goal (None: no verdict)."""
    said: str | None = None
    """What the user said on this wake (and earlier ones left unheard), to pass on."""
    request: str | None = None
    """A first run's request, for the clarifier."""
    brief: str | None = None
    """The confirmed brief, once known."""
    brief_from_request: bool = False
    """The request itself became the brief (the exchanges ran out)."""
    goals: list[str] | None = None
    """The acceptance goals, once known."""
    rederive_goals: bool = False
    """The user added something: the goals are derived again."""
    said_words: SaidWords | None = None
    """The built-in workflow's words as lineage keeps them (:mod:`flower.workflow.said`)."""
    wake_memo: WakeMemo | None = None
    """The built-in workflow's words the working step has not heard yet."""
    clarify_memo: ClarifyMemo | None = None
    """The built-in workflow's words the clarifier has not heard yet."""
    values: dict[str, Any] = msgspec.field(default_factory=dict)
    """Each step's final text by step name, and the caller's own keys."""

    def _field(self, key: str) -> str | None:
        """The field ``key`` names (``"_woke"`` -> ``"woke"``), or None."""
        if key.startswith("_") and key[1:] in self.__struct_fields__ and key != "_values":
            return key[1:]
        return None

    def __getitem__(self, key: str) -> Any:
        field = self._field(key)
        return getattr(self, field) if field is not None else self.values[key]

    def __setitem__(self, key: str, value: object) -> None:
        field = self._field(key)
        if field is not None:
            setattr(self, field, value)
        else:
            self.values[key] = value

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and (self._field(key) is not None or key in self.values)

    def get(self, key: str, default: object = None) -> Any:
        field = self._field(key)
        return getattr(self, field) if field is not None else self.values.get(key, default)


__all__ = ["RelayMove", "WorkflowContext"]
