"""The peers, driven the way their own users persist an agent conversation.

- OpenAI Agents SDK sessions store Responses API *items*. Each entry becomes the items
  an Agents app would store (an assistant ``message`` per text block, a
  ``function_call`` per tool_use, a ``function_call_output`` per tool_result); what
  has no Responses field (the entry envelope: uuid, timestamps, usage...) rides in an
  ``x_flower`` key on the entry's first item, so loading converts back to the exact
  entries and the bytes stored are comparable.
- LangGraph persists state as checkpoints: a graph with a ``messages`` channel saves,
  every superstep, the node's writes (``put_writes``) and then a checkpoint whose
  channel values hold the *whole* messages list, with the channel's version bumped
  by the saver's ``get_next_version`` (what ``langgraph``'s Pregel loop does).
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.skipped import BENCH_EXTRA, Skipped
from bench.transcript_bench import System
from bench.workload import SESSION_ID, Entry

INSTALL = {
    "agents-sqlite": f'pip install "openai-agents>=0.2"  (or {BENCH_EXTRA})',
    "agents-sqlalchemy": (
        f'pip install "openai-agents>=0.2" "sqlalchemy[asyncio]" aiosqlite  (or {BENCH_EXTRA})'
    ),
    "langgraph": f'pip install "langgraph-checkpoint-sqlite>=2"  (or {BENCH_EXTRA})',
}


def make(name: str, folder: Path) -> System:
    try:
        if name == "agents-sqlite":
            return AgentsSQLiteSession(folder)
        if name == "agents-sqlalchemy":
            return AgentsSQLAlchemySession(folder)
        if name == "langgraph":
            return LangGraphSaver(folder)
    except ImportError as exc:
        raise Skipped(f"not installed ({exc.name or exc})", INSTALL[name]) from exc
    raise ValueError(f"unknown peer {name!r}")


# --------------------------------------------------------------------------- items


def _block_to_item(role: str, block: Any) -> dict[str, Any]:
    if not isinstance(block, dict):
        return {"type": "x_block", "block": block}
    kind = block.get("type")
    if kind == "text" and set(block) == {"type", "text"}:
        part = "output_text" if role == "assistant" else "input_text"
        return {"type": "message", "role": role, "content": [{"type": part, "text": block["text"]}]}
    if kind == "tool_use" and set(block) == {"type", "id", "name", "input"}:
        return {
            "type": "function_call",
            "call_id": block["id"],
            "name": block["name"],
            "arguments": json.dumps(block["input"]),
        }
    if kind == "tool_result" and set(block) <= {"type", "tool_use_id", "content", "is_error"}:
        item = {
            "type": "function_call_output",
            "call_id": block["tool_use_id"],
            "output": block.get("content"),
        }
        if "is_error" in block:
            item["x_is_error"] = block["is_error"]
        return item
    return {"type": "x_block", "block": block}


def _item_to_block(item: dict[str, Any]) -> Any:
    kind = item["type"]
    if kind == "message":
        return {"type": "text", "text": item["content"][0]["text"]}
    if kind == "function_call":
        return {
            "type": "tool_use",
            "id": item["call_id"],
            "name": item["name"],
            "input": json.loads(item["arguments"]),
        }
    if kind == "function_call_output":
        block = {"type": "tool_result", "tool_use_id": item["call_id"], "content": item["output"]}
        if "x_is_error" in item:
            block["is_error"] = item["x_is_error"]
        return block
    return item["block"]


def entry_to_items(entry: Entry) -> list[dict[str, Any]]:
    message = entry.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, list):
        return [{"type": "x_entry", "x_flower": entry}]
    role = message.get("role") or entry.get("type") or "user"
    envelope = dict(entry)
    envelope["message"] = {k: v for k, v in message.items() if k != "content"}
    items = [_block_to_item(role, block) for block in content]
    if not items:
        return [{"type": "x_entry", "x_flower": envelope, "x_empty": True}]
    items[0] = {**items[0], "x_flower": envelope}
    return items


def items_to_entries(items: list[dict[str, Any]]) -> list[Entry]:
    entries: list[Entry] = []
    for item in items:
        envelope = item.get("x_flower")
        if item["type"] == "x_entry":
            entry = dict(envelope)
            if item.get("x_empty"):
                entry["message"] = {**entry["message"], "content": []}
            entries.append(entry)
            continue
        if envelope is not None:
            entry = dict(envelope)
            entry["message"] = {**entry["message"], "content": []}
            entries.append(entry)
        entries[-1]["message"]["content"].append(_item_to_block(item))
    return entries


def _batch_items(batch: list[Entry]) -> list[dict[str, Any]]:
    return [item for entry in batch for item in entry_to_items(entry)]


# --------------------------------------------------------------------------- agents


class _AgentsSession:
    """An Agents app holds Responses items already: ``prepare`` and ``to_entries``
    convert outside the timed region (see :func:`bench.compare.native_batches`)."""

    def __init__(self) -> None:
        self.runner = asyncio.Runner()
        self.session: Any = None

    def warm_up(self) -> None:
        """Open what the first call would (event loop, worker thread, connection,
        tables) before timing starts, as flower's store is open before its first append."""
        if self.runner.run(self.session.get_items()):
            raise AssertionError("a new session is not empty")

    def _warm_or_close(self) -> None:
        try:
            self.warm_up()
        except BaseException:
            self.close()
            raise

    prepare = staticmethod(_batch_items)
    to_entries = staticmethod(items_to_entries)

    def append(self, items: list[dict[str, Any]]) -> None:
        self.runner.run(self.session.add_items(items))

    def load(self) -> list[dict[str, Any]]:
        return self.runner.run(self.session.get_items())


class AgentsSQLiteSession(_AgentsSession):
    def __init__(self, folder: Path) -> None:
        from agents import SQLiteSession

        super().__init__()
        self.session = SQLiteSession(SESSION_ID, folder / "agents.db")
        self._warm_or_close()

    def close(self) -> None:
        self.session.close()
        self.runner.close()


class AgentsSQLAlchemySession(_AgentsSession):
    def __init__(self, folder: Path) -> None:
        import aiosqlite  # noqa: F401  (the driver the URL names)
        from agents.extensions.memory.sqlalchemy_session import SQLAlchemySession

        super().__init__()
        self.session = SQLAlchemySession.from_url(
            SESSION_ID, url=f"sqlite+aiosqlite:///{folder}/agents.db", create_tables=True
        )
        self._warm_or_close()

    def close(self) -> None:
        self.runner.run(self.session._engine.dispose())
        self.runner.close()


# --------------------------------------------------------------------------- langgraph


class LangGraphSaver:
    """One superstep per turn: the node's writes, then the full-state checkpoint."""

    NODE = "agent"

    def __init__(self, folder: Path) -> None:
        from langgraph.checkpoint.base import LATEST_VERSION
        from langgraph.checkpoint.base.id import uuid6
        from langgraph.checkpoint.sqlite import SqliteSaver

        self._uuid6 = uuid6
        self._format = LATEST_VERSION
        self.conn = sqlite3.connect(folder / "checkpoints.sqlite", check_same_thread=False)
        self.saver = SqliteSaver(self.conn)
        self.saver.setup()
        self.config: dict[str, Any] = {
            "configurable": {"thread_id": SESSION_ID, "checkpoint_ns": ""}
        }
        self.messages: list[Entry] = []
        self.version: Any = None
        self.step = -1

    def append(self, batch: list[Entry]) -> None:
        self.step += 1
        if self.step > 0:  # the task's writes land on the checkpoint it starts from
            self.saver.put_writes(self.config, [("messages", batch)], f"task-{self.step}")
        seen = self.version
        self.version = self.saver.get_next_version(self.version, None)
        self.messages = [*self.messages, *batch]  # add_messages returns a new list
        checkpoint = {
            "v": self._format,
            "id": str(self._uuid6(clock_seq=self.step)),
            "ts": datetime.now(UTC).isoformat(),
            "channel_values": {"messages": self.messages},
            "channel_versions": {"messages": self.version},
            "versions_seen": {self.NODE: {"messages": seen}} if seen else {},
            "updated_channels": ["messages"],
        }
        metadata = {"source": "loop", "step": self.step, "parents": {}}
        self.config = self.saver.put(self.config, checkpoint, metadata, {"messages": self.version})

    def load(self) -> list[Entry]:
        config = {"configurable": {"thread_id": SESSION_ID, "checkpoint_ns": ""}}
        found = self.saver.get_tuple(config)
        if found is None:
            return []
        return list(found.checkpoint["channel_values"].get("messages", []))

    def close(self) -> None:
        self.conn.close()
