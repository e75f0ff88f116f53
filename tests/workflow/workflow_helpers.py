"""Helpers the workflow tests share: the manifest fields, what a request said."""

from __future__ import annotations

from flower.testing.fake_api import RecordedRequest

SEED_FIELDS = {
    "step",
    "session_id",
    "ok",
    "cost_usd",
    "num_turns",
    "text",
    "error",
    "started_at",
    "ended_at",
    "attempts",
    "errors",
    "resumed",
    "retired",
    "context",
    "stop",
    "duration_s",
    "run",
}
"""Every manifest line carries these: StepResult's fields (seed), duration_s and run."""


def system_text(req: RecordedRequest) -> str:
    system = req.body.get("system")
    if isinstance(system, str):
        return system
    return "".join(b.get("text", "") for b in system or [] if isinstance(b, dict))


def last_user_text(req: RecordedRequest) -> str:
    content = req.messages[-1]["content"]
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content if isinstance(b, dict))


def user_prompts(req: RecordedRequest) -> list[str]:
    """The plain-text user prompts of a request, one per text block (tool results left
    out; the engine merges a resume prompt into a pending user turn as a second block)."""
    out = []
    for message in req.messages:
        if message["role"] != "user":
            continue
        content = message["content"]
        if isinstance(content, str):
            out.append(content)
            continue
        out.extend(b["text"] for b in content if isinstance(b, dict) and b.get("type") == "text")
    return out
