"""The wake line and the step headers: the proof, at a glance, that flower remembered.

The strings are the product's own (the seed page): a user who sees
``<- 在 ~/proj 接上上次  需求已确认 · 目标 15 条 · 干活上下文 80.2K · 第 3 次唤醒``
knows which conversation continues and how big its context has grown.
"""

from __future__ import annotations

import os
from pathlib import Path

WAKE_PROMPT = "接着上次? 直接回车 = 接着做;也可以说点新的;/new = 重开一件事(Ctrl-C 退出)"
NEW_TASK_PROMPT = "要做什么? 一句话就够,回车开始(Ctrl-C 退出)"
REWOUND_PART = "退回 {turns} 轮"
"""In the wake line after ``flower rewind N``: "rewound N turns"."""
HEADER_WIDTH = 40


def human_tokens(tokens: int) -> str:
    """80_213 -> ``80.2K``; 1_250_000 -> ``1.25M``; under a thousand as is."""
    if tokens < 1000:
        return str(tokens)
    if tokens < 1_000_000:
        return f"{tokens / 1000:.1f}K"
    return f"{tokens / 1_000_000:.2f}M"


def short_path(path: str | os.PathLike[str], home: str | None = None) -> str:
    """The workspace as a person writes it: ``~/proj`` under the home directory."""
    text = str(Path(path))
    home = home if home is not None else os.path.expanduser("~")
    if home and home != "/" and (text == home or text.startswith(home.rstrip("/") + "/")):
        return "~" + text[len(home.rstrip("/")) :]
    return text


def wake_banner(
    workspace: str | os.PathLike[str],
    *,
    woke: int,
    brief_confirmed: bool,
    goals: int,
    work_step: str | None,
    context_tokens: int | None,
    home: str | None = None,
    rewound: int | None = None,
) -> str:
    """``<- 在 <where> 接上上次  需求已确认 · 目标 N 条 · <step>上下文 X · 第 N 次唤醒``.

    Parts are shown only when known: the goals count when the list is non-empty, the
    context when the store can tell the last round's size, ``退回 N 轮`` after a rewind.
    """
    parts: list[str] = []
    if brief_confirmed:
        parts.append("需求已确认")
    if goals > 0:
        parts.append(f"目标 {goals} 条")
    if work_step and context_tokens is not None:
        parts.append(f"{work_step}上下文 {human_tokens(context_tokens)}")
    if rewound:
        parts.append(REWOUND_PART.format(turns=rewound))
    parts.append(f"第 {woke} 次唤醒")
    return f"<- 在 {short_path(workspace, home)} 接上上次  " + " · ".join(parts)


def fresh_banner(workspace: str | os.PathLike[str], home: str | None = None) -> str:
    """The first line of a run that has nothing to resume."""
    return f"-> 在 {short_path(workspace, home)} 开始新的一件事"


def lost_sessions_line(steps: list[str]) -> str:
    """Under the banner when lineage names sessions the store no longer holds.

    Those steps start a new conversation (the seed's silent fresh start); saying so
    keeps "did it remember?" visible.
    """
    return f"   !! 记录里的会话已不在存储里:{'、'.join(steps)} —— 这些步骤从头开始"


def unrecorded_line(texts: list[str], width: int = 60) -> str:
    """Under the banner when a run was cut short before it recorded what it was told:
    those words are passed on now, so nothing said is lost."""
    said = " / ".join(" ".join(text.split()) for text in texts)
    if len(said) > width:
        said = said[: width - 1] + "…"
    return f"   !! 上次运行在记下你的话之前被打断,这次接着传下去:{said}"


def step_header(step: str, round_no: int, rounds: int, *, resumed: bool, woke: int | None) -> str:
    """``== 干活 =====...  3/3  <- 接上次 · 第 3 次唤醒`` (the tail only when resumed;
    ``woke=None``, as for ``flower once``, which has no wakes: ``<- 接上次`` alone)."""
    head = f"== {step} "
    head += "=" * max(3, HEADER_WIDTH - _display_width(head))
    line = f"{head}  {round_no}/{rounds}"
    if resumed:
        line += "  <- 接上次" if woke is None else f"  <- 接上次 · 第 {woke} 次唤醒"
    return line


def _display_width(text: str) -> int:
    """Terminal columns: East Asian wide characters take two."""
    import unicodedata

    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def fresh_start_line(
    reason: str,
    *,
    moved_from: str | None,
    steps: list[str],
    archived: str | None,
    lineage_name: str,
) -> str:
    """Under the banner when lineage was there but this wake cannot use it: why it starts
    afresh, where the old lineage went and the command that takes the old place back."""
    if reason == "moved":
        why = f"the lineage here was written for {moved_from} (moved or copied)"
    elif reason == "gone":
        why = f"the sessions of {'、'.join(steps)} are gone from the store"
    else:
        why = f"{lineage_name} could not be read"
    if archived is None:
        back = "it could not be set aside, so it is kept as it is and not written this run"
    else:
        back = f"old lineage in {archived}/ · `flower adopt {archived}` takes the old place back"
    return f"   starting fresh: {why}; {back}"
