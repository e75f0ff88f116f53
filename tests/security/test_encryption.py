"""Encryption at rest: what is stored, wrong and missing keys, damaged entries, rekey."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from flower.core.config import SessionsConfig, Settings
from flower.core.errors import InvalidEntryError
from flower.core.records import SessionKey
from flower.stores.copy import verify_sessions
from flower.stores.encrypt import (
    CHECK_KEY,
    ENC,
    DecryptWarning,
    EncryptedSessionStore,
    sealed_key_id,
)
from flower.stores.keyring import EncryptionKeyError, generate_key, key_id, parse_keys
from flower.stores.open import open_session_store
from flower.stores.rekey import Rekeyer, rekey

# the expected text below is flower's English output (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("english")

KEY = SessionKey("-work-project", "s1")
SECRET_TEXT = "the launch code is 0000-tango"


def turn(n: int, kind: str = "user") -> dict:
    entry = {
        "type": kind,
        "uuid": f"u{n}",
        "parentUuid": f"u{n - 1}" if n else None,
        "sessionId": "s1",
        "timestamp": f"2026-11-30T00:00:{n:02d}Z",
        "message": {"role": kind, "content": f"{SECRET_TEXT} #{n}"},
    }
    if kind == "assistant":
        entry["message"]["usage"] = {"input_tokens": 10 + n, "output_tokens": n}
    return entry


def settings_for(url: str, **sessions: object) -> Settings:
    backend = "jsonfs" if url.startswith("jsonfs") else "sqlite"
    return Settings(sessions=SessionsConfig(backend=backend, url=url, encrypt=True, **sessions))


@pytest.fixture
def key_env(monkeypatch: pytest.MonkeyPatch) -> str:
    key = generate_key()
    monkeypatch.setenv("FLOWER_ENCRYPTION_KEY", key)
    monkeypatch.delenv("FLOWER_ENCRYPTION_KEY_FILE", raising=False)
    return key


def test_configured_store_is_encrypted_and_index_fields_stay_clear(
    tmp_path: Path, key_env: str
) -> None:
    url = f"sqlite:///{tmp_path}/sessions.db"
    store = open_session_store(settings=settings_for(url))
    assert isinstance(store, EncryptedSessionStore)
    entries = [turn(0), turn(1, "assistant")]
    store.append(KEY, entries)
    assert store.load(KEY) == entries
    assert store.last_usage(KEY) == {"input_tokens": 11, "output_tokens": 1}
    store.close()
    raw = sqlite3.connect(f"{tmp_path}/sessions.db").execute("select * from flower_entries")
    dump = json.dumps([list(map(str, row)) for row in raw.fetchall()])
    assert "launch code" not in dump
    # What stays visible, exactly: the index fields and the assistant usage.
    inner = open_session_store(f"sqlite:///{tmp_path}/sessions.db", settings=Settings())
    stored = inner.load(KEY)
    assert stored is not None
    assert set(stored[0]) == {"type", "uuid", "parentUuid", "sessionId", "timestamp", ENC}
    assert stored[1]["message"] == {"usage": {"input_tokens": 11, "output_tokens": 1}}
    assert sealed_key_id(stored[0]) == key_id(parse_keys(key_env, "k").current)
    inner.close()


def test_an_explicit_other_url_opens_raw(tmp_path: Path, key_env: str) -> None:
    settings = settings_for(f"sqlite:///{tmp_path}/a.db")
    other = open_session_store(f"sqlite:///{tmp_path}/b.db", settings=settings)
    assert not isinstance(other, EncryptedSessionStore)
    other.close()


def test_missing_key_names_the_variables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FLOWER_ENCRYPTION_KEY", raising=False)
    monkeypatch.delenv("FLOWER_ENCRYPTION_KEY_FILE", raising=False)
    with pytest.raises(EncryptionKeyError, match="FLOWER_ENCRYPTION_KEY"):
        open_session_store(settings=settings_for(f"sqlite:///{tmp_path}/s.db"))


def test_malformed_key_is_an_error_that_does_not_echo_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLOWER_ENCRYPTION_KEY", "hunter2-not-a-key")
    with pytest.raises(EncryptionKeyError, match="FLOWER_ENCRYPTION_KEY") as info:
        open_session_store(settings=settings_for(f"sqlite:///{tmp_path}/s.db"))
    assert "hunter2" not in str(info.value)


def test_key_file_from_settings_and_from_env(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("FLOWER_ENCRYPTION_KEY", raising=False)
    key_file = tmp_path / "flower.key"
    key_file.write_text(f"# current\n{generate_key()}\n", encoding="utf-8")
    key_file.chmod(0o600)
    url = f"sqlite:///{tmp_path}/s.db"
    with open_session_store(settings=settings_for(url, key_file=str(key_file))) as store:
        store.append(KEY, [turn(0)])
    monkeypatch.setenv("FLOWER_ENCRYPTION_KEY_FILE", str(key_file))
    with open_session_store(settings=settings_for(url)) as store:
        assert store.load(KEY) == [turn(0)]


@pytest.mark.parametrize("backend", ["sqlite", "jsonfs"])
def test_wrong_key_is_a_clear_error_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, backend: str
) -> None:
    url = f"sqlite:///{tmp_path}/s.db" if backend == "sqlite" else f"jsonfs://{tmp_path}/t"
    monkeypatch.setenv("FLOWER_ENCRYPTION_KEY", generate_key())
    with open_session_store(settings=settings_for(url)) as store:
        store.append(KEY, [turn(0)])
    monkeypatch.setenv("FLOWER_ENCRYPTION_KEY", generate_key())
    with open_session_store(settings=settings_for(url)) as store:
        with pytest.raises(EncryptionKeyError, match="wrong encryption key: FLOWER_ENCRYPTION_KEY"):
            store.load(KEY)
        with pytest.raises(EncryptionKeyError):
            store.append(KEY.child("subagents/a"), [turn(5)])
    with open_session_store(url, settings=Settings()) as raw:
        assert len(raw.load(KEY) or []) == 1
        assert raw.load(KEY.child("subagents/a")) is None
        assert len(raw.load(CHECK_KEY) or []) == 1  # no check record for the wrong key


def test_truncated_ciphertext_reports_that_entry_and_loads_the_rest(
    tmp_path: Path, key_env: str
) -> None:
    root = tmp_path / "t"
    with open_session_store(settings=settings_for(f"jsonfs://{root}")) as store:
        store.append(KEY, [turn(0), turn(1, "assistant"), turn(2)])
    path = root / KEY.project_key / "s1.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    damaged = json.loads(lines[1])
    damaged[ENC]["ct"] = damaged[ENC]["ct"][:-12]
    lines[1] = json.dumps(damaged)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with open_session_store(settings=settings_for(f"jsonfs://{root}")) as store:
        with pytest.warns(DecryptWarning, match="uuid u1"):
            loaded = store.load(KEY)
        assert loaded == [turn(0), turn(2)]
        [problem] = store.problems(KEY)
        assert (problem.index, problem.uuid) == (1, "u1")
        assert "truncated or altered" in problem.reason


def test_ciphertext_moved_to_another_entry_does_not_open(tmp_path: Path, key_env: str) -> None:
    root = tmp_path / "t"
    with open_session_store(settings=settings_for(f"jsonfs://{root}")) as store:
        store.append(KEY, [turn(0), turn(1)])
    path = root / KEY.project_key / "s1.jsonl"
    first, second = (json.loads(x) for x in path.read_text(encoding="utf-8").splitlines())
    second[ENC] = first[ENC]
    path.write_text(json.dumps(first) + "\n" + json.dumps(second) + "\n", encoding="utf-8")
    with (
        open_session_store(settings=settings_for(f"jsonfs://{root}")) as store,
        pytest.warns(DecryptWarning),
    ):
        assert store.load(KEY) == [turn(0)]


def test_clear_entries_from_before_encryption_still_load(tmp_path: Path, key_env: str) -> None:
    url = f"sqlite:///{tmp_path}/s.db"
    with open_session_store(url, settings=Settings()) as raw:
        raw.append(KEY, [turn(0)])
    with open_session_store(settings=settings_for(url)) as store:
        store.append(KEY, [turn(1)])
        assert store.load(KEY) == [turn(0), turn(1)]
        report = rekey(store, store.codec.keyring)  # encrypts the clear entry too
        assert report.sessions == 1
    with open_session_store(url, settings=Settings()) as raw:
        assert all(ENC in e for e in raw.load(KEY) or [])


def _fill(store: EncryptedSessionStore) -> dict[SessionKey, list[dict]]:
    data = {}
    for n in range(3):
        key = SessionKey("-work-project", f"s{n}")
        data[key] = [turn(i, "assistant" if i % 2 else "user") for i in range(4)]
        store.append(key, data[key])
        sub = key.child("subagents/agent-1")
        data[sub] = [turn(10 + n)]
        store.append(sub, data[sub])
    return data


def test_rekey_moves_every_session_to_the_new_key(tmp_path: Path, monkeypatch) -> None:
    url = f"sqlite:///{tmp_path}/s.db"
    old, new = generate_key(), generate_key()
    monkeypatch.setenv("FLOWER_ENCRYPTION_KEY", old)
    with open_session_store(settings=settings_for(url)) as store:
        data = _fill(store)
        report = rekey(store, parse_keys(new, "new"))
    assert (report.sessions, report.entries, report.failed) == (3, 15, [])
    monkeypatch.setenv("FLOWER_ENCRYPTION_KEY", new)
    with open_session_store(settings=settings_for(url)) as store:
        for key, entries in data.items():
            assert store.load(key) == entries
        assert sorted(i.session_id for i in store.list_sessions("-work-project")) == [
            "s0",
            "s1",
            "s2",
        ]
    with open_session_store(url, settings=Settings()) as raw:
        kids = {sealed_key_id(e) for k in data for e in raw.load(k) or []}
        assert kids == {key_id(parse_keys(new, "new").current)}


class Crash(Exception):
    pass


@pytest.mark.parametrize("crash_in", ["_copy", "_restore"])
def test_rekey_interrupted_then_resumed_loses_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, crash_in: str
) -> None:
    url = f"sqlite:///{tmp_path}/s.db"
    old, new = generate_key(), generate_key()
    monkeypatch.setenv("FLOWER_ENCRYPTION_KEY", old)
    with open_session_store(settings=settings_for(url)) as store:
        data = _fill(store)
        real = getattr(Rekeyer, crash_in)
        calls = {"n": 0}

        def crashing(self: Rekeyer, key: SessionKey) -> object:
            calls["n"] += 1
            if calls["n"] == 2:
                if crash_in == "_restore":  # half-way: original deleted, partly re-appended
                    self.inner.delete(key)
                    staged = self.inner.load(self._staging(key)) or []
                    self.inner.append(key, staged[:1])
                raise Crash
            return real(self, key)

        monkeypatch.setattr(Rekeyer, crash_in, crashing)
        with pytest.raises(Crash):
            rekey(store, parse_keys(new, "new"))
        monkeypatch.setattr(Rekeyer, crash_in, real)
        report = rekey(store, parse_keys(new, "new"))
        assert report.failed == []
        assert report.skipped == 1  # the session finished before the crash
    monkeypatch.setenv("FLOWER_ENCRYPTION_KEY", new)
    with open_session_store(settings=settings_for(url)) as store:
        for key, entries in data.items():
            assert store.load(key) == entries
        assert len(store.list_sessions("-work-project")) == 3


def test_rotation_through_the_keyring(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """FLOWER_ENCRYPTION_KEY="NEW,OLD" reads both; rekey without a new key moves to NEW."""
    url = f"jsonfs://{tmp_path}/t"
    old, new = generate_key(), generate_key()
    monkeypatch.setenv("FLOWER_ENCRYPTION_KEY", old)
    with open_session_store(settings=settings_for(url)) as store:
        store.append(KEY, [turn(0)])
    monkeypatch.setenv("FLOWER_ENCRYPTION_KEY", f"{new},{old}")
    with open_session_store(settings=settings_for(url)) as store:
        store.append(KEY, [turn(1)])
        assert store.load(KEY) == [turn(0), turn(1)]
        assert rekey(store, store.codec.keyring).sessions == 1
    monkeypatch.setenv("FLOWER_ENCRYPTION_KEY", new)
    with open_session_store(settings=settings_for(url)) as store:
        assert store.load(KEY) == [turn(0), turn(1)]


def sealed_without_check(tmp_path: Path, key: str) -> str:
    """A store holding entries sealed under ``key`` but no key-check record, as a raw
    copy of one session out of an encrypted store makes; its URL."""
    source = f"sqlite:///{tmp_path}/source.db"
    inner = open_session_store(source, settings=Settings())
    with EncryptedSessionStore(inner, parse_keys(key, "key")) as store:
        store.append(KEY, [turn(0), turn(1, "assistant")])
    url = f"sqlite:///{tmp_path}/copied.db"
    with (
        open_session_store(source, settings=Settings()) as raw,
        open_session_store(url, settings=Settings()) as target,
    ):
        target.append(KEY, raw.load(KEY) or [])
    return url


def check_records(url: str) -> list[dict]:
    with open_session_store(url, settings=Settings()) as raw:
        return raw.load(CHECK_KEY) or []


def test_a_read_writes_no_key_check_marker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    right = generate_key()
    url = sealed_without_check(tmp_path, right)
    monkeypatch.setenv("FLOWER_ENCRYPTION_KEY", generate_key())
    with (
        open_session_store(settings=settings_for(url)) as store,
        pytest.raises(EncryptionKeyError),
    ):
        store.load(KEY)
    assert check_records(url) == []
    monkeypatch.setenv("FLOWER_ENCRYPTION_KEY", right)
    with open_session_store(settings=settings_for(url)) as store:
        assert store.load(KEY) == [turn(0), turn(1, "assistant")]
    assert check_records(url) == []


def test_a_first_marker_needs_a_key_that_opens_the_sealed_entries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    right = generate_key()
    url = sealed_without_check(tmp_path, right)
    monkeypatch.setenv("FLOWER_ENCRYPTION_KEY", generate_key())
    with (
        open_session_store(settings=settings_for(url)) as store,
        pytest.raises(EncryptionKeyError, match="wrong encryption key"),
    ):
        store.append(KEY, [turn(2)])
    assert check_records(url) == []
    monkeypatch.setenv("FLOWER_ENCRYPTION_KEY", right)
    with open_session_store(settings=settings_for(url)) as store:
        store.append(KEY, [turn(2)])
        assert store.load(KEY) == [turn(0), turn(1, "assistant"), turn(2)]
    [record] = check_records(url)
    assert sealed_key_id(record) == key_id(parse_keys(right, "k").current)


def test_a_rotation_records_the_new_key_at_the_first_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path}/s.db"
    old, new = generate_key(), generate_key()
    monkeypatch.setenv("FLOWER_ENCRYPTION_KEY", old)
    with open_session_store(settings=settings_for(url)) as store:
        store.append(KEY, [turn(0)])
    monkeypatch.setenv("FLOWER_ENCRYPTION_KEY", f"{new},{old}")
    with open_session_store(settings=settings_for(url)) as store:
        assert store.load(KEY) == [turn(0)]
        assert len(check_records(url)) == 1
        store.append(KEY, [turn(1)])
    assert len(check_records(url)) == 2


def test_a_wrong_key_cannot_delete_or_read_usage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path}/s.db"
    monkeypatch.setenv("FLOWER_ENCRYPTION_KEY", generate_key())
    with open_session_store(settings=settings_for(url)) as store:
        store.append(KEY, [turn(0), turn(1, "assistant")])
    monkeypatch.setenv("FLOWER_ENCRYPTION_KEY", generate_key())
    with open_session_store(settings=settings_for(url)) as store:
        with pytest.raises(EncryptionKeyError, match="wrong encryption key"):
            store.delete(KEY)
        with pytest.raises(EncryptionKeyError, match="wrong encryption key"):
            store.last_usage(KEY)
        # The index stays listable: it is what the store holds in the clear.
        assert store.exists(KEY)
        assert [i.session_id for i in store.list_sessions(KEY.project_key)] == ["s1"]
    with open_session_store(url, settings=Settings()) as raw:
        assert len(raw.load(KEY) or []) == 2


def test_a_wrong_key_cannot_delete_from_a_store_without_a_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = sealed_without_check(tmp_path, generate_key())
    monkeypatch.setenv("FLOWER_ENCRYPTION_KEY", generate_key())
    with (
        open_session_store(settings=settings_for(url)) as store,
        pytest.raises(EncryptionKeyError, match="wrong encryption key"),
    ):
        store.delete(KEY)
    with open_session_store(url, settings=Settings()) as raw:
        assert len(raw.load(KEY) or []) == 2


@pytest.mark.parametrize(
    ("backend", "spellings"),
    [
        ("sqlite", ["sqlite:///{cwd}/runs/sessions.db", "sqlite:///./runs/../runs/sessions.db"]),
        ("jsonfs", ["jsonfs://runs/transcripts", "jsonfs:///{cwd}/runs/./transcripts"]),
    ],
)
def test_the_configured_store_is_encrypted_however_its_url_is_spelt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, key_env: str, backend: str, spellings: list
) -> None:
    monkeypatch.chdir(tmp_path)
    settings = Settings(sessions=SessionsConfig(backend=backend, encrypt=True))
    for url in spellings:
        with open_session_store(url.format(cwd=tmp_path), settings=settings) as store:
            assert isinstance(store, EncryptedSessionStore), url
    other = f"{backend}:///{tmp_path}/elsewhere"
    with open_session_store(other, settings=settings) as store:
        assert not isinstance(store, EncryptedSessionStore)


def sealed_elsewhere(tmp_path: Path, key: str) -> list[dict]:
    """``turn(0), turn(1)`` as an encrypted store under ``key`` stores them (raw)."""
    url = f"sqlite:///{tmp_path}/elsewhere.db"
    inner = open_session_store(url, settings=Settings())
    with EncryptedSessionStore(inner, parse_keys(key, "key")) as store:
        store.append(KEY, [turn(0), turn(1, "assistant")])
    with open_session_store(url, settings=Settings()) as raw:
        return raw.load(KEY) or []


def test_an_entry_sealed_under_a_held_key_is_stored_as_it_is(tmp_path: Path, key_env: str) -> None:
    sealed = sealed_elsewhere(tmp_path, key_env)
    url = f"sqlite:///{tmp_path}/s.db"
    with open_session_store(settings=settings_for(url)) as store:
        store.append(KEY, [*sealed, turn(2)])
        assert store.load(KEY) == [turn(0), turn(1, "assistant"), turn(2)]
    with open_session_store(url, settings=Settings()) as raw:
        assert (raw.load(KEY) or [])[:2] == sealed


def test_an_entry_sealed_under_another_key_is_refused(tmp_path: Path, key_env: str) -> None:
    sealed = sealed_elsewhere(tmp_path, generate_key())
    url = f"sqlite:///{tmp_path}/s.db"
    with open_session_store(settings=settings_for(url)) as store:
        with pytest.raises(EncryptionKeyError, match="u0 is already encrypted"):
            store.append(KEY, [turn(5), *sealed])
        damaged = json.loads(json.dumps(sealed_elsewhere(tmp_path / "held", key_env)[0]))
        damaged[ENC]["ct"] = damaged[ENC]["ct"][:-8]
        with pytest.raises(InvalidEntryError, match="does not open"):
            store.append(KEY, [damaged])
    with open_session_store(url, settings=Settings()) as raw:
        assert raw.load(KEY) is None


def test_verify_catches_an_entry_sealed_twice(tmp_path: Path, key_env: str) -> None:
    source = f"sqlite:///{tmp_path}/elsewhere.db"
    sealed = sealed_elsewhere(tmp_path, key_env)
    url = f"sqlite:///{tmp_path}/s.db"
    with open_session_store(settings=settings_for(url)) as store:
        store.inner.append(KEY, store.codec.seal(sealed))  # what sessions copy used to do
        with open_session_store(source, settings=Settings()) as raw:
            [mismatch] = verify_sessions(raw, store, [KEY])
    assert (mismatch.index, mismatch.reason) == (0, "entry u0 is sealed twice")


def test_names_the_listings_hide_cannot_be_written_through_the_wrapper(
    tmp_path: Path, key_env: str
) -> None:
    from flower.core.errors import InvalidKeyError
    from flower.stores.encrypt import CHECK_KEY, STAGING_SUFFIX

    store = open_session_store(settings=settings_for(f"sqlite:///{tmp_path}/sessions.db"))
    try:
        for key in (
            SessionKey(CHECK_KEY.project_key, "mine"),
            SessionKey(KEY.project_key, "s1" + STAGING_SUFFIX),
        ):
            with pytest.raises(InvalidKeyError, match="reserved"):
                store.append(key, [turn(0)])
            assert store.load(key) is None  # nothing was stored, hidden or not
        store.append(KEY, [turn(0)])
        assert [info.session_id for info in store.list_sessions(KEY.project_key)] == ["s1"]
    finally:
        store.close()


def test_a_runtime_without_the_key_is_refused_before_its_run_dir_exists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from flower.runtime.engine import Runtime
    from flower.stores.keyring import EncryptionKeyError

    monkeypatch.delenv("FLOWER_ENCRYPTION_KEY", raising=False)
    monkeypatch.delenv("FLOWER_ENCRYPTION_KEY_FILE", raising=False)
    settings = Settings(sessions=SessionsConfig(encrypt=True))
    with pytest.raises(EncryptionKeyError, match="no key is set"):
        Runtime(tmp_path, tmp_path / "runs", settings=settings)
    assert list(tmp_path.iterdir()) == []


def test_rekey_refuses_a_store_that_is_not_encrypted(tmp_path: Path) -> None:
    from flower.core.errors import FlowerError
    from flower.stores.rekey import RekeyReport, rekey

    with (
        open_session_store(f"sqlite:///{tmp_path}/plain.db", settings=Settings()) as store,
        pytest.raises(FlowerError, match=r"rekey works on an encrypted store: set \[tool"),
    ):
        rekey(store)
    assert RekeyReport("k1", sessions=2, failed=["x"]).as_dict() == {
        "key_id": "k1",
        "sessions": 2,
        "resumed": 0,
        "skipped": 0,
        "entries": 0,
        "failed": ["x"],
    }
