"""Relay: when a step's session gets too big, hand off to a fresh one.

Before a step sends its next message into a session whose last round used at least
``[tool.flower.relay] threshold_tokens`` of context (from the last assistant usage),
the old session writes a handoff document, saved readable and editable at
``notes/relay/<YYYYmmdd-HHMMSS>-<step>.md``. A new session starts seeded with that
document plus the message that was about to be sent; the old id goes into the
result's ``retired[]`` and lineage points at the new session the moment it exists.
It is not a compaction: you can read what was carried over, and what was not.
"""

from __future__ import annotations

import logging
import os
import re
import time
from pathlib import Path
from typing import Any

from flower.runtime.spec import StepResult

log = logging.getLogger(__name__)

HANDOFF_PROMPT = """\
这段对话的上下文快满了,接下来会换一个全新的会话接着干,它看不到这里的任何内容。
写一份交接文档给它:要做的事和验收目标在哪里、已经做完了什么、现在做到哪一步、
试过但走不通的路和原因、接下来的几步、要注意的坑。只写交接文档本身,用 Markdown。
"""

RELAY_SEED = """\
你接手一件做到一半的事。上一个会话的交接文档在 {path},内容如下:

{doc}

---

"""

FALLBACK_DOC = """\
(上一个会话没能写出交接文档。)
要做的事和验收目标见工作区里的需求与目标文件;先看工作区的现状再接着做。
上一个会话最后说的是:

{last}
"""


def threshold(settings: Any) -> int | None:
    """The relay threshold in tokens, or None when relay is off."""
    conf = getattr(settings, "relay", None)
    if conf is None or not getattr(conf, "enabled", True):
        return None
    value = getattr(conf, "threshold_tokens", None)
    return int(value) if value else None


def needs_relay(runtime: Any, session_id: str, settings: Any) -> bool:
    limit = threshold(settings)
    if limit is None:
        return False
    try:
        size = runtime.context_size(session_id)
    except Exception as exc:
        log.debug("context size unavailable for %s: %s", session_id, exc)
        return False
    return size is not None and size >= limit


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


def write_handoff(path: Path, step: str, old_session: str, body: str) -> None:
    from flower.core.fileperms import open_private, private_dir

    private_dir(path.parent)
    header = (
        f"# 接力:{step}\n\n"
        f"- 来自会话 `{old_session}`\n- 写于 {time.strftime('%Y-%m-%d %H:%M:%S')}\n\n"
    )
    fd = open_private(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(header + body.strip() + "\n")


async def relay(run: Any, prompt: str, *, label: str) -> StepResult:
    """Hand ``run``'s session off to a new one and send ``prompt`` there.

    Returns the new session's result, with the old id in ``retired`` and the handoff
    run's cost and turns added in (one manifest line for the whole move).
    """
    old = run.session_id
    handoff = await run.raw_turn(HANDOFF_PROMPT, resume=old, label=label)
    body = handoff.text if handoff.ok and handoff.text.strip() else ""
    if not body:
        body = FALLBACK_DOC.format(last=handoff.text.strip() or "(无)")
    path = handoff_path(run.workspace, run.name)
    write_handoff(path, run.name, old, body)
    doc = path.read_text(encoding="utf-8")
    try:
        shown = path.relative_to(run.workspace)
    except ValueError:
        shown = path
    seeded = RELAY_SEED.format(path=shown, doc=doc.strip()) + prompt
    run.session_id = None
    result: StepResult = await run.raw_turn(seeded, resume=None, label=label)
    result.retired = [*handoff.retired, old, *result.retired]
    if handoff.cost_usd is not None or result.cost_usd is not None:
        result.cost_usd = (handoff.cost_usd or 0.0) + (result.cost_usd or 0.0)
    result.num_turns += handoff.num_turns
    if handoff.started_at:
        result.started_at = handoff.started_at
    run.ctx.setdefault("_relays", []).append(
        {"step": run.name, "from": old, "to": result.session_id, "doc": str(path)}
    )
    log.info("relayed %s: %s -> %s (%s)", run.name, old, result.session_id, path)
    return result


__all__ = ["HANDOFF_PROMPT", "RELAY_SEED", "handoff_path", "needs_relay", "relay", "threshold"]
