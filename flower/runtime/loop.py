"""The messages loop: stream a response, persist it, run its tools, go on.

The stream is read as raw events and assembled here rather than by the SDK's stream
helper, because the helper raises on tool input that is not valid JSON while flower
must hand that raw text to the tool box (which answers the model with an error).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from flower.core.errors import FlowerError
from flower.core.i18n import N_, _
from flower.core.telemetry import OFF, Tracing
from flower.runtime import genai
from flower.runtime.events import Event, TextDelta, ToolCall, ToolResult, TurnEnd
from flower.runtime.persist import TranscriptWriter
from flower.runtime.pricing import cost_of
from flower.runtime.spec import STOP_CONTEXT_LIMIT, STOP_MAX_TOKENS, STOP_MAX_TURNS

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic
    from anthropic.types import RawContentBlockDelta, RawMessageDeltaEvent, RawMessageStreamEvent

    from flower.runtime.tools.base import ToolOutcome

CACHE = {"type": "ephemeral"}
# flower's words to the model, made when the request is built: in the wake's language
MAX_TOKENS_NUDGE = N_(
    "Your previous reply was cut off at the max_tokens limit. Continue exactly where it "
    "stopped, without repeating what you already wrote."
)
TRUNCATED_TOOL_USE = N_(
    "Not run: your reply was cut off at the max_tokens limit, so this tool input may be "
    "incomplete. Send the call again."
)
_NOT_CACHEABLE = frozenset({"thinking", "redacted_thinking"})


class IncompleteResponseError(FlowerError, ConnectionError):
    """The response stream ended before ``message_stop`` (connection closed midway)."""


# --------------------------------------------------------------------------- stream


@dataclass
class Response:
    """One assembled API response."""

    message: dict[str, Any]
    request_id: str | None
    raw_inputs: dict[str, str] = field(default_factory=dict)
    """tool_use id -> the input text, for inputs that were not a JSON object."""
    limits: dict[str, str] = field(default_factory=dict)
    """The API's ``anthropic-ratelimit-*`` headers of this response."""

    @property
    def stop_reason(self) -> str | None:
        return self.message.get("stop_reason")

    @property
    def tool_uses(self) -> list[dict[str, Any]]:
        return [b for b in self.message["content"] if b.get("type") == "tool_use"]

    @property
    def text(self) -> str:
        return "".join(b["text"] for b in self.message["content"] if b.get("type") == "text")


class _Assembler:
    """Raw stream events -> the message dict the API would have returned whole."""

    def __init__(self, emit: Callable[[Event], None]) -> None:
        self.emit = emit
        self.message: dict[str, Any] | None = None
        self.blocks: dict[int, dict[str, Any]] = {}
        self.parts: dict[int, list[str]] = {}
        self.raw_inputs: dict[str, str] = {}
        self.complete = False

    def feed(self, event: RawMessageStreamEvent) -> None:
        if event.type == "content_block_delta":
            self._delta(event.index, event.delta)
        elif event.type == "message_start":
            message = event.message
            self.message = {
                "id": message.id,
                "type": "message",
                "role": "assistant",
                "model": message.model,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": message.usage.model_dump(exclude_none=True),
            }
        elif event.type == "content_block_start":
            self.blocks[event.index] = event.content_block.model_dump(exclude_none=True)
            self.parts[event.index] = []
        elif event.type == "content_block_stop":
            self._finish_block(event.index)
        elif event.type == "message_delta":
            self._message_delta(event)
        elif event.type == "message_stop":
            self.complete = True

    def _delta(self, index: int, delta: RawContentBlockDelta) -> None:
        if delta.type == "text_delta":
            self.parts[index].append(delta.text)
            self.emit(TextDelta(delta.text))
        elif delta.type == "input_json_delta":
            self.parts[index].append(delta.partial_json)
        elif delta.type == "thinking_delta":
            self.parts[index].append(delta.thinking)
        elif delta.type == "signature_delta":
            self.blocks[index]["signature"] = delta.signature

    def _finish_block(self, index: int) -> None:
        block = self.blocks.pop(index)
        joined = "".join(self.parts.pop(index, []))
        kind = block.get("type")
        if kind == "text":
            block["text"] = block.get("text", "") + joined
            if not block["text"]:
                return  # the API rejects empty text blocks when they are sent back
        elif kind == "thinking":
            block["thinking"] = block.get("thinking", "") + joined
        elif kind in ("tool_use", "server_tool_use"):
            block["input"] = self._tool_input(block, joined)
        assert self.message is not None
        self.message["content"].append(block)

    def _tool_input(self, block: dict[str, Any], raw: str) -> dict[str, Any]:
        if not raw.strip():
            return dict(block.get("input") or {})
        try:
            parsed = json.loads(raw)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            return parsed
        self.raw_inputs[block["id"]] = raw
        return {}

    def _message_delta(self, event: RawMessageDeltaEvent) -> None:
        assert self.message is not None
        self.message["stop_reason"] = event.delta.stop_reason
        self.message["stop_sequence"] = event.delta.stop_sequence
        for name, value in event.usage.model_dump(exclude_none=True).items():
            self.message["usage"][name] = value


RATELIMIT = "anthropic-ratelimit-"


async def stream_response(
    client: AsyncAnthropic, params: dict[str, Any], emit: Callable[[Event], None]
) -> Response:
    """One streamed Messages API call, assembled; raises on any failure or a cut stream."""
    stream = await client.messages.create(**params, stream=True)
    assembler = _Assembler(emit)
    try:
        async for event in stream:
            assembler.feed(event)
    except json.JSONDecodeError as exc:
        # the SDK parses each event's data; JSON cut short is damage on the wire (a
        # broken proxy), worth a retry like a cut stream, not a failure of flower
        raise IncompleteResponseError(
            _("the response stream carried an event that is not valid JSON ({error})").format(
                error=exc
            )
        ) from exc
    finally:
        await stream.close()
    if not assembler.complete or assembler.message is None:
        raise IncompleteResponseError(
            _("connection closed before the response was complete (no message_stop)")
        )
    headers = stream.response.headers
    limits = {k.lower(): v for k, v in headers.items() if k.lower().startswith(RATELIMIT)}
    return Response(assembler.message, headers.get("request-id"), assembler.raw_inputs, limits)


# --------------------------------------------------------------------------- messages


def push(messages: list[dict[str, Any]], role: str, content: list[dict[str, Any]]) -> None:
    """Append a message, merging into the last one when it has the same role.

    Merging builds a new content list, so the blocks shared with stored entries are
    never mutated.
    """
    if not content:
        return
    if messages and messages[-1]["role"] == role:
        previous = messages[-1]
        messages[-1] = {"role": role, "content": [*_as_blocks(previous["content"]), *content]}
    else:
        messages.append({"role": role, "content": list(content)})


def _as_blocks(content: str | list[dict[str, Any]]) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return list(content)


def _with_cache_mark(message: dict[str, Any]) -> dict[str, Any]:
    blocks = _as_blocks(message["content"])
    for i in range(len(blocks) - 1, -1, -1):
        if blocks[i].get("type") not in _NOT_CACHEABLE:
            blocks[i] = {**blocks[i], "cache_control": CACHE}
            return {"role": message["role"], "content": blocks}
    return message


def cached_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A copy with cache breakpoints on the last message and on the user message before
    it, so each request writes the prefix cache the next one reads (copies, never the
    stored blocks)."""
    out = list(messages)
    if not out:
        return out
    out[-1] = _with_cache_mark(out[-1])
    for i in range(len(out) - 2, -1, -1):
        if out[i]["role"] == "user":
            out[i] = _with_cache_mark(out[i])
            break
    return out


# --------------------------------------------------------------------------- the loop


@dataclass
class Tally:
    """What a step has spent so far, across attempts."""

    turns: int = 0
    cost_usd: float | None = 0.0
    last_usage: dict[str, Any] = field(default_factory=dict)
    last_text: str = ""
    context: int | None = None
    """Context of the last request answered (its usage), None before the first."""
    growth: int = 0
    """The largest growth of the context between two requests seen in this run."""
    pending: int = 0
    """Tokens appended since the last request: its output plus the tool results."""

    def expected_growth(self, limit: int = 0) -> int:
        """Tokens the next turn is expected to add: the largest growth seen, what was
        appended since the last request, and at least 1% of ``limit``."""
        return max(self.growth, self.pending, limit // 100)

    def would_pass(self, limit: int) -> bool:
        """Whether the next request, and one more turn after it, could reach ``limit``.

        The room for one more turn is what a relay needs: the handoff document is asked
        for in this same session, one request later.
        """
        if self.context is None:
            return False
        return self.context + 2 * self.expected_growth(limit) >= limit


@dataclass
class LoopOutcome:
    ok: bool
    error: str | None = None
    stop: str | None = None


@dataclass
class Conversation:
    """Everything the loop needs for one attempt."""

    client: AsyncAnthropic
    writer: TranscriptWriter
    messages: list[dict[str, Any]]
    model: str
    system: str
    max_tokens: int
    max_turns: int
    toolbox: Any
    tools: list[dict[str, Any]]
    price: Any
    emit: Callable[[Event], None]
    tally: Tally
    context_limit: int | None = None
    tracing: Tracing = OFF
    resilience: Any = None
    """The :class:`~flower.core.resilience.Resilience` whose gate every call passes."""

    @property
    def session_id(self) -> str:
        return self.writer.key.session_id

    def params(self) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "messages": cached_messages(self.messages),
        }
        if self.system:
            params["system"] = [{"type": "text", "text": self.system, "cache_control": CACHE}]
        if self.tools:
            params["tools"] = self.tools
        return params


async def converse(conv: Conversation) -> LoopOutcome:
    """Call the model until it ends its turn, stops, or ``max_turns`` is reached."""
    cut_off = False
    while True:
        if conv.tally.turns >= conv.max_turns:
            return LoopOutcome(
                False,
                _("stopped at max_turns={max_turns} before the agent finished").format(
                    max_turns=conv.max_turns
                ),
                stop=STOP_MAX_TURNS,
            )
        # Checked here, at the top, so it only ever runs between turns: every tool_use
        # of the last response already has its tool_result in the transcript.
        if conv.context_limit is not None and conv.tally.would_pass(conv.context_limit):
            tally = conv.tally
            return LoopOutcome(
                False,
                _(
                    "stopped before the context passed context_limit={limit:,} tokens "
                    "(last request {context:,}, about {growth:,} more per turn); "
                    "relay to a new session"
                ).format(
                    limit=conv.context_limit,
                    context=tally.context,
                    growth=tally.expected_growth(conv.context_limit),
                ),
                stop=STOP_CONTEXT_LIMIT,
            )
        response = await _request(conv)
        conv.tally.turns += 1
        entry = conv.writer.assistant(response.message, response.request_id)
        _account(conv, response)
        push(conv.messages, "assistant", response.message["content"])
        stop = response.stop_reason
        if stop == "max_tokens":
            if cut_off:
                return LoopOutcome(
                    False,
                    _(
                        "the reply hit max_tokens={max_tokens} twice in a row; "
                        "raise AgentSpec.max_tokens"
                    ).format(max_tokens=conv.max_tokens),
                    stop=STOP_MAX_TOKENS,
                )
            cut_off = True
            await _answer_cut_off(conv, response, entry["uuid"])
            continue
        cut_off = False
        if stop == "tool_use" and response.tool_uses:
            await _run_tools(conv, response, entry["uuid"])
        elif stop == "pause_turn":
            continue
        elif stop in ("end_turn", "stop_sequence", "tool_use"):
            return LoopOutcome(True)
        elif stop == "refusal":
            refused = _("the model refused to continue (stop_reason=refusal)")
            if response.text:  # the model's own words, as it wrote them
                refused = _("{error}: {reply}").format(error=refused, reply=response.text)
            return LoopOutcome(False, refused)
        elif stop == "model_context_window_exceeded":
            return LoopOutcome(
                False,
                _(
                    "the conversation no longer fits the model's context window; "
                    "start a new session or relay"
                ),
            )
        else:
            return LoopOutcome(False, _("unexpected stop_reason {stop}").format(stop=repr(stop)))


async def _request(conv: Conversation) -> Response:
    """One Messages API request, inside its ``chat`` span."""
    tracing = conv.tracing
    attributes = genai.chat_attributes(conv.model, conv.max_tokens, conv.session_id)
    with tracing.span(f"chat {conv.model}", attributes, kind="client") as span:
        if tracing.capture_content:
            span.set(genai.request_content(conv.system, conv.messages))
        params = conv.params()
        gate = conv.resilience if getattr(conv.resilience, "gate", None) is not None else None
        ticket = None
        if gate is not None:
            ticket = await gate.admit(*_expected_tokens(conv, params))
        try:
            response = await stream_response(conv.client, params, conv.emit)
        except Exception as exc:  # recorded and marked failed as it leaves the span
            span.set(genai.error_attributes(exc))
            raise
        span.set(genai.response_attributes(response.message, response.request_id))
        if tracing.capture_content:
            span.set(genai.response_content(response.message))
    if gate is not None:
        usage = response.message.get("usage") or {}
        gate.settle(ticket, usage, response.limits, cost_of(usage, conv.price))
    return response


def _expected_tokens(conv: Conversation, params: dict[str, Any]) -> tuple[int, int]:
    """(input, output) tokens the next request will likely count against a budget: the
    last request's uncached input and the growth since, else about four bytes a token;
    the last reply's length, else a quarter of ``max_tokens``."""
    last = conv.tally.last_usage
    if last:
        written = last.get("cache_creation_input_tokens") or 0
        sent = int(last.get("input_tokens") or 0) + int(written)
        input_tokens = max(sent, 1) + max(conv.tally.growth, 0)
    else:
        input_tokens = _estimate(params["messages"]) + len(conv.system) // 4
    pending = conv.tally.pending or conv.max_tokens // 4
    return max(input_tokens, 1), max(min(pending, conv.max_tokens), 1)


def _account(conv: Conversation, response: Response) -> None:
    from flower.core.transcript.usage import context_tokens

    usage = response.message.get("usage") or {}
    cost = cost_of(usage, conv.price)
    tally = conv.tally
    tally.last_usage = usage
    context = context_tokens(usage)
    if tally.context is not None:
        tally.growth = max(tally.growth, context - tally.context)
    tally.context = context
    output = usage.get("output_tokens")
    tally.pending = output if isinstance(output, int) and not isinstance(output, bool) else 0
    if response.text:
        tally.last_text = response.text
    tally.cost_usd = None if cost is None or tally.cost_usd is None else tally.cost_usd + cost
    conv.emit(TurnEnd(response.stop_reason, usage, cost))


async def _run_tools(conv: Conversation, response: Response, assistant_uuid: str) -> None:
    blocks: list[dict[str, Any]] = []
    for use in response.tool_uses:
        tool_input = response.raw_inputs.get(use["id"], use.get("input") or {})
        conv.emit(ToolCall(use["id"], use["name"], tool_input))
        outcome = await _tool(conv, use["name"], use["id"], tool_input)
        conv.emit(
            ToolResult(use["id"], use["name"], outcome.content, outcome.is_error, outcome.denied)
        )
        block = {
            "type": "tool_result",
            "tool_use_id": use["id"],
            "content": outcome.content,
            "is_error": outcome.is_error,
        }
        # stored the moment the tool is done, one entry each (as Claude Code does): a
        # process killed during the next tool loses only what that tool was doing
        conv.writer.tool_results(assistant_uuid, [block], [outcome.result])
        blocks.append(block)
    push(conv.messages, "user", blocks)
    conv.tally.pending += _estimate(blocks)


async def _tool(
    conv: Conversation, name: str, tool_use_id: str, tool_input: dict[str, Any] | str
) -> ToolOutcome:
    """One tool call, inside its ``execute_tool`` span."""
    attributes = genai.tool_attributes(name, tool_use_id, conv.session_id)
    with conv.tracing.span(f"execute_tool {name}", attributes) as span:
        outcome = await conv.toolbox.run(name, tool_input)
        span.set({"flower.tool.denied": outcome.denied})
        if conv.tracing.capture_content:
            span.set(genai.tool_content(tool_input, outcome.content))
        if outcome.is_error:
            kind = "denied" if outcome.denied else "tool_error"
            span.fail("the tool answered with an error", kind)
    return outcome


def _estimate(blocks: list[dict[str, Any]]) -> int:
    """Tokens of ``blocks`` as sent: about four bytes of JSON per token (an estimate)."""
    return len(json.dumps(blocks, ensure_ascii=False).encode("utf-8")) // 4


async def _answer_cut_off(conv: Conversation, response: Response, assistant_uuid: str) -> None:
    """Continue once after max_tokens: truncated tool calls get an error, text a nudge."""
    if response.tool_uses:
        not_run = _(TRUNCATED_TOOL_USE)
        blocks = [
            {"type": "tool_result", "tool_use_id": use["id"], "content": not_run, "is_error": True}
            for use in response.tool_uses
        ]
        results = [{"error": not_run, "tool": use["name"]} for use in response.tool_uses]
        conv.writer.tool_results(assistant_uuid, blocks, results)
        push(conv.messages, "user", blocks)
        conv.tally.pending += _estimate(blocks)
    else:
        words = _(MAX_TOKENS_NUDGE)
        nudge = [{"type": "text", "text": words}]
        conv.writer.user_prompt(words)
        push(conv.messages, "user", nudge)
        conv.tally.pending += _estimate(nudge)
