"""Relay: when a step's session gets too big, hand off to a fresh one.

The limit is ``[tool.flower.relay] threshold_tokens`` of context (from the last
assistant usage), and no request is meant to reach it. Two checks keep it so:

- *mid-run*: every step run gets ``Runtime.run(context_limit=threshold)``, so a long
  working run stops itself between two turns while there is still room for the next
  request and one more (the handoff); :func:`relay_while_full` then relays at once and
  the work goes on in the new session, in the same wake;
- *between runs*: before a step sends its next message into a session that would not
  leave that room (:func:`needs_relay`), it relays first.

Relaying: the old session writes a handoff document, saved readable and editable at
``notes/relay/<YYYYmmdd-HHMMSS>-<step>.md``. A new session starts seeded with that
document plus the message to carry on with; its first entry has ``relayFrom: <old
id>``, the old id goes into the result's ``retired[]`` and lineage points at the new
session the moment it exists. It is not a compaction: you can read what was carried
over, and what was not.
"""

from __future__ import annotations

import glob
import logging
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from flower.core.i18n import _, every_translation, ngettext
from flower.core.telemetry import tracing_of
from flower.runtime.spec import STOP_CONTEXT_LIMIT, StepResult
from flower.workflow.context import RelayMove
from flower.workflow.documents import documents
from flower.workflow.prompts import (
    FALLBACK_DOC,
    HANDOFF_PROMPT,
    NOTHING_SAID,
    RELAY_CONTINUE,
    RELAY_SEED,
)

if TYPE_CHECKING:
    from flower.core.config import Settings
    from flower.workflow.context import WorkflowContext
    from flower.workflow.protocols import StepRuntime

log = logging.getLogger(__name__)


class RelayRun(Protocol):
    """What a relay needs of the step it relays while it runs: a
    :class:`~flower.workflow.base.StepRun` is one (the step calls into this module, so
    this module names what it uses rather than the step's class)."""

    session_id: str | None
    """The step's current session; a relay moves it to the new one."""

    @property
    def name(self) -> str: ...

    @property
    def runtime(self) -> StepRuntime: ...

    @property
    def settings(self) -> Settings: ...

    @property
    def workspace(self) -> Path: ...

    @property
    def ctx(self) -> WorkflowContext: ...

    @property
    def resumed(self) -> bool:
        """The step resumed a session lineage named (a relay may be left half done)."""
        ...

    @property
    def results(self) -> list[StepResult]:
        """The step's results so far in this wake."""
        ...

    async def raw_turn(
        self,
        prompt: str,
        *,
        resume: str | None,
        label: str,
        relay_from: str | None = None,
        limited: bool = True,
    ) -> StepResult:
        """One run of the step's agent, its session recorded in lineage."""
        ...


MAX_RELAYS_PER_TURN = 8
"""Relays one turn of a step may go through before it is reported as failed."""
RESERVE_DIVISOR = 100
"""Between runs, at least ``threshold // RESERVE_DIVISOR`` tokens are assumed for the
growth of a turn (the reply, tool results), since none has been seen yet."""


def threshold(settings: Settings) -> int | None:
    """The relay threshold in tokens, or None when relay is off."""
    conf = getattr(settings, "relay", None)
    if conf is None or not getattr(conf, "enabled", True):
        return None
    value = getattr(conf, "threshold_tokens", None)
    return int(value) if value else None


def expected_growth(prompt: str, limit: int) -> int:
    """Tokens one turn is assumed to add between runs: the prompt, at least a reserve."""
    return max(len(prompt.encode("utf-8")) // 4, limit // RESERVE_DIVISOR)


def needs_relay(
    runtime: StepRuntime, session_id: str, settings: Settings, prompt: str = ""
) -> bool:
    """Whether sending ``prompt`` into ``session_id`` would leave no room for one more
    turn under the threshold (the same rule as ``Runtime.run(context_limit=...)``)."""
    limit = threshold(settings)
    if limit is None:
        return False
    try:
        size = runtime.context_size(session_id)
    except Exception as exc:
        log.debug("context size unavailable for %s: %s", session_id, exc)
        return False
    return size is not None and size + 2 * expected_growth(prompt, limit) >= limit


class LeftHandoff(NamedTuple):
    """What a run killed while relaying left in the old session."""

    asking: str | None
    """The words that finish a handoff request a killed run left open, never carried on
    in the old session: the request itself while it waits as it was sent (sent again as
    it is), the engine's resume prompt when a round of it was cut (mid-tool, say)."""
    answered: str | None
    """The handoff document, answered and no new session took it up (killed before the
    relay's new session existed): the relay is finished with it, never asked again."""


NOTHING_LEFT = LeftHandoff(asking=None, answered=None)


def handoff_left(runtime: StepRuntime, session_id: str) -> LeftHandoff:
    """What of a relay ``session_id``'s transcript shows a killed run left (one load)."""
    try:
        entries = runtime.store.load(runtime.key(session_id)) or []
    except Exception as exc:
        log.debug("transcript unavailable for %s: %s", session_id, exc)
        return NOTHING_LEFT
    return left_in(entries)


def left_in(entries: list[dict[str, Any]]) -> LeftHandoff:
    """:func:`handoff_left` on a loaded transcript.

    The request in force is the last prompt that asked for something: a retry's resume
    prompt only says "go on", so a reply to it answers the prompt before it.
    """
    from flower.core.entries import is_synthetic_error
    from flower.core.resilience import RESUME_PROMPT
    from flower.core.transcript.blocks import message_texts, prompt_texts, tool_uses

    asked = None
    for i in range(len(entries) - 1, -1, -1):
        words = "".join(prompt_texts(entries[i]))
        if words and words not in every_translation(RESUME_PROMPT):
            asked = i if words in every_translation(HANDOFF_PROMPT) else None
            break
    if asked is None:
        return NOTHING_LEFT
    replies = [
        e
        for e in entries[asked + 1 :]
        if e.get("type") == "assistant" and not is_synthetic_error(e)
    ]
    if not replies:  # the request still waits as it was sent
        return LeftHandoff(asking=_(HANDOFF_PROMPT), answered=None)
    if tool_uses(replies[-1]):  # a round of the answer was cut
        return LeftHandoff(asking=_(RESUME_PROMPT), answered=None)
    doc = "".join(message_texts(replies[-1]))
    return LeftHandoff(asking=None, answered=doc) if doc.strip() else NOTHING_LEFT


def relayed_to(runtime: StepRuntime, session_id: str) -> str | None:
    """The session a relay from ``session_id`` started (its first entry has ``relayFrom``
    naming it), if there is one: a run killed after the new session's first entry and
    before lineage named it. Looked for only when a handoff was answered and not passed
    on, so reading every session's first entry is rare."""
    try:
        project = runtime.key(session_id).project_key
        infos = sorted(runtime.store.list_sessions(project), key=lambda i: -i.mtime_ms)
        for info in infos:
            if info.session_id == session_id:
                continue
            first = next(iter(runtime.store.iter_entries(runtime.key(info.session_id))), None)
            if isinstance(first, dict) and first.get("relayFrom") == session_id:
                return str(info.session_id)
    except Exception as exc:
        log.debug("sessions unavailable when looking for a relay from %s: %s", session_id, exc)
    return None


async def resume_relayed(run: RelayRun, successor: str, prompt: str, *, label: str) -> StepResult:
    """Go on in ``successor``, the new session of a relay a killed run left unnamed in
    lineage: its seed (the handoff and the message) waits there and is sent as it is,
    not a second new session."""
    from flower.core.transcript.blocks import waiting_user_texts

    old = run.session_id
    assert old is not None  # the relay a killed run left started from this session
    try:
        waiting = waiting_user_texts(_entries(run.runtime, successor))
    except Exception:
        waiting = []
    run.session_id = successor
    result: StepResult = await run.raw_turn(
        waiting[-1] if waiting else prompt, resume=successor, label=label
    )
    result.retired = [old, *result.retired]
    log.info("relayed %s: %s -> %s (finished after a cut)", run.name, old, successor)
    return result


def _entries(runtime: StepRuntime, session_id: str) -> list[dict[str, Any]]:
    return list(runtime.store.load(runtime.key(session_id)) or [])


_UNSAFE = re.compile(r"[\\/\x00:*?\"<>|\s]+")


def handoff_path(workspace: Path, step: str, now: float | None = None) -> Path:
    """``<workspace>/notes/relay/<YYYYmmdd-HHMMSS>-<step>.md``, never overwriting."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
    safe = _UNSAFE.sub("-", step).strip("-.") or "step"
    folder = workspace / "notes" / "relay"
    path = folder / f"{stamp}-{safe}.md"
    n = 2
    while path.exists():
        path = folder / f"{stamp}-{safe}-{n}.md"
        n += 1
    return path


def _handoff_header(step: str, old_session: str) -> str:
    return f"# 接力:{step}\n\n- 来自会话 `{old_session}`\n"


def written_handoff(workspace: Path, step: str, old_session: str) -> Path | None:
    """The newest handoff document already written from ``old_session`` (a run killed
    after writing it, before the new session existed), edits and all; ``None`` if none."""
    folder = workspace / "notes" / "relay"
    safe = _UNSAFE.sub("-", step).strip("-.") or "step"
    header = _handoff_header(step, old_session).encode()
    for path in sorted(folder.glob(f"*-{glob.escape(safe)}*.md"), reverse=True):
        try:
            with path.open("rb") as handle:
                if handle.read(len(header)) == header:
                    return path
        except OSError:
            continue
    return None


def write_handoff(path: Path, step: str, old_session: str, body: str) -> None:
    """Write the document whole or not at all: a killed run's is reused as it is."""
    from flower.core.fileperms import private_dir, replaced_atomically

    private_dir(path.parent)
    header = _handoff_header(step, old_session) + f"- 写于 {time.strftime('%Y-%m-%d %H:%M:%S')}\n\n"
    text = header + body.strip() + "\n"
    with replaced_atomically(path) as out:
        out.write(text.encode("utf-8", "replace"))  # a lone surrogate (cut emoji): "?"


async def relay(
    run: RelayRun,
    prompt: str,
    *,
    label: str,
    answered: str | None = None,
    asking: str | None = None,
) -> StepResult:
    """:func:`_relay` inside a ``flower.relay`` span."""
    where = {"flower.step.name": run.name, "flower.relay.from_session": run.session_id}
    with tracing_of(run.runtime).span("flower.relay", where) as span:
        asking = asking or _(HANDOFF_PROMPT)
        result = await _relay(run, prompt, label=label, answered=answered, asking=asking)
        span.set({"flower.relay.to_session": result.session_id})
    return result


async def _relay(
    run: RelayRun,
    prompt: str,
    *,
    label: str,
    answered: str | None,
    asking: str,
) -> StepResult:
    """Hand ``run``'s session off to a new one and send ``prompt`` there.

    Returns the new session's result, with the old id in ``retired`` and the handoff
    run's cost and turns added in (one manifest line for the whole move). ``answered``
    is a handoff document the old session already wrote (an earlier run was killed
    before passing it on): it is not asked for again. ``asking`` is what the old
    session is sent for its document (see :attr:`LeftHandoff.asking`).
    """
    old = run.session_id
    assert old is not None  # every caller relays from the step's session
    if answered is not None:
        handoff = StepResult(step=label, session_id=old, ok=True, text=answered)
    else:
        # no context_limit here: stopping the handoff itself would leave nothing to hand on
        handoff = await run.raw_turn(asking, resume=old, label=label, limited=False)
    body = handoff.text if handoff.ok and handoff.text.strip() else ""
    if not body:
        last = handoff.text.strip() or _(NOTHING_SAID)
        files = documents(run.workspace, run.settings)  # the brief and goals this wake uses
        body = _(FALLBACK_DOC).format(
            last=last, brief_file=files.brief.name, goals_file=files.goals.name
        )
    # a killed run may have written it already (and you may have edited it since)
    path = written_handoff(run.workspace, run.name, old) if answered is not None else None
    if path is None:
        path = handoff_path(run.workspace, run.name)
        write_handoff(path, run.name, old, body)
    doc = path.read_text(encoding="utf-8")
    try:
        shown = path.relative_to(run.workspace)
    except ValueError:
        shown = path
    seeded = _(RELAY_SEED).format(path=shown, doc=doc.strip()) + prompt
    run.session_id = None
    result: StepResult = await run.raw_turn(seeded, resume=None, label=label, relay_from=old)
    fresh_turns = result.num_turns
    result.retired = [*handoff.retired, old, *result.retired]
    if handoff.cost_usd is not None or result.cost_usd is not None:
        result.cost_usd = (handoff.cost_usd or 0.0) + (result.cost_usd or 0.0)
    result.num_turns += handoff.num_turns
    if handoff.started_at:
        result.started_at = handoff.started_at
    run.ctx.relays.append(
        RelayMove(
            step=run.name,
            from_session=old,
            to=result.session_id,
            doc=str(path),
            turns=fresh_turns,
        )
    )
    log.info("relayed %s: %s -> %s (%s)", run.name, old, result.session_id, path)
    return result


async def relay_turn(run: RelayRun, prompt: str, *, label: str) -> StepResult:
    """Send ``prompt`` to ``run``'s session, relaying whenever it gets too big. The one
    place that chooses among the cases, in this order:

    1. a relay a killed run finished but never named in lineage (the handoff answered
       and a new session started from it): go on in that session (:func:`resume_relayed`);
    2. a handoff answered and never passed on: relay with it, not asking again;
    3. a handoff request left unanswered: relay, finishing that request;
    4. a session that would leave no room for one more turn (:func:`needs_relay`): relay
       first;
    5. else one plain run in the session.

    Cases 1-3 can only come from an earlier process, so they are looked for once, on
    the first turn of a resumed step. Whatever the case, a run that stops at the context
    limit then relays at once and goes on (:func:`relay_while_full`).
    """
    sid = run.session_id
    left = NOTHING_LEFT
    if run.resumed and not run.results and sid:
        left = handoff_left(run.runtime, sid)
    successor = relayed_to(run.runtime, sid) if left.answered and sid else None
    if successor is not None:
        result = await resume_relayed(run, successor, prompt, label=label)
    elif left.answered is not None:
        result = await relay(run, prompt, label=label, answered=left.answered)
    elif left.asking is not None:
        result = await relay(run, prompt, label=label, asking=left.asking)
    elif sid and needs_relay(run.runtime, sid, run.settings, prompt):
        result = await relay(run, prompt, label=label)
    else:
        result = await run.raw_turn(prompt, resume=sid, label=label)
    return await relay_while_full(run, result, prompt, label=label)


async def relay_while_full(
    run: RelayRun, result: StepResult, prompt: str, *, label: str
) -> StepResult:
    """While ``result`` stopped at the context limit, relay and carry on in a new session.

    ``prompt`` is what the stopped run was working on; the new session gets the
    handoff document and that prompt. Returns one result for the whole turn (turns,
    cost and retired ids of every part). A relayed session that hits the limit again
    on its very first request, or more than :data:`MAX_RELAYS_PER_TURN` relays, ends
    the turn as failed: relaying more would not help.
    """
    relays = 0
    while result.stop == STOP_CONTEXT_LIMIT and run.session_id:
        if relays >= MAX_RELAYS_PER_TURN:
            result.error = ngettext(
                "relayed {count} time in one turn and the context is still full",
                "relayed {count} times in one turn and the context is still full",
                relays,
            ).format(count=relays)
            return result
        if relays and run.ctx.relays[-1].turns <= 1:
            result.error = _(
                "the relayed session was at the context limit from its first request "
                "(the handoff document is too big?); not relaying again"
            )
            return result
        earlier = result
        result = await relay(run, _(RELAY_CONTINUE).format(prompt=prompt.strip()), label=label)
        absorb(result, earlier)
        relays += 1
    return result


def absorb(result: StepResult, earlier: StepResult) -> None:
    """Fold ``earlier`` (a run that came before ``result`` in the same turn) into it."""
    result.retired = [*earlier.retired, earlier.session_id or "", *result.retired]
    result.retired = list(dict.fromkeys(sid for sid in result.retired if sid))
    if earlier.cost_usd is not None or result.cost_usd is not None:
        result.cost_usd = (earlier.cost_usd or 0.0) + (result.cost_usd or 0.0)
    result.num_turns += earlier.num_turns
    result.attempts += earlier.attempts
    result.errors = [*earlier.errors, *result.errors]
    if earlier.started_at:
        result.started_at = earlier.started_at


__all__ = [
    "NOTHING_LEFT",
    "LeftHandoff",
    "RelayRun",
    "absorb",
    "expected_growth",
    "handoff_left",
    "handoff_path",
    "left_in",
    "needs_relay",
    "relay",
    "relay_turn",
    "relay_while_full",
    "relayed_to",
    "resume_relayed",
    "threshold",
]
