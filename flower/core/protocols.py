"""The small core: what a session store, a lineage store, a prober and a pruning
policy must do. Plain synchronous ``typing.Protocol``s; see docs/stores.md.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from flower.core.records import (
    Entry,
    Leftover,
    LineageMismatch,
    LineageRecord,
    SessionInfo,
    SessionKey,
)


@runtime_checkable
class SessionStore(Protocol):
    """Append-only transcripts keyed like the Claude Agent SDK's ``SessionStore``.

    ``append`` (durable on return, order kept, idempotent by entry ``uuid``, an empty
    batch is a no-op) and ``load`` (deep-equal to what was appended, ``None`` for an
    unknown key). The store keeps everything as written; nothing is rewritten.

    This is the half the SDK shares; flower's runtime, CLI and ``flower.open_session_store``
    need the whole contract, which is :class:`SessionStoreBase`: a flower backend
    subclasses it.
    """

    def append(self, key: SessionKey, entries: Sequence[Entry]) -> None: ...

    def load(self, key: SessionKey) -> list[Entry] | None: ...


class SessionStoreBase:
    """The whole session store contract flower runs on; every backend subclasses it.

    Required (raise ``NotImplementedError`` here; a backend overrides each):
    ``append``, ``load``, ``list_sessions``, ``list_projects``, ``delete``,
    ``set_modified``, ``list_subkeys``.

    Optional (a working default built on the required ones; override for speed, or
    where the store has something to say): ``iter_entries``, ``exists``,
    ``find_session``, ``last_usage``, ``leftovers``, ``remove_leftover``, ``close``.

    :func:`flower.testing.contract.check_session_store` has cases for every method.
    """

    def append(self, key: SessionKey, entries: Sequence[Entry]) -> None:
        raise NotImplementedError

    def load(self, key: SessionKey) -> list[Entry] | None:
        raise NotImplementedError

    def iter_entries(self, key: SessionKey) -> Iterator[Entry]:
        """Stream a transcript in order (bounded memory where the backend allows)."""
        yield from self.load(key) or []

    def list_sessions(self, project_key: str) -> list[SessionInfo]:
        raise NotImplementedError

    def list_projects(self) -> list[str]:
        raise NotImplementedError

    def delete(self, key: SessionKey) -> None:
        raise NotImplementedError

    def set_modified(self, key: SessionKey, mtime_ms: int) -> None:
        """Set the modification time ``list_sessions`` reports for the main transcript
        of ``key`` (a copy keeps a session's age with it, for ``gc --older-than``)."""
        raise NotImplementedError

    def list_subkeys(self, key: SessionKey) -> list[str]:
        raise NotImplementedError

    def exists(self, key: SessionKey) -> bool:
        return self.load(key) is not None

    def find_session(self, session_id: str) -> SessionKey | None:
        """The main key of ``session_id`` in any project, for the CLI's ``ID`` args; in
        several projects, the most recently modified one (the first project on a tie)."""
        found = [
            SessionKey(project, session_id)
            for project in self.list_projects()
            if self.exists(SessionKey(project, session_id))
        ]
        if len(found) < 2:
            return found[0] if found else None

        def modified(key: SessionKey) -> int:
            infos = self.list_sessions(key.project_key)
            return max((i.mtime_ms for i in infos if i.session_id == session_id), default=0)

        times = [modified(key) for key in found]
        return found[times.index(max(times))]  # the first project on a tie

    def last_usage(self, key: SessionKey) -> dict[str, Any] | None:
        """``message.usage`` of the last assistant entry the API answered (synthetic
        API-error entries do not count), or ``None``."""
        from flower.core.entries import reported_usage

        for entry in reversed(self.load(key) or []):
            usage = reported_usage(entry)
            if usage:
                return usage
        return None

    def leftovers(self, older_than: float, now: float) -> list[Leftover]:
        """Files a killed writer left that hold no transcript, last written more than
        ``older_than`` seconds before ``now`` and held by no writer at work; ``[]`` for
        a store that leaves none (a database rolls back what it did not commit)."""
        return []

    def remove_leftover(self, leftover: Leftover) -> bool:
        """Remove one of :meth:`leftovers` if it is still as listed and no writer holds
        it; False when it is left alone (a writer took it, it changed, it is gone)."""
        return False

    def close(self) -> None:
        """Release connections and file handles; the store is unusable afterwards."""

    def __enter__(self) -> SessionStoreBase:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@runtime_checkable
class LineageStore(Protocol):
    """Which session each step of a workspace used (the seed's ``lineage.json``).

    Required: ``load``, ``save``, ``archive``. Optional, each its own protocol checked
    with ``isinstance``: :class:`MergingLineageStore` (``update``, the multi-process
    merge), :class:`MismatchLineageStore` (``mismatch``, why nothing loads) and
    :class:`FencingLineageStore` (``fences_writes``: it checks a fleet wake's lease
    itself; else flower does, around each write). Both built-in stores implement all.
    """

    def load(self, workspace: str) -> LineageRecord | None:
        """The record for ``workspace``; ``None`` when absent, corrupt or for another path."""
        ...

    def save(self, record: LineageRecord) -> None:
        """Atomic: a reader sees the old record or the new one, never half."""
        ...

    def archive(self, into: Path, extra: Sequence[Path] = ()) -> Path | None:
        """Move the record and ``extra`` files together into ``into``; reset the record."""
        ...


@runtime_checkable
class MergingLineageStore(LineageStore, Protocol):
    """A lineage store several processes can share without losing each other's steps."""

    def update(
        self, workspace: str, change: Callable[[LineageRecord | None], LineageRecord]
    ) -> LineageRecord:
        """Save ``change(the record as stored now)`` under a lock held across processes
        and return what was saved; without it :class:`~flower.core.lineage.Lineage`
        calls ``save`` and the last writer's record wins."""
        ...


@runtime_checkable
class MismatchLineageStore(LineageStore, Protocol):
    """A lineage store that can say why ``load`` finds nothing where something is."""

    def mismatch(self, workspace: str) -> LineageMismatch | None:
        """``None`` when nothing is stored or the record is ``workspace``'s; else what is
        there: ``"moved"`` (a record of another path) or ``"unreadable"``. Without it a
        wake cannot set a moved or broken record aside before writing its own."""
        ...


@runtime_checkable
class FencingLineageStore(LineageStore, Protocol):
    """A lineage store that checks a fleet wake's lease itself on every write.

    Every write of a fleet wake is fenced (:mod:`flower.core.lease`): refused, with
    :class:`~flower.core.lease.LeaseLostError` and nothing written, once another worker
    took the task over. :class:`~flower.core.lineage.Lineage` runs each ``save``,
    ``update`` and ``archive`` of a store inside :func:`~flower.core.lease.fenced`
    (the session store's write transaction that checks the lease), unless the store
    says it fences its own writes: each goes through ``fenced`` or checks the token in
    its own transaction (a store whose data lives in the sessions' SQLite database must:
    a second writer of that file would wait for the fence's transaction to end)."""

    fences_writes: Literal[True]


@runtime_checkable
class Prober(Protocol):
    """Is the API endpoint reachable? Never raises: any failure means ``False``."""

    def reachable(self, host: str, port: int, timeout: float) -> bool: ...


@dataclass(frozen=True)
class GateAnswer:
    """A :class:`CallGate`'s answer: a ``ticket`` (the call may go now), or ``wait``
    seconds before asking again; ``parked_until`` (epoch seconds) when the wait is a
    rate limit the API named, which every caller of the gate waits out."""

    ticket: object = None
    wait: float = 0.0
    parked_until: float | None = None


@runtime_checkable
class CallGate(Protocol):
    """Asked before every model call; a shared budget of requests and tokens per minute
    (the fleet's, docs/fleet.md). The engine waits while it says wait; no gate: every
    call goes at once."""

    def reserve(self, input_tokens: int, output_tokens: int) -> GateAnswer:
        """Reserve one request of about these many tokens, or say how long to wait."""
        ...

    def settle(
        self, ticket: object, usage: dict[str, Any], limits: dict[str, str], cost_usd: float | None
    ) -> None:
        """The call ``ticket`` was answered: its real ``usage`` and the API's
        ``anthropic-ratelimit-*`` headers (``limits``). Never raises."""
        ...

    def park(self, seconds: float) -> bool:
        """The API answered 429 asking to wait ``seconds``: park every caller that long.
        True when parked (the wait is then the gate's, not a retry's)."""
        ...


@dataclass
class PruneContext:
    """What a pruning policy may know besides the entries themselves."""

    key: SessionKey | None = None
    run_dir: Path = Path("runs")
    options: dict[str, Any] = field(default_factory=dict)
    stats: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class PruningPolicy(Protocol):
    """A pure function of a transcript: returns the entries the model should see.

    It never touches storage and never mutates its input; removing an entry goes
    through :func:`flower.core.transcript.drop_entries` so the chain stays linked.
    """

    name: str

    def prune(self, entries: list[Entry], ctx: PruneContext) -> list[Entry]: ...
