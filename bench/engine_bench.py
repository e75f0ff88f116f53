"""Per-turn overhead of the engine (persistence + bookkeeping), API time excluded.

Both loops talk to the same FakeMessagesAPI through the real ``anthropic`` SDK and get
the same replies (a tool call to a tool the agent may not use, so the tool itself costs
nothing, then a final text):

- raw: the SDK alone, streaming each response and keeping the messages in memory;
- engine: ``Runtime.run`` with the SQLite store, writing two entries per turn.

The difference divided by the number of turns is what flower adds per turn.

    python bench/engine_bench.py --turns 200 --repeat 3
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import anthropic
import msgspec

from flower.core.config import ResilienceConfig, SessionsConfig, Settings
from flower.core.resilience import Resilience
from flower.runtime import loop as loop_module
from flower.runtime.engine import Runtime
from flower.runtime.spec import AgentSpec
from flower.runtime.tools import ToolBox
from flower.testing.fake_api import FakeMessagesAPI, RecordedRequest, Reply, reply, text, tool_use

MODEL = "claude-sonnet-4-6"
DENIED = (
    "Permission denied: the tool {name} is not in allowed_tools for this agent (allowed: none)."
)
"""The engine's answer to a call of a tool the agent may not use: the raw loop sends it
too, so both loops send the same requests."""


def script(turns: int) -> Any:
    def answer(request: RecordedRequest) -> Reply:
        if len(request.messages) >= 2 * turns - 1:
            return text("done")
        return reply("working", tool_use("Bash", {"command": "true"}))

    return answer


async def raw_loop(client: anthropic.AsyncAnthropic, turns: int) -> None:
    """The same requests the engine sends (tools, system), without flower."""
    tools = ToolBox(Path.cwd(), []).definitions()
    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    while True:
        stream = await client.messages.create(
            model=MODEL,
            max_tokens=1000,
            messages=messages,
            stream=True,
            tools=tools,
            system=[{"type": "text", "text": "bench", "cache_control": {"type": "ephemeral"}}],
        )
        content: list[dict[str, Any]] = []
        partial_json: list[str] = []
        stop = None
        async for event in stream:
            if event.type == "content_block_start":
                content.append(event.content_block.model_dump(exclude_none=True))
                partial_json = []
            elif event.type == "content_block_delta" and event.delta.type == "text_delta":
                content[-1]["text"] += event.delta.text
            elif event.type == "content_block_delta" and event.delta.type == "input_json_delta":
                partial_json.append(event.delta.partial_json)
            elif event.type == "content_block_stop" and partial_json:
                content[-1]["input"] = json.loads("".join(partial_json))
            elif event.type == "message_delta":
                stop = event.delta.stop_reason
        messages.append({"role": "assistant", "content": content})
        if stop != "tool_use":
            return
        uses = [b for b in content if b["type"] == "tool_use"]
        messages.append(
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": u["id"],
                        "content": DENIED.format(name=u["name"]),
                        "is_error": True,
                    }
                    for u in uses
                ],
            }
        )


class Up:
    def reachable(self, host: str, port: int, timeout: float) -> bool:
        return True


API_SECONDS = [0.0]


def instrument_api_time() -> None:
    """Count the time spent inside each API call (request, stream, SDK parsing)."""
    original = loop_module.stream_response

    async def timed_call(*args: Any, **kw: Any) -> Any:
        started = time.perf_counter()
        try:
            return await original(*args, **kw)
        finally:
            API_SECONDS[0] += time.perf_counter() - started

    loop_module.stream_response = timed_call  # type: ignore[assignment]


async def engine_loop(rt: Runtime, turns: int) -> None:
    agent = AgentSpec("bench", "bench", allowed_tools=[], max_turns=turns + 1, model=MODEL)
    result = await rt.run(agent, "go")
    assert result.ok and result.num_turns == turns, result


def timed(coro_factory: Any) -> float:
    started = time.perf_counter()
    asyncio.run(coro_factory())
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    turns = args.turns

    with tempfile.TemporaryDirectory() as tmp, FakeMessagesAPI(script(turns)) as fake:
        root = Path(tmp)
        os.environ.update(fake.env())
        settings = msgspec.structs.replace(
            Settings(run_dir=str(root / "runs")),
            sessions=SessionsConfig(backend="sqlite", url=f"sqlite:///{root}/runs/sessions.db"),
        )
        client = anthropic.AsyncAnthropic(max_retries=0)
        resilience = Resilience(ResilienceConfig(), prober=Up(), base_url=fake.base_url)
        rt = Runtime(root, root / "runs", settings=settings, client=client, resilience=resilience)
        rt.store.list_sessions(rt.project_key)  # create the database outside the timing

        instrument_api_time()
        raw_times, engine_times, outside_api = [], [], []
        for _ in range(args.repeat):
            raw_times.append(timed(lambda: raw_loop(client, turns)))
            API_SECONDS[0] = 0.0
            engine_times.append(timed(lambda: engine_loop(rt, turns)))
            outside_api.append(engine_times[-1] - API_SECONDS[0])
        rt.close()

    def ms(seconds: float) -> str:
        return f"{seconds / turns * 1000:.2f} ms/turn"

    raw, engine = statistics.median(raw_times), statistics.median(engine_times)
    print(f"turns per run: {turns}, runs: {args.repeat} (medians)")
    print(f"raw SDK loop:             {ms(raw)}")
    print(f"engine, sqlite:           {ms(engine)}")
    print(f"difference engine - raw:  {ms(engine - raw)}")
    print(
        f"engine time outside API:  {ms(statistics.median(outside_api))} "
        f"(best {ms(min(outside_api))}; target < 2 ms)"
    )


if __name__ == "__main__":
    main()
