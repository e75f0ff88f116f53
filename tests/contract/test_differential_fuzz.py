"""A differential, stateful fuzzer over every built-in session store.

The same random sequence of operations runs against sqlite, postgres, jsonfs, encrypted
sqlite and encrypted jsonfs (two handles on each, so one handle's caches meet the other's
writes) and against a small in-memory reference model of the contract (docs/stores.md).
Every observable result is compared with the model: loads and streams (order, exact
types, key order), listings, mtimes after ``set_modified``, ``exists``,
``find_session``, ``last_usage``, and how invalid entries and keys are refused.

The committed budget is small and derandomised so the test stays fast and stable; set
``FLOWER_FUZZ_EXAMPLES`` (and ``FLOWER_FUZZ_SEED``) to run longer, random campaigns.
"""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, rule, run_state_machine_as_test

from flower.core.config import SessionsConfig, Settings
from flower.core.errors import FlowerError
from flower.core.protocols import SessionStoreBase
from flower.core.records import Entry, SessionKey
from flower.stores.encrypt import EncryptedSessionStore
from flower.stores.keyring import generate_key, parse_keys
from flower.stores.open import open_session_store
from flower.testing.postgres import PostgresUnavailable, require_postgres, temporary_schema
from flower_plugins.jsonfs import JsonfsSessionStore

BACKENDS = ("sqlite", "postgres", "jsonfs", "encrypted-sqlite", "encrypted-jsonfs")
HANDLES = 2
"""Store objects per backend, all on the same data: caches must not go stale."""

# -- what the operations use -----------------------------------------------------------

PROJECTS = ["-home-user-proj", "-home-user-other", "p.q", "日本語", "a b", "...", ".dotted"]
SESSION_IDS = ["5f1c1e4a-0000-4000-8000-000000000001", "s2", "ünï cödé", "a.b", "-"]
SUBPATHS = [None, None, "subagents/agent-1", "subagents/agent-2", "a", "a/b", "日本/語", "x.y/z"]
UUIDS = ["u-1", "u-2", "u-3", "u-4", "ü-5", "u.6/x", "\ud83d-cut"]
ODD_STRINGS = ["", "\ud83d", "\udc00x", "\x00", "\u2028", "e\u0301", "🌸", '"\\', "a.b", "a/b"]
MTIMES = [0, 1, 999, 1_700_000_000_123, 1_700_000_000_123, 4_102_444_800_000]

NaN = math.nan


def _json_strings() -> st.SearchStrategy[str]:
    any_char = st.characters(exclude_categories=())  # surrogates and controls included
    return st.one_of(st.sampled_from(ODD_STRINGS), st.text(any_char, max_size=6))


def _json_scalars() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.sampled_from([2**53 + 1, 2**63, -(2**63) - 1, 2**64, 10**40, -0]),
        st.floats(allow_nan=False, allow_infinity=False),
        st.sampled_from([0.0, -0.0, 1.0, 5e-324, 1.7976931348623157e308, 0.1]),
        _json_strings(),
    )


def _json_values() -> st.SearchStrategy[Any]:
    return st.recursive(
        _json_scalars(),
        lambda inner: st.one_of(
            st.lists(inner, max_size=3),
            st.dictionaries(_json_strings(), inner, max_size=3),
        ),
        max_leaves=8,
    )


@st.composite
def _entries(draw: st.DrawFn) -> Entry:
    kind = draw(
        st.sampled_from(["user", "assistant", "assistant", "system", "summary", "ödd"])
        | _json_strings()
    )
    entry: Entry = {"type": kind}
    uid = draw(st.sampled_from([*UUIDS, None, "absent"]))
    if uid != "absent":
        entry["uuid"] = uid
    if kind == "assistant":
        entry["message"] = draw(_assistant_messages())
        if draw(st.integers(0, 5)) == 0:
            entry["isApiErrorMessage"] = draw(st.sampled_from([True, False, "true", 1]))
    for name, value in draw(st.dictionaries(_json_strings(), _json_values(), max_size=3)).items():
        if name not in ("type", "uuid"):
            entry[name] = value
    return entry


@st.composite
def _assistant_messages(draw: st.DrawFn) -> Any:
    usage = draw(
        st.one_of(
            st.fixed_dictionaries(
                {"input_tokens": st.integers(0, 10**6), "output_tokens": st.integers(0, 10**4)}
            ),
            st.sampled_from([{}, None, {"input_tokens": 0, "output_tokens": 0}, [1]]),
            st.dictionaries(_json_strings(), _json_scalars(), max_size=2),
        )
    )
    message: dict[str, Any] = {"role": "assistant", "content": []}
    if usage is not None:
        message["usage"] = usage
    model = draw(st.sampled_from([None, "claude-x", "<synthetic>"]))
    if model is not None:
        message["model"] = model
    return draw(st.sampled_from([message, message, message, "not a dict"]))


class StrKind(str):
    pass


def _bad_entries() -> list[Any]:
    return [
        {"type": "user", "x": NaN},
        {"type": "user", "x": [1, math.inf]},
        {"type": "user", "x": (1, 2)},
        {"type": "user", "x": {1, 2}},
        {"type": "user", "x": b"raw"},
        {"type": "user", "x": object()},
        {"type": "user", "x": {1: "one"}},
        {"type": "user", "x": {"ok": {("t",): 1}}},
        {"uuid": "u-1", "message": "no type"},
        {"type": 1},
        {"type": None, "uuid": "u-1"},
        {"type": "user", "uuid": 9},
        {"type": "user", "uuid": ["u-1"]},
        {"type": "user", "x": StrKind("a str subclass")},
        ["type", "user"],
        "user",
        None,
    ]


def _keys() -> st.SearchStrategy[SessionKey]:
    return st.builds(
        SessionKey,
        st.sampled_from(PROJECTS),
        st.sampled_from(SESSION_IDS),
        st.sampled_from(SUBPATHS),
    )


# -- the reference model -----------------------------------------------------------------


def json_exact(value: Any) -> bool:
    """Whether ``value`` survives JSON unchanged: the exact JSON types, finite floats."""
    kind = type(value)
    if kind in (str, bool, int, type(None)):
        return True
    if kind is float:
        return math.isfinite(value)
    if kind is list:
        return all(json_exact(v) for v in value)
    if kind is dict:
        return all(type(k) is str and json_exact(v) for k, v in value.items())
    return False


def valid_entry(entry: Any) -> bool:
    return (
        type(entry) is dict
        and type(entry.get("type")) is str
        and type(entry.get("uuid")) in (str, type(None))
        and json_exact(entry)
    )


def reported(entry: Entry) -> dict[str, Any] | None:
    """The usage an API answer reports (docs/stores.md, ``last_usage``)."""
    if entry.get("type") != "assistant":
        return None
    message = entry.get("message")
    if entry.get("isApiErrorMessage") is True:
        return None
    if not isinstance(message, dict) or message.get("model") == "<synthetic>":
        return None
    usage = message.get("usage")
    return usage if isinstance(usage, dict) and usage else None


@dataclass
class Model:
    """The contract, in memory: transcripts by key and the times set on main keys."""

    transcripts: dict[SessionKey, list[Entry]] = field(default_factory=dict)
    mtimes: dict[SessionKey, int | None] = field(default_factory=dict)
    """Main keys' times: a number once set_modified set it, None after a write."""

    def append(self, key: SessionKey, batch: list[Entry]) -> None:
        held = self.transcripts.get(key, [])
        seen = {e.get("uuid") for e in held} - {None}
        added = []
        for entry in batch:
            uid = entry.get("uuid")
            if uid is not None:
                if uid in seen:
                    continue
                seen.add(uid)
            added.append(entry)
        if not added:
            return
        self.transcripts[key] = [*held, *added]
        if key.subpath is None:
            self.mtimes[key] = None

    def delete(self, key: SessionKey) -> None:
        doomed = [
            k for k in self.transcripts if k == key or (key.subpath is None and k.main == key)
        ]
        for k in doomed:
            del self.transcripts[k]
            self.mtimes.pop(k, None)

    def set_modified(self, key: SessionKey, mtime_ms: int) -> None:
        if key.main in self.transcripts:
            self.mtimes[key.main] = mtime_ms

    def sessions(self, project: str) -> set[str]:
        return {
            k.session_id for k in self.transcripts if k.project_key == project and not k.subpath
        }

    def projects(self) -> list[str]:
        return sorted({k.project_key for k in self.transcripts})

    def subkeys(self, key: SessionKey) -> list[str]:
        return sorted(k.subpath for k in self.transcripts if k.subpath and k.main == key.main)

    def last_usage(self, key: SessionKey) -> dict[str, Any] | None:
        for entry in reversed(self.transcripts.get(key, [])):
            usage = reported(entry)
            if usage:
                return usage
        return None

    def find_session(self, session_id: str) -> list[SessionKey]:
        """The keys find_session may answer: the newest when every time is known."""
        found = [k for k in self.transcripts if k.session_id == session_id and not k.subpath]
        times = [self.mtimes.get(k) for k in found]
        if len(found) < 2 or None in times:
            return found
        newest = max(t for t in times if t is not None)
        return [min((k for k, t in zip(found, times, strict=True) if t == newest), key=str)]


# -- comparing -------------------------------------------------------------------------


def same(a: Any, b: Any) -> bool:
    """Deep equality that also tells 1 from 1.0 and True, -0.0 from 0.0, and key order."""
    if type(a) is not type(b):
        return False
    if type(a) is dict:
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if type(a) is list:
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if type(a) is float:
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    return bool(a == b)


@dataclass(frozen=True)
class Raised:
    """An operation that raised: a FlowerError (a refusal) or anything else (a crash)."""

    kind: str
    message: str

    @property
    def refused(self) -> bool:
        return self.kind == "FlowerError"


def observe(call: Callable[[], Any]) -> Any:
    try:
        return call()
    except FlowerError as exc:
        return Raised("FlowerError", f"{type(exc).__name__}: {exc}"[:300])
    except Exception as exc:
        return Raised("crash", f"{type(exc).__name__}: {exc}"[:300])


# -- the stores ------------------------------------------------------------------------


@dataclass
class Places:
    """Where each backend keeps its data; a fresh, empty set per example."""

    base: Path
    pg_url: str | None
    key: str = field(default_factory=generate_key)
    folder: Path | None = None
    template: Path | None = None
    """An empty, migrated SQLite file: copying it is much faster than migrating anew."""

    def fresh(self) -> None:
        if self.template is None:
            self.template = self.base / "template.db"
            open_session_store(f"sqlite:///{self.template}", settings=Settings()).close()
        self.folder = Path(tempfile.mkdtemp(dir=self.base))
        if self.pg_url is not None:
            _truncate(self.pg_url)

    def discard(self) -> None:
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)

    def open(self, backend: str) -> SessionStoreBase:
        assert self.folder is not None and self.template is not None
        plain = backend.removeprefix("encrypted-")
        inner: SessionStoreBase
        if plain == "sqlite":
            db = self.folder / f"{backend}.db"
            if not db.exists():
                shutil.copyfile(self.template, db)
            inner = open_session_store(f"sqlite:///{db}", settings=Settings())
        elif plain == "jsonfs":  # fsync proves nothing here and costs most of the time
            inner = JsonfsSessionStore(self.folder / backend, fsync=False)
        else:
            assert self.pg_url is not None
            inner = open_session_store(self.pg_url, settings=PG_SETTINGS)
        if backend.startswith("encrypted-"):
            return EncryptedSessionStore(inner, parse_keys(self.key, "fuzz key"))
        return inner


PG_SETTINGS = Settings(sessions=SessionsConfig(backend="postgres", auto_migrate=True))


def _without_commit_flush(pg_url: str) -> str:
    """``pg_url`` with ``synchronous_commit`` off: durability is not what is compared."""
    return pg_url.replace("options=", f"options={quote('-csynchronous_commit=off ')}", 1)


def _truncate(pg_url: str) -> None:
    store = open_session_store(pg_url, settings=PG_SETTINGS)  # migrates a new schema
    try:
        import sqlalchemy as sa

        from flower_plugins.sql.store import SqlSessionStore

        assert isinstance(store, SqlSessionStore)
        store.database.write(
            lambda conn: conn.execute(sa.text("TRUNCATE flower_entries, flower_sessions"))
        )
    finally:
        store.close()


class StoresMachine(RuleBasedStateMachine):
    """Drives every backend and the model with the same operations, step by step."""

    places: Places
    backends: tuple[str, ...] = BACKENDS

    def __init__(self) -> None:
        super().__init__()
        self.places.fresh()
        self.model = Model()
        self.started_ms = int(time.time() * 1000)
        self.stores: dict[str, list[SessionStoreBase]] = {
            name: [self.places.open(name) for _ in range(HANDLES)] for name in self.backends
        }

    def teardown(self) -> None:
        self._close_all()
        self.places.discard()

    def _close_all(self) -> None:
        for handles in self.stores.values():
            for store in handles:
                with contextlib.suppress(Exception):
                    store.close()

    def _each(self, handle: int, call: Callable[[SessionStoreBase], Any]) -> dict[str, Any]:
        return {name: observe(lambda s=h[handle]: call(s)) for name, h in self.stores.items()}

    def _expect(
        self, what: str, results: dict[str, Any], matches: Callable[[Any], bool], wanted: Any
    ) -> None:
        wrong = {name: got for name, got in results.items() if not matches(got)}
        if wrong:
            lines = [f"{what}: expected {wanted!r:.400}"]
            lines += [f"  {name}: {got!r:.400}" for name, got in results.items()]
            raise AssertionError("\n".join(lines))

    # -- writes ----------------------------------------------------------------------

    @rule(key=_keys(), batch=st.lists(_entries(), max_size=4), handle=st.integers(0, HANDLES - 1))
    def append(self, key: SessionKey, batch: list[Entry], handle: int) -> None:
        results = self._each(handle, lambda s: s.append(key, batch))
        self._expect(f"append({key}, {batch!r:.300})", results, lambda r: r is None, None)
        self.model.append(key, batch)

    @rule(
        key=_keys(),
        good=st.lists(_entries(), max_size=3),
        bad=st.sampled_from(_bad_entries()),
        at=st.integers(0, 3),
        handle=st.integers(0, HANDLES - 1),
    )
    def append_invalid(
        self, key: SessionKey, good: list[Entry], bad: Any, at: int, handle: int
    ) -> None:
        batch = [*good[:at], bad, *good[at:]]
        results = self._each(handle, lambda s: s.append(key, batch))
        self._expect(
            f"append of an invalid batch to {key}: {batch!r:.300}",
            results,
            lambda r: isinstance(r, Raised) and r.refused,
            "a FlowerError",
        )
        self._check_transcript(key, handle)

    @rule(
        key=_keys(),
        picks=st.lists(st.integers(0, 50), min_size=1, max_size=3),
        fresh=st.lists(_entries(), max_size=2),
        handle=st.integers(0, HANDLES - 1),
        data=st.data(),
    )
    def append_retry(
        self, key: SessionKey, picks: list[int], fresh: list[Entry], handle: int, data: Any
    ) -> None:
        """An overlapping retry: entries the transcript holds, resent among new ones."""
        held = self.model.transcripts.get(key) or []
        old = [held[i % len(held)] for i in picks] if held else []
        batch = data.draw(st.permutations([*old, *fresh]))
        self.append(key, batch, handle)

    @rule(
        key=_keys(),
        depth=st.sampled_from([64, 255, 256, 500, 900, 990, 1000, 1200, 5000]),
        leaf=st.sampled_from(["x", "\ud83d", 1.5]),
        handle=st.integers(0, HANDLES - 1),
    )
    def append_deep(self, key: SessionKey, depth: int, leaf: Any, handle: int) -> None:
        """Deep nesting: stored and loaded back, or refused by every backend alike."""
        value: Any = leaf
        for level in range(depth):
            value = [value] if level % 2 else {"k": value}
        batch = [{"type": "user", "uuid": f"deep-{depth}", "v": value}]
        results = self._each(handle, lambda s: s.append(key, batch))
        outcomes = {type(r).__name__ if r is not None else "stored" for r in results.values()}
        if len(outcomes) != 1 or any(
            isinstance(r, Raised) and not r.refused for r in results.values()
        ):
            self._expect(
                f"append of {depth} levels to {key}", results, lambda r: False, "one outcome"
            )
        if results and next(iter(results.values())) is None:
            self.model.append(key, batch)
        self._check_transcript(key, handle)

    @rule(
        part=st.sampled_from(["project_key", "session_id", "subpath"]),
        bad=st.sampled_from(["\ud83d", "cut \udc00", "x" * 300, "ü" * 200, "s.jsonl", "a.jsonl/b"]),
        handle=st.integers(0, HANDLES - 1),
    )
    def odd_key(self, part: str, bad: str, handle: int) -> None:
        """A key part no store can hold (no UTF-8 for it), or one some refuse (too long
        for a file name; ending in .jsonl on jsonfs): refused, never a crash."""
        import msgspec

        key = SessionKey(PROJECTS[0], SESSION_IDS[0], "sub")
        msgspec.structs.force_setattr(key, part, bad)
        batch = [{"type": "user", "uuid": "odd-key"}]
        results = self._each(handle, lambda s: s.append(key, batch))
        if all(r is None for r in results.values()):
            self.model.append(key, batch)
            return
        self._expect(
            f"append to {key}",
            results,
            lambda r: r is None or (isinstance(r, Raised) and r.refused),
            "stored or a FlowerError",
        )
        for name, r in results.items():
            if r is None:  # stored here, refused elsewhere: undo it so the model holds
                self.stores[name][handle].delete(key)

    @rule(key=_keys(), handle=st.integers(0, HANDLES - 1))
    def append_empty(self, key: SessionKey, handle: int) -> None:
        results = self._each(handle, lambda s: s.append(key, []))
        self._expect(f"append({key}, [])", results, lambda r: r is None, None)

    @rule(key=_keys(), handle=st.integers(0, HANDLES - 1))
    def delete(self, key: SessionKey, handle: int) -> None:
        results = self._each(handle, lambda s: s.delete(key))
        self._expect(f"delete({key})", results, lambda r: r is None, None)
        self.model.delete(key)

    @rule(key=_keys(), mtime_ms=st.sampled_from(MTIMES), handle=st.integers(0, HANDLES - 1))
    def set_modified(self, key: SessionKey, mtime_ms: int, handle: int) -> None:
        results = self._each(handle, lambda s: s.set_modified(key, mtime_ms))
        self._expect(f"set_modified({key}, {mtime_ms})", results, lambda r: r is None, None)
        self.model.set_modified(key, mtime_ms)

    @rule(dice=st.integers(0, 3))
    def reopen(self, dice: int) -> None:
        """Close every handle and open them again, one time in four: opening is slow."""
        if dice:
            return
        self._close_all()
        self.stores = {
            name: [self.places.open(name) for _ in range(HANDLES)] for name in self.backends
        }

    # -- reads -----------------------------------------------------------------------

    def _check_transcript(self, key: SessionKey, handle: int) -> None:
        wanted = self.model.transcripts.get(key)
        results = self._each(handle, lambda s: s.load(key))
        self._expect(f"load({key})", results, lambda r: _same_or_none(r, wanted), wanted)

    @rule(key=_keys(), handle=st.integers(0, HANDLES - 1))
    def load(self, key: SessionKey, handle: int) -> None:
        self._check_transcript(key, handle)

    @rule(key=_keys(), handle=st.integers(0, HANDLES - 1))
    def iter_entries(self, key: SessionKey, handle: int) -> None:
        wanted = self.model.transcripts.get(key, [])
        results = self._each(handle, lambda s: list(s.iter_entries(key)))
        self._expect(f"iter_entries({key})", results, lambda r: _same_or_none(r, wanted), wanted)

    @rule(key=_keys(), handle=st.integers(0, HANDLES - 1))
    def exists(self, key: SessionKey, handle: int) -> None:
        wanted = key in self.model.transcripts
        results = self._each(handle, lambda s: s.exists(key))
        self._expect(f"exists({key})", results, lambda r: r is wanted, wanted)

    @rule(key=_keys(), handle=st.integers(0, HANDLES - 1))
    def last_usage(self, key: SessionKey, handle: int) -> None:
        wanted = self.model.last_usage(key)
        results = self._each(handle, lambda s: s.last_usage(key))
        self._expect(f"last_usage({key})", results, lambda r: _same_or_none(r, wanted), wanted)

    @rule(project=st.sampled_from(PROJECTS), handle=st.integers(0, HANDLES - 1))
    def list_sessions(self, project: str, handle: int) -> None:
        results = self._each(handle, lambda s: s.list_sessions(project))
        wanted = sorted(self.model.sessions(project))
        self._expect(
            f"session ids of list_sessions({project!r})",
            results,
            lambda r: not isinstance(r, Raised) and sorted(i.session_id for i in r) == wanted,
            wanted,
        )
        now = int(time.time() * 1000)
        for name, infos in results.items():
            listed = [(-i.mtime_ms, i.session_id) for i in infos]
            if listed != sorted(listed):
                raise AssertionError(
                    f"{name}: list_sessions({project!r}) not newest first: {infos}"
                )
            for info in infos:
                self._check_mtime(name, SessionKey(project, info.session_id), info.mtime_ms, now)

    def _check_mtime(self, name: str, key: SessionKey, mtime_ms: Any, now: int) -> None:
        wanted = self.model.mtimes.get(key)
        if type(mtime_ms) is not int:
            raise AssertionError(f"{name}: mtime_ms of {key} is {mtime_ms!r}, not an int")
        if wanted is not None and mtime_ms != wanted:
            raise AssertionError(f"{name}: mtime_ms of {key} is {mtime_ms}, set to {wanted}")
        if wanted is None and not self.started_ms - 2000 <= mtime_ms <= now + 2000:
            raise AssertionError(f"{name}: mtime_ms of {key} is {mtime_ms}, written just now")

    @rule(handle=st.integers(0, HANDLES - 1))
    def list_projects(self, handle: int) -> None:
        wanted = self.model.projects()
        results = self._each(handle, lambda s: s.list_projects())
        self._expect(
            "list_projects()", results, lambda r: not isinstance(r, Raised) and r == wanted, wanted
        )

    @rule(key=_keys(), handle=st.integers(0, HANDLES - 1))
    def list_subkeys(self, key: SessionKey, handle: int) -> None:
        wanted = self.model.subkeys(key)
        results = self._each(handle, lambda s: s.list_subkeys(key))
        self._expect(
            f"list_subkeys({key})",
            results,
            lambda r: not isinstance(r, Raised) and r == wanted,
            wanted,
        )

    @rule(session_id=st.sampled_from(SESSION_IDS), handle=st.integers(0, HANDLES - 1))
    def find_session(self, session_id: str, handle: int) -> None:
        candidates = self.model.find_session(session_id)
        results = self._each(handle, lambda s: s.find_session(session_id))
        self._expect(
            f"find_session({session_id!r})",
            results,
            lambda r: r in candidates if candidates else r is None,
            candidates,
        )


def _same_or_none(got: Any, wanted: Any) -> bool:
    if wanted is None:
        return got is None
    return not isinstance(got, Raised) and same(got, wanted)


# -- running it ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fuzz_pg_url() -> Iterator[str | None]:
    try:
        with temporary_schema("flower_fuzz") as url:
            yield url
    except PostgresUnavailable as exc:
        if require_postgres():
            pytest.fail(f"FLOWER_REQUIRE_POSTGRES=1 but {exc}")
        yield None


def fuzz_settings() -> settings:
    examples = int(os.environ.get("FLOWER_FUZZ_EXAMPLES", "0"))
    common = {
        "deadline": None,
        "stateful_step_count": 25,
        "suppress_health_check": list(HealthCheck),
    }
    if examples:
        return settings(max_examples=examples, **common)
    return settings(max_examples=30, derandomize=True, database=None, **common)


def test_every_backend_agrees_with_the_model(tmp_path: Path, fuzz_pg_url: str | None) -> None:
    backends = (
        BACKENDS if fuzz_pg_url is not None else tuple(b for b in BACKENDS if b != "postgres")
    )
    machine = type(
        "Stores",
        (StoresMachine,),
        {
            "places": Places(tmp_path, fuzz_pg_url and _without_commit_flush(fuzz_pg_url)),
            "backends": backends,
        },
    )
    run_state_machine_as_test(machine, settings=fuzz_settings())
