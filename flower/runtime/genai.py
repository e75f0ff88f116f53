"""Span attributes of a Messages API request and a tool call, per OTel's GenAI conventions.

Names and numbers always; prompts, replies and tool inputs/outputs only through the
``*_content`` functions, which the loop calls when ``capture_content`` is on. Message
content follows the conventions' parts shape (``text``, ``reasoning``, ``tool_call``,
``tool_call_response``) as JSON text.
"""

from __future__ import annotations

import json
from typing import Any

from flower.core.telemetry import Attributes

PROVIDER = "anthropic"


def _count(usage: dict[str, Any], name: str) -> int | None:
    value = usage.get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def chat_attributes(model: str, max_tokens: int, session_id: str) -> Attributes:
    """What is known before the request is sent."""
    return {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": PROVIDER,
        "gen_ai.system": PROVIDER,  # the name before the conventions renamed it
        "gen_ai.request.model": model,
        "gen_ai.request.max_tokens": max_tokens,
        "gen_ai.conversation.id": session_id,
        "flower.session.id": session_id,
    }


def response_attributes(message: dict[str, Any], request_id: str | None) -> Attributes:
    """Model, id, stop reason and usage of an assembled response.

    ``gen_ai.usage.input_tokens`` counts every input token, cached ones included, as
    the conventions ask; the cache reads and writes are also given on their own.
    """
    usage = message.get("usage") or {}
    uncached = _count(usage, "input_tokens")
    cache_read = _count(usage, "cache_read_input_tokens")
    cache_write = _count(usage, "cache_creation_input_tokens")
    parts = [n for n in (uncached, cache_read, cache_write) if n is not None]
    stop = message.get("stop_reason")
    return {
        "gen_ai.response.id": message.get("id"),
        "gen_ai.response.model": message.get("model"),
        "gen_ai.response.finish_reasons": [stop] if isinstance(stop, str) else None,
        "gen_ai.usage.input_tokens": sum(parts) if parts else None,
        "gen_ai.usage.output_tokens": _count(usage, "output_tokens"),
        "gen_ai.usage.cache_read.input_tokens": cache_read,
        "gen_ai.usage.cache_creation.input_tokens": cache_write,
        "anthropic.request.id": request_id,
    }


def error_attributes(error: BaseException) -> Attributes:
    """``error.type`` of a failed request, as the conventions ask: the error code the
    API answered with (``overloaded_error``, ``rate_limit_error``...), else the
    exception's fully qualified class name (a refused connection, a cut stream); and the
    HTTP status when the API sent one."""
    from flower.core.resilience import status_of

    code = None
    body = getattr(error, "body", None)
    if isinstance(body, dict):
        inner = body.get("error")
        found = inner.get("type") if isinstance(inner, dict) else None
        code = found if isinstance(found, str) and found else None
    kind = type(error)
    status = status_of(error)
    return {
        "error.type": code or f"{kind.__module__}.{kind.__qualname__}",
        "http.response.status_code": status if status is not None and status >= 400 else None,
    }


def tool_attributes(name: str, tool_use_id: str, session_id: str) -> Attributes:
    return {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.call.id": tool_use_id,
        "gen_ai.tool.type": "function",
        "gen_ai.conversation.id": session_id,
        "flower.session.id": session_id,
    }


# -- content (only with capture_content)


def request_content(system: str, messages: list[dict[str, Any]]) -> Attributes:
    """The system prompt and the newest message: what this request adds to the
    conversation (the whole history on every request would grow without bound)."""
    return {
        "gen_ai.system_instructions": _dumps([{"type": "text", "content": system}])
        if system
        else None,
        "gen_ai.input.messages": _dumps([_message(messages[-1])]) if messages else None,
    }


def response_content(message: dict[str, Any]) -> Attributes:
    stop = message.get("stop_reason")
    output = {**_message(message), "finish_reason": stop} if stop else _message(message)
    return {"gen_ai.output.messages": _dumps([output])}


def tool_content(tool_input: dict[str, Any] | str, result: str) -> Attributes:
    arguments = tool_input if isinstance(tool_input, str) else _dumps(tool_input)
    return {"gen_ai.tool.call.arguments": arguments, "gen_ai.tool.call.result": result}


def _message(message: dict[str, Any]) -> dict[str, Any]:
    content = message.get("content")
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
    return {"role": message.get("role"), "parts": [_part(block) for block in blocks]}


def _part(block: dict[str, Any]) -> dict[str, Any]:
    kind = block.get("type")
    if kind == "text":
        return {"type": "text", "content": block.get("text", "")}
    if kind == "thinking":
        return {"type": "reasoning", "content": block.get("thinking", "")}
    if kind == "tool_use":
        return {
            "type": "tool_call",
            "id": block.get("id"),
            "name": block.get("name"),
            "arguments": block.get("input"),
        }
    if kind == "tool_result":
        return {
            "type": "tool_call_response",
            "id": block.get("tool_use_id"),
            "response": block.get("content"),
        }
    return {"type": str(kind)}


def _dumps(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)
