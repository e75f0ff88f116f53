"""flower's stores as the Claude Agent SDK's async ``SessionStore``.

``pip install 'flower[claude]'``, then::

    from claude_agent_sdk import ClaudeAgentOptions
    from flower import open_session_store
    from flower.compat.claude import as_claude_session_store

    options = ClaudeAgentOptions(session_store=as_claude_session_store(open_session_store()))

Any flower store works (sqlite, postgres, jsonfs, a third-party backend). Calls run on
one worker thread per wrapper, so appends from one process keep their order and the
event loop never blocks on disk or network.

``list_session_summaries`` is deliberately absent: the SDK wants an opaque summary
sidecar rewritten on every append, and flower's stores are append-only with no place
for a record that is replaced. Without it the SDK falls back to ``list_sessions`` plus
one ``load`` per session, which is correct, only slower for very long listings.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from flower.core.errors import FlowerError
from flower.core.protocols import SessionStoreBase
from flower.core.records import Entry, SessionKey

MIN_SDK_VERSION = "0.1.64"
"""The first claude-agent-sdk release with the ``SessionStore`` protocol."""

T = TypeVar("T")


class ClaudeSDKMissingError(FlowerError):
    """The Claude Agent SDK is absent, or too old to have ``SessionStore``."""

    exit_code = 2


def check_sdk() -> str:
    """The installed SDK's version; a clear error if it cannot take a session store."""
    try:
        import claude_agent_sdk
    except ImportError as exc:
        raise ClaudeSDKMissingError(
            "the Claude Agent SDK is not installed: pip install 'flower[claude]' "
            f"(claude-agent-sdk >= {MIN_SDK_VERSION})"
        ) from exc
    version = str(getattr(claude_agent_sdk, "__version__", "unknown"))
    has_store = hasattr(claude_agent_sdk, "SessionStore") or hasattr(
        getattr(claude_agent_sdk, "types", None), "SessionStore"
    )
    if not has_store:
        raise ClaudeSDKMissingError(
            f"claude-agent-sdk {version} has no SessionStore; flower's adapter needs "
            f"claude-agent-sdk >= {MIN_SDK_VERSION}: pip install -U 'flower[claude]'"
        )
    return version


def to_flower_key(key: dict[str, Any]) -> SessionKey:
    """The SDK's ``{"project_key", "session_id", "subpath"?}`` -> :class:`SessionKey`."""
    return SessionKey(key["project_key"], key["session_id"], key.get("subpath"))


def to_sdk_key(key: SessionKey) -> dict[str, Any]:
    """:class:`SessionKey` -> the SDK's ``SessionKey`` dict (``subpath`` only when set)."""
    out: dict[str, Any] = {"project_key": key.project_key, "session_id": key.session_id}
    if key.subpath is not None:
        out["subpath"] = key.subpath
    return out


class ClaudeSessionStore:
    """Duck-types ``claude_agent_sdk.SessionStore`` over a synchronous flower store.

    The SDK probes optional methods by their presence, so only those the flower store
    really has are useful; a backend raising ``NotImplementedError`` for ``delete``
    makes ``delete`` fail the same way through this wrapper.
    """

    def __init__(self, store: SessionStoreBase) -> None:
        self.store = store
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="flower-claude")

    async def _call(self, fn: Callable[..., T], *args: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._worker, fn, *args)

    async def append(self, key: dict[str, Any], entries: list[Entry]) -> None:
        """Durable on return; idempotent by ``uuid``; entries without one are appended."""
        await self._call(self.store.append, to_flower_key(key), list(entries))

    async def load(self, key: dict[str, Any]) -> list[Entry] | None:
        return await self._call(self.store.load, to_flower_key(key))

    async def list_sessions(self, project_key: str) -> list[dict[str, Any]]:
        """Main transcripts of ``project_key`` with ``mtime`` in epoch milliseconds."""
        infos = await self._call(self.store.list_sessions, project_key)
        return [{"session_id": i.session_id, "mtime": i.mtime_ms} for i in infos]

    async def delete(self, key: dict[str, Any]) -> None:
        """A main key takes its subagent transcripts with it; an unknown key is no error."""
        await self._call(self.store.delete, to_flower_key(key))

    async def list_subkeys(self, key: dict[str, Any]) -> list[str]:
        main = SessionKey(key["project_key"], key["session_id"])
        return await self._call(self.store.list_subkeys, main)

    def close(self) -> None:
        """Stop the worker thread and close the wrapped store."""
        self._worker.shutdown(wait=True)
        self.store.close()


def as_claude_session_store(store: SessionStoreBase) -> ClaudeSessionStore:
    """Wrap ``store`` for ``ClaudeAgentOptions(session_store=...)``.

    Raises :class:`ClaudeSDKMissingError` when the SDK is missing or older than
    ``MIN_SDK_VERSION``.
    """
    check_sdk()
    return ClaudeSessionStore(store)
