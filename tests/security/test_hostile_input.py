"""Hostile input: fuzzed transcripts through the decoder, chain and pruning; fuzzed
jsonfs paths; quote- and NUL-laden keys on the SQL stores.

A tool path outside the workspace (symlinks included) is refused by the tool box:
tests/runtime/tools/test_tool_confinement.py covers it and is not repeated here.
"""

from __future__ import annotations

import contextlib
import warnings
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flower.core.config import PruningConfig, SessionsConfig, Settings
from flower.core.entries import decode_entry
from flower.core.errors import FlowerError, InvalidKeyError
from flower.core.records import SessionKey
from flower.core.transcript import active_chain, conversation, drop_entries, leaf_uuid
from flower.stores.open import open_session_store
from flower.stores.prune import PruningSessionStore, PruningWarning

FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=20,
)
uuids = st.sampled_from(["a", "b", "c", "d", None])
blocks = st.fixed_dictionaries(
    {"type": st.sampled_from(["text", "tool_use", "tool_result", "thinking", "image", "x"])},
    optional={
        "text": json_values,
        "id": uuids,
        "tool_use_id": uuids,
        "name": st.sampled_from(["Bash", "Read", 3]),
        "input": json_values,
        "content": json_values,
        "is_error": json_values,
    },
)
entries_strategy = st.lists(
    st.fixed_dictionaries(
        {"type": st.sampled_from(["user", "assistant", "system", "summary", "progress"])},
        optional={
            "uuid": uuids,
            "parentUuid": uuids | json_values,
            "isSidechain": json_values,
            "isApiErrorMessage": json_values,
            "toolUseResult": json_values,
            "message": st.fixed_dictionaries(
                {},
                optional={
                    "role": st.sampled_from(["user", "assistant", 7]),
                    "content": st.lists(blocks, max_size=3) | json_values,
                    "model": st.sampled_from(["<synthetic>", "m"]),
                    "usage": json_values,
                },
            ),
        },
    ),
    max_size=8,
)


@FUZZ
@given(st.binary(max_size=200))
def test_decoder_never_crashes_on_bytes(raw: bytes) -> None:
    with contextlib.suppress(msgspec.DecodeError):
        decode_entry(raw)


@FUZZ
@given(entries_strategy)
def test_chain_functions_survive_arbitrary_entries(entries: list[dict[str, Any]]) -> None:
    chain = active_chain(entries)
    assert all(e in entries for e in chain)
    leaf_uuid(entries)
    kept = drop_entries(entries, {"a"})
    assert all(e.get("uuid") != "a" for e in kept)
    with contextlib.suppress(FlowerError):
        conversation(entries)


class MemoryStore:
    def __init__(self, entries: list[dict[str, Any]]) -> None:
        self.entries = entries

    def load(self, key: SessionKey) -> list[dict[str, Any]]:
        return self.entries

    def append(self, key: SessionKey, entries: Any) -> None:
        raise AssertionError("a pruning view never writes")


@FUZZ
@given(entries_strategy)
def test_pruning_chain_survives_arbitrary_entries(
    tmp_path_factory: pytest.TempPathFactory, entries: list[dict[str, Any]]
) -> None:
    snapshot = msgspec.json.encode(entries)
    policies = ["synthetic-errors", "denials", "interrupted", "ephemeral", "redact"]
    run_dir = tmp_path_factory.mktemp("runs")
    view = PruningSessionStore.from_settings(
        MemoryStore(entries),  # type: ignore[arg-type]
        Settings(run_dir=str(run_dir), pruning=PruningConfig(policies=policies)),
    )
    with contextlib.suppress(FlowerError), warnings.catch_warnings():
        warnings.simplefilter("ignore", PruningWarning)  # hostile input: repairs expected
        view.load(SessionKey("-p", "s"))
    assert msgspec.json.encode(entries) == snapshot  # policies never mutate their input


@FUZZ
@given(
    st.text(min_size=1, max_size=40),
    st.one_of(st.none(), st.text(min_size=1, max_size=40)),
)
def test_jsonfs_paths_stay_inside_the_root(
    tmp_path_factory: pytest.TempPathFactory, session_id: str, subpath: str | None
) -> None:
    root = tmp_path_factory.mktemp("jsonfs")
    try:
        key = SessionKey("-p", session_id, subpath)
    except InvalidKeyError:
        return
    with open_session_store(f"jsonfs://{root}", settings=Settings()) as store:
        try:
            store.append(key, [{"type": "user", "uuid": "u"}])
        except InvalidKeyError:
            return
        assert store.load(key) == [{"type": "user", "uuid": "u"}]
    for path in Path(root).rglob("*"):
        assert path.resolve().is_relative_to(Path(root).resolve())


HOSTILE = [
    "it's",
    'say "hi"',
    "'; DROP TABLE flower_entries; --",
    "a\"b'c`d",
    "%s %(x)s ?",
    "x27 0x00 NUL-free",
]


def _sql_store(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Any:
    if backend == "sqlite":
        return open_session_store(f"sqlite:///{tmp_path}/s.db", settings=Settings())
    url = request.getfixturevalue("pg_url")
    conf = SessionsConfig(backend="postgres", auto_migrate=True)
    return open_session_store(url, settings=Settings(sessions=conf))


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_sql_quotes_are_data_and_nul_is_refused(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    with _sql_store(backend, tmp_path, request) as store:
        for n, text in enumerate(HOSTILE):
            key = SessionKey(f"-p{text}", f"s{text}", f"sub/{text}")
            entries = [{"type": "user", "uuid": f"u{text}", "message": {"content": text + "\\"}}]
            store.append(key, entries)
            store.append(key, entries)  # idempotent by the quote-laden uuid
            assert store.load(key) == entries, n
            assert store.exists(key.main) is False or store.load(key.main) is not None
            assert key.subpath in store.list_subkeys(key.main)
        assert {f"-p{t}" for t in HOSTILE} <= set(store.list_projects())
        for bad in ("nul\x00id", "\x00"):
            with pytest.raises(InvalidKeyError):
                SessionKey("-p", bad)
            with pytest.raises(InvalidKeyError):
                SessionKey(bad, "s")
            with pytest.raises(InvalidKeyError):
                SessionKey("-p", "s", f"sub/{bad}")
        nul_in_entry = [{"type": "user", "uuid": "nul\x00uuid", "message": {"content": "a\x00b"}}]
        try:
            store.append(SessionKey("-p", "nul-entry"), nul_in_entry)
        except FlowerError:
            pass  # refusing it is fine; storing it must round-trip exactly
        else:
            assert store.load(SessionKey("-p", "nul-entry")) == nul_in_entry
        assert store.load(SessionKey(f"-p{HOSTILE[2]}", f"s{HOSTILE[2]}", "sub/x")) is None
