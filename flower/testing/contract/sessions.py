"""The session store contract: the Claude Agent SDK's 14 conformance cases, and ours."""

from __future__ import annotations

import math
import time
import traceback
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

import msgspec

from flower.core.entries import check_batch
from flower.core.errors import FlowerError, InvalidEntryError, InvalidKeyError
from flower.core.protocols import SessionStoreBase
from flower.core.records import Entry, SessionKey
from flower.testing.contract.runner import Case, CaseContext, ContractSkip

if TYPE_CHECKING:
    from multiprocessing.queues import Queue
    from multiprocessing.synchronize import Event

Ctx = CaseContext[SessionStoreBase]

PROJECT = "-home-user-proj"
OTHER_PROJECT = "-home-user-other"
KEY = SessionKey(PROJECT, "5f1c1e4a-0000-4000-8000-000000000001")
OTHER_KEY = SessionKey(PROJECT, "5f1c1e4a-0000-4000-8000-000000000002")


def entry(n: int | str, kind: str = "user", **fields: Any) -> Entry:
    """A Claude-Code-shaped entry with uuid ``u-<n>``."""
    base: Entry = {
        "type": kind,
        "uuid": f"u-{n}",
        "parentUuid": None,
        "sessionId": KEY.session_id,
        "timestamp": "2026-11-30T02:15:31.000Z",
        "isSidechain": False,
        "message": {"role": "assistant" if kind == "assistant" else "user", "content": f"#{n}"},
    }
    base.update(fields)
    return base


def entries(start: int, count: int) -> list[Entry]:
    return [entry(i) for i in range(start, start + count)]


def expect_equal(actual: object, expected: object, what: str) -> None:
    if actual != expected:
        if isinstance(actual, list) and isinstance(expected, list):
            raise AssertionError(
                f"{what}: got {len(actual)} entries, expected {len(expected)}; first "
                f"difference at {_first_difference(actual, expected)}"
            )
        raise AssertionError(f"{what}: got {actual!r:.300}, expected {expected!r:.300}")


def _first_difference(actual: list[Any], expected: list[Any]) -> str:
    for i, (a, b) in enumerate(zip(actual, expected, strict=False)):
        if a != b:
            return f"index {i}: {a!r:.200} != {b!r:.200}"
    return f"index {min(len(actual), len(expected))} (one list is longer)"


def expect_raises(kind: type[BaseException], call: Callable[[], Any], what: str) -> None:
    try:
        call()
    except kind:
        return
    except Exception as exc:
        raise AssertionError(
            f"{what}: raised {type(exc).__name__}: {exc}, expected {kind.__name__}"
        ) from exc
    raise AssertionError(f"{what}: did not raise {kind.__name__}")


def session_ids(store: SessionStoreBase, project_key: str) -> set[str]:
    return {info.session_id for info in store.list_sessions(project_key)}


# -- the Claude Agent SDK's conformance cases ----------------------------------------


def append_then_load(ctx: Ctx) -> None:
    store = ctx.store()
    batch = [
        entry(1, parentUuid=None),
        entry(2, "assistant", parentUuid="u-1", requestId="req_1"),
        {
            "type": "assistant",
            "uuid": "u-3",
            "message": {
                "id": "msg_01",
                "content": [{"type": "tool_use", "id": "toolu_1", "input": {"n": [1, 2.5, -3]}}],
                "usage": {"input_tokens": 10, "output_tokens": 2},
                "stop_reason": None,
            },
            "flags": [True, False, None],
            "ratio": 0.1,
            "big": 2**53,
            "nested": {"a": {"b": {"c": [{}, [], ""]}}},
        },
    ]
    store.append(KEY, batch)
    expect_equal(store.load(KEY), batch, "load after one append")


def unknown_key_is_none(ctx: Ctx) -> None:
    store = ctx.store()
    expect_equal(store.load(KEY), None, "load of a key never appended")
    store.append(KEY, [entry(1)])
    expect_equal(store.load(OTHER_KEY), None, "load of another session")
    expect_equal(store.load(KEY.child("subagents/agent-x")), None, "load of an unused subkey")


def multiple_appends(ctx: Ctx) -> None:
    store = ctx.store()
    store.append(KEY, entries(0, 3))
    store.append(KEY, entries(3, 1))
    store.append(KEY, entries(4, 5))
    expect_equal(store.load(KEY), entries(0, 9), "load after three appends")


def empty_append_is_noop(ctx: Ctx) -> None:
    store = ctx.store()
    store.append(KEY, [])
    expect_equal(store.load(KEY), None, "load after an empty append to a new key")
    expect_equal(session_ids(store, PROJECT), set(), "sessions after an empty append")
    store.append(KEY, entries(0, 2))
    store.append(KEY, [])
    expect_equal(store.load(KEY), entries(0, 2), "load after an empty append")


def subpath_isolation(ctx: Ctx) -> None:
    store = ctx.store()
    sub = KEY.child("subagents/agent-a")
    store.append(KEY, entries(0, 2))
    store.append(sub, entries(10, 3))
    expect_equal(store.load(KEY), entries(0, 2), "main transcript")
    expect_equal(store.load(sub), entries(10, 3), "subkey transcript")


def project_isolation(ctx: Ctx) -> None:
    store = ctx.store()
    mine = KEY
    theirs = SessionKey(OTHER_PROJECT, KEY.session_id)
    store.append(mine, entries(0, 2))
    store.append(theirs, entries(5, 2))
    expect_equal(store.load(mine), entries(0, 2), "same session id, first project")
    expect_equal(store.load(theirs), entries(5, 2), "same session id, second project")


def list_sessions_scoping(ctx: Ctx) -> None:
    store = ctx.store()
    store.append(KEY, entries(0, 1))
    store.append(OTHER_KEY, entries(1, 1))
    store.append(SessionKey(OTHER_PROJECT, "elsewhere"), entries(2, 1))
    expect_equal(
        session_ids(store, PROJECT), {KEY.session_id, OTHER_KEY.session_id}, "first project"
    )
    expect_equal(session_ids(store, OTHER_PROJECT), {"elsewhere"}, "second project")
    expect_equal(store.list_sessions("-never-used"), [], "unknown project")


def list_sessions_mtime_ms(ctx: Ctx) -> None:
    store = ctx.store()
    before = time.time() * 1000
    store.append(KEY, entries(0, 1))
    after = time.time() * 1000
    (info,) = store.list_sessions(PROJECT)
    if not isinstance(info.mtime_ms, int) or isinstance(info.mtime_ms, bool):
        raise AssertionError(f"mtime_ms must be an int, got {info.mtime_ms!r}")
    # Filesystem clocks are coarse; two seconds either way still tells ms from s or us.
    if not before - 2000 <= info.mtime_ms <= after + 2000:
        raise AssertionError(
            f"mtime_ms {info.mtime_ms} is not epoch milliseconds near {int(before)}"
        )


def set_modified_dates_the_listing(ctx: Ctx) -> None:
    store = ctx.store()
    store.append(KEY, entries(0, 1))
    store.append(KEY.child("subagents/agent-a"), entries(1, 1))
    day_ago = int(time.time() * 1000) - 86_400_000
    store.set_modified(KEY.child("subagents/agent-a"), day_ago)  # dates the main transcript
    (info,) = store.list_sessions(PROJECT)
    # filesystems keep coarser times than milliseconds: a second either way is the same date
    if abs(info.mtime_ms - day_ago) > 1000:
        raise AssertionError(f"mtime_ms {info.mtime_ms} after set_modified({day_ago})")
    expect_equal(store.load(KEY), entries(0, 1), "entries after set_modified")
    store.set_modified(OTHER_KEY, day_ago)  # nothing stored there: no error, nothing made
    expect_equal(store.load(OTHER_KEY), None, "a session set_modified did not create")


def list_sessions_excludes_subpaths(ctx: Ctx) -> None:
    store = ctx.store()
    store.append(KEY, entries(0, 1))
    store.append(KEY.child("subagents/agent-a"), entries(1, 1))
    store.append(OTHER_KEY.child("subagents/agent-b"), entries(2, 1))
    listed = [info.session_id for info in store.list_sessions(PROJECT)]
    expect_equal(listed, [KEY.session_id], "sessions (main transcripts only, once each)")


def delete_main(ctx: Ctx) -> None:
    store = ctx.store()
    store.append(KEY, entries(0, 2))
    store.append(OTHER_KEY, entries(2, 2))
    store.delete(KEY)
    expect_equal(store.load(KEY), None, "load after delete")
    expect_equal(session_ids(store, PROJECT), {OTHER_KEY.session_id}, "sessions after delete")
    expect_equal(store.load(OTHER_KEY), entries(2, 2), "the other session")


def delete_cascades(ctx: Ctx) -> None:
    store = ctx.store()
    subs = [KEY.child("subagents/agent-a"), KEY.child("subagents/deep/agent-b")]
    store.append(KEY, entries(0, 1))
    for i, sub in enumerate(subs):
        store.append(sub, entries(10 + i, 1))
    store.append(OTHER_KEY.child("subagents/agent-a"), entries(20, 1))
    store.delete(KEY)
    for sub in subs:
        expect_equal(store.load(sub), None, f"subkey {sub.subpath} after deleting its main key")
    expect_equal(store.list_subkeys(KEY), [], "subkeys after delete")
    expect_equal(
        store.load(OTHER_KEY.child("subagents/agent-a")), entries(20, 1), "another session's subkey"
    )


def delete_unknown_key(ctx: Ctx) -> None:
    store = ctx.store()
    store.delete(KEY)
    store.delete(KEY.child("subagents/none"))
    store.append(OTHER_KEY, entries(0, 1))
    store.delete(KEY)
    expect_equal(store.load(OTHER_KEY), entries(0, 1), "an unrelated session")


def list_subkeys(ctx: Ctx) -> None:
    store = ctx.store()
    expect_equal(store.list_subkeys(KEY), [], "subkeys of an unknown session")
    store.append(KEY, entries(0, 1))
    wanted = {"subagents/agent-a", "subagents/agent-b", "compact/1"}
    for i, subpath in enumerate(sorted(wanted)):
        store.append(KEY.child(subpath), entries(10 + i, 1))
    store.append(OTHER_KEY.child("subagents/theirs"), entries(20, 1))
    expect_equal(set(store.list_subkeys(KEY)), wanted, "subkeys")
    expect_equal(len(store.list_subkeys(KEY)), len(wanted), "subkeys listed once each")


def delete_subkey_only(ctx: Ctx) -> None:
    store = ctx.store()
    a, b = KEY.child("subagents/a"), KEY.child("subagents/b")
    store.append(KEY, entries(0, 1))
    store.append(a, entries(1, 1))
    store.append(b, entries(2, 1))
    store.delete(a)
    expect_equal(store.load(a), None, "deleted subkey")
    expect_equal(store.load(b), entries(2, 1), "sibling subkey")
    expect_equal(store.load(KEY), entries(0, 1), "main transcript")
    expect_equal(store.list_subkeys(KEY), ["subagents/b"], "subkeys after deleting one")


# -- flower's own cases ---------------------------------------------------------------


def idempotent_within_batch(ctx: Ctx) -> None:
    store = ctx.store()
    first = entry(1)
    store.append(KEY, [first, entry(2), {**first, "message": "a retried copy"}, entry(3)])
    expect_equal(store.load(KEY), [first, entry(2), entry(3)], "a uuid twice in one batch")


def idempotent_across_batches(ctx: Ctx) -> None:
    store = ctx.store()
    store.append(KEY, entries(0, 3))
    store.append(KEY, entries(0, 3))  # the SDK retries a failed batch whole
    store.append(KEY, entries(2, 3))  # a retry that overlaps new entries
    expect_equal(store.load(KEY), entries(0, 5), "load after retried batches")
    store.append(KEY.child("subagents/a"), entries(0, 2))
    expect_equal(
        store.load(KEY.child("subagents/a")), entries(0, 2), "same uuids in a subkey are its own"
    )


def entries_without_uuid(ctx: Ctx) -> None:
    store = ctx.store()
    snapshot = {
        "type": "file-history-snapshot",
        "messageId": "m-1",
        "snapshot": {"messageId": "m-1", "trackedFileBackups": {}, "timestamp": "2026-11-30"},
        "isSnapshotUpdate": False,
    }
    explicit_none = {"type": "summary", "uuid": None, "summary": "same text"}
    store.append(KEY, [snapshot, entry(1), snapshot])
    store.append(KEY, [explicit_none, explicit_none])
    expected = [snapshot, entry(1), snapshot, explicit_none, explicit_none]
    expect_equal(store.load(KEY), expected, "entries without uuid are never de-duplicated")


def unicode_text(ctx: Ctx) -> None:
    store = ctx.store()
    texts = [
        "写个 md 转 html 的脚本",
        "顺便支持代码块高亮 🌸",
        "e\u0301 (NFD stays NFD) and é",
        'line\u2028separator\u2029and\ttab\nnewline "quoted" \\ back',
        "Ω≈ç√∫ 日本語 한국어 العربية",
    ]
    batch = [
        entry(i, step=f"干活#{i}", message={"role": "user", "content": text})
        for i, text in enumerate(texts)
    ]
    batch.append({"type": "custom-title", "uuid": "标题-1", "customTitle": "需求 · 目标"})
    sub = KEY.child("步骤/干活")
    store.append(KEY, batch)
    store.append(sub, batch[:1])
    expect_equal(store.load(KEY), batch, "CJK and other unicode text")
    expect_equal(store.load(sub), batch[:1], "a CJK subpath")
    expect_equal(store.list_subkeys(KEY), ["步骤/干活"], "CJK subkey listing")


def control_characters(ctx: Ctx) -> None:
    store = ctx.store()
    batch = [entry(1, message={"role": "user", "content": "nul \x00 bell \x07 esc \x1b del \x7f"})]
    store.append(KEY, batch)
    expect_equal(store.load(KEY), batch, "control characters inside strings")


def lone_surrogate(ctx: Ctx) -> None:
    # what Node's JSON.stringify writes for a string cut in the middle of an emoji
    store = ctx.store()
    batch = [entry(1, message={"role": "user", "content": "cut mid-emoji \ud83d"})]
    store.append(KEY, batch)
    expect_equal(store.load(KEY), batch, "a lone surrogate inside a string")
    expect_equal(list(store.iter_entries(KEY)), batch, "iter_entries of a lone surrogate")


def odd_uuids_and_types(ctx: Ctx) -> None:
    """A uuid or type is any string: one no database text column holds as it is (a lone
    surrogate, NUL) is stored, de-duplicated and told apart from look-alikes all the same."""
    store = ctx.store()
    odd = ["\ud83d", "cut \udc00", "nul \x00 byte", '\ufffe"\\ud83d"', "\ufffe"]
    batch = [{"type": text, "uuid": text} for text in odd]
    usage = {"input_tokens": 1, "note \ud83d": "\x00"}
    batch.append(entry("usage", "assistant", message={"role": "assistant", "usage": usage}))
    store.append(KEY, batch)
    store.append(KEY, [*batch, {"type": "user", "uuid": "\ud83d", "retried": True}])
    expect_equal(store.load(KEY), batch, "odd uuids and types, appended twice")
    expect_equal(list(store.iter_entries(KEY)), batch, "iter_entries of odd uuids and types")
    expect_equal(store.last_usage(KEY), usage, "last_usage holding a lone surrogate and NUL")


def ten_megabyte_entry(ctx: Ctx) -> None:
    store = ctx.store()
    unit = 'abc 漢字 "q" \\ \n\t{}[],:'
    body = unit * (10 * 1024 * 1024 // (len(msgspec.json.encode(unit)) - 2) + 1)
    big = entry(
        "big",
        message={
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_big", "content": body}],
        },
    )
    if len(msgspec.json.encode(big)) < 10 * 1024 * 1024:
        raise AssertionError("test bug: the big entry is under 10 MB")
    store.append(KEY, [entry(1), big, entry(2)])
    expect_equal(store.load(KEY), [entry(1), big, entry(2)], "a 10 MB entry between small ones")


def ten_thousand_entries(ctx: Ctx) -> None:
    store = ctx.store()
    for start in range(0, 10_000, 1_000):
        store.append(KEY, entries(start, 1_000))
    expected = entries(0, 10_000)
    expect_equal(store.load(KEY), expected, "load of 10,000 entries")
    expect_equal(list(store.iter_entries(KEY)), expected, "iter_entries of 10,000 entries")


WRITERS = 2
BATCHES = 40
PER_BATCH = 4


def _writer_entry(writer: int, batch: int, i: int) -> Entry:
    return entry(f"w{writer}-{batch}-{i}", writer=writer)


def _shared_entry(batch: int) -> Entry:
    return entry(f"shared-{batch}", note="appended by every writer")


def concurrent_writer(
    opener: Callable[[], SessionStoreBase],
    key: SessionKey,
    writer: int,
    start: Event,
    errors: Queue[str],
) -> None:
    """Child process body: append BATCHES batches, each with one uuid every writer sends."""
    try:
        store = opener()
        try:
            start.wait(30)
            for batch in range(BATCHES):
                own = [_writer_entry(writer, batch, i) for i in range(PER_BATCH)]
                store.append(key, [*own[:2], _shared_entry(batch), *own[2:]])
        finally:
            store.close()
    except BaseException:
        errors.put(f"writer {writer}: {traceback.format_exc()}")
        raise


def concurrent_processes(ctx: Ctx) -> None:
    import multiprocessing
    import pickle

    store = ctx.store()
    opener = ctx.opener(store)
    try:
        pickle.dumps(opener)
    except Exception as exc:
        raise ContractSkip(
            f"the reopen callable {opener!r} is not picklable ({exc}); two processes need it"
        ) from None
    mp = multiprocessing.get_context("spawn")
    start, errors = mp.Event(), mp.Queue()
    procs = [
        mp.Process(target=concurrent_writer, args=(opener, KEY, w, start, errors), daemon=True)
        for w in range(WRITERS)
    ]
    for proc in procs:
        proc.start()
    start.set()
    for proc in procs:
        proc.join(120)
    stuck = [p.pid for p in procs if p.is_alive()]
    for proc in procs:
        if proc.is_alive():
            proc.kill()
    if stuck:
        raise AssertionError(f"writer processes {stuck} did not finish within 120 s")
    failures = []
    while not errors.empty():
        failures.append(errors.get())
    if failures:
        raise AssertionError("a writer process failed:\n" + "\n".join(failures))
    codes = [p.exitcode for p in procs]
    if any(code != 0 for code in codes):
        raise AssertionError(
            f"writer processes exited with codes {codes} before appending anything: a child "
            "process re-imports the calling script, so call the suite from a script under "
            '`if __name__ == "__main__":` (or from pytest)'
        )

    loaded = store.load(KEY) or []
    uuids = [e.get("uuid") for e in loaded]
    dupes = {u for u in uuids if uuids.count(u) > 1}
    if dupes:
        raise AssertionError(f"{len(dupes)} uuids stored twice, e.g. {sorted(dupes, key=str)[:3]}")
    expected_count = WRITERS * BATCHES * PER_BATCH + BATCHES
    expect_equal(len(loaded), expected_count, "entries after two processes appended")
    for writer in range(WRITERS):
        own = [e for e in loaded if e.get("writer") == writer]
        wanted = [_writer_entry(writer, b, i) for b in range(BATCHES) for i in range(PER_BATCH)]
        expect_equal(own, wanted, f"writer {writer}'s entries, in its order")
    shared = [e for e in loaded if "note" in e]
    expect_equal(shared, [_shared_entry(b) for b in range(BATCHES)], "shared uuids, once each")


def _nested(levels: int) -> Any:
    value: Any = "leaf \ud83d"
    for level in range(levels):
        value = [value] if level % 2 else {"k": value}
    return value


def _load_from_deep_in_the_stack(store: SessionStoreBase, key: SessionKey, frames: int) -> Any:
    if frames:
        return _load_from_deep_in_the_stack(store, key, frames - 1)
    return store.load(key), list(store.iter_entries(key))


def deep_nesting(ctx: Ctx) -> None:
    """Nesting a transcript may hold loads back from anywhere; far deeper is refused."""
    store = ctx.store()
    deep = entry(1, payload=_nested(150))
    store.append(KEY, [deep])
    loaded = _load_from_deep_in_the_stack(store, KEY, 500)
    expect_equal(loaded, ([deep], [deep]), "150 levels of nesting, loaded 500 calls deep")
    for levels in (900, 1000, 5000):
        expect_raises(
            FlowerError,
            partial(store.append, KEY, [entry(2), entry(3, payload=_nested(levels))]),
            f"{levels} levels of nesting",
        )
    expect_equal(store.load(KEY), [deep], "the transcript after refusing deep entries")


def _bad_entries() -> list[tuple[str, Any]]:
    return [
        ("an object()", entry(9, payload=object())),
        ("a set", entry(9, payload={1, 2})),
        ("bytes", entry(9, payload=b"raw")),
        ("NaN", entry(9, score=math.nan)),
        ("infinity", entry(9, score=math.inf)),
        ("a non-string key", entry(9, payload={1: "one"})),
        ("no type", {"uuid": "u-9", "message": "x"}),
        ("a list instead of a dict", ["type", "user"]),
        ("a non-string uuid", {"type": "user", "uuid": 9}),
    ]


def rejects_non_json_safe(ctx: Ctx) -> None:
    store = ctx.store()
    store.append(OTHER_KEY, entries(0, 2))
    for what, bad in _bad_entries():
        expect_raises(
            FlowerError, partial(store.append, KEY, [entry(1), bad]), f"a batch with {what}"
        )
        expect_equal(store.load(KEY), None, f"new session after rejecting {what}")
        expect_raises(
            FlowerError,
            partial(store.append, OTHER_KEY, [entry(5), bad]),
            f"an append of {what} to an existing session",
        )
        expect_equal(store.load(OTHER_KEY), entries(0, 2), f"existing session after {what}")


def rejects_non_list_batches(ctx: Ctx) -> None:
    store = ctx.store()
    store.append(OTHER_KEY, entries(0, 2))
    batches: list[tuple[str, Callable[[], Any]]] = [
        ("a dict", lambda: entry(1)),
        ("an empty dict", dict),
        ("a generator", lambda: (e for e in entries(1, 2))),
        ("a string", lambda: "user"),
    ]
    for what, make in batches:
        try:
            check_batch(make())
        except InvalidEntryError as exc:
            words = str(exc)  # "entries must be a list of dicts, ..." in the active language
        for key in (KEY, OTHER_KEY):
            try:
                store.append(key, make())
            except InvalidEntryError as exc:
                if words not in str(exc):
                    raise AssertionError(
                        f"append of {what}: {exc!s:.200} does not say {words!r}"
                    ) from exc
            else:
                raise AssertionError(f"append of {what} was not refused")
        expect_equal(store.load(KEY), None, f"new session after refusing {what}")
        expect_equal(store.load(OTHER_KEY), entries(0, 2), f"existing session after {what}")


HOSTILE_NAMES = ["", ".", "..", "../x", "a/b", "/etc", "a\\b", "nul\x00byte", "cut \ud83d"]
HOSTILE_SUBPATHS = [
    *("", "/abs", "../up", "a/../b", "a//b", "a/./b", "trailing/", "nul\x00", "a\\b"),
    "subagents/cut \udc00",
]


def hostile_keys_rejected(ctx: Ctx) -> None:
    store = ctx.store()
    for bad in HOSTILE_NAMES:
        expect_raises(InvalidKeyError, partial(SessionKey, PROJECT, bad), f"session id {bad!r}")
        expect_raises(InvalidKeyError, partial(SessionKey, bad, "s"), f"project key {bad!r}")
        expect_raises(InvalidKeyError, partial(store.list_sessions, bad), f"list_sessions({bad!r})")
    for bad in HOSTILE_SUBPATHS:
        expect_raises(InvalidKeyError, partial(KEY.child, bad), f"subpath {bad!r}")
    expect_equal(store.list_sessions(PROJECT), [], "sessions after hostile keys")


def forged_keys_rejected(ctx: Ctx) -> None:
    """Keys forged past SessionKey's own checks still never reach storage."""
    store = ctx.store()
    forged: list[SessionKey] = []
    for field_name, values in (
        ("project_key", HOSTILE_NAMES),
        ("session_id", HOSTILE_NAMES),
        ("subpath", HOSTILE_SUBPATHS),
    ):
        for bad in values:
            key = SessionKey(PROJECT, "forged")
            msgspec.structs.force_setattr(key, field_name, bad)
            forged.append(key)
    for key in forged:
        expect_raises(InvalidKeyError, partial(store.append, key, [entry(1)]), f"append {key}")
        expect_raises(InvalidKeyError, partial(store.load, key), f"load {key}")
    expect_equal(store.list_sessions(PROJECT), [], "sessions after forged keys")


def exists_tracks_appends(ctx: Ctx) -> None:
    store = ctx.store()
    expect_equal(store.exists(KEY), False, "exists before any append")
    store.append(KEY, entries(0, 1))
    expect_equal(store.exists(KEY), True, "exists after an append")
    expect_equal(store.exists(KEY.child("subagents/a")), False, "exists of an unused subkey")
    store.delete(KEY)
    expect_equal(store.exists(KEY), False, "exists after delete")


def last_usage_of_last_assistant(ctx: Ctx) -> None:
    store = ctx.store()
    expect_equal(store.last_usage(KEY), None, "last_usage of an unknown key")
    store.append(KEY, [entry(1)])
    expect_equal(store.last_usage(KEY), None, "last_usage with no assistant entry")
    first = {"input_tokens": 100, "output_tokens": 5}
    last = {"input_tokens": 80_200, "output_tokens": 7, "cache_read_input_tokens": 80_000}
    store.append(
        KEY,
        [
            entry(2, "assistant", message={"role": "assistant", "content": [], "usage": first}),
            entry(3, "assistant", message={"role": "assistant", "content": [], "usage": last}),
            entry(4, message={"role": "user", "content": "x" * 200_000}),
            {"type": "file-history-snapshot", "messageId": "m", "snapshot": {}},
        ],
    )
    expect_equal(store.last_usage(KEY), last, "usage of the last assistant entry")
    # an API-error entry the harness made up is no answer: its zero usage does not count
    synthetic = {"role": "assistant", "model": "<synthetic>", "content": [],
                 "usage": {"input_tokens": 0, "output_tokens": 0}}  # fmt: skip
    store.append(KEY, [entry(5, "assistant", message=synthetic, isApiErrorMessage=True)])
    expect_equal(store.last_usage(KEY), last, "usage after a synthetic API-error entry")
    # A retried batch adds nothing, so it cannot change which assistant entry is last.
    store.append(
        KEY, [entry(2, "assistant", message={"role": "assistant", "content": [], "usage": first})]
    )
    expect_equal(store.last_usage(KEY), last, "usage after re-appending an older entry")
    # Nor when the retry comes with new entries, or repeats a uuid of its own batch.
    older = entry(2, "assistant", message={"role": "assistant", "content": [], "usage": first})
    store.append(KEY, [entry(6), older])
    expect_equal(store.last_usage(KEY), last, "usage after a batch retrying an older entry")
    newest = {"input_tokens": 90_000, "output_tokens": 1}
    answer = entry(7, "assistant", message={"role": "assistant", "content": [], "usage": newest})
    resent = {**answer, "message": {"role": "assistant", "content": [], "usage": first}}
    store.append(KEY, [answer, entry(8), resent])
    expect_equal(store.last_usage(KEY), newest, "usage after a uuid repeated in its batch")


def iter_entries_matches_load(ctx: Ctx) -> None:
    store = ctx.store()
    expect_equal(list(store.iter_entries(KEY)), [], "iter_entries of an unknown key")
    store.append(KEY, entries(0, 50))
    expect_equal(list(store.iter_entries(KEY)), store.load(KEY), "iter_entries vs load")


def find_session_and_projects(ctx: Ctx) -> None:
    store = ctx.store()
    theirs = SessionKey(OTHER_PROJECT, "only-there")
    store.append(KEY, entries(0, 1))
    store.append(theirs, entries(1, 1))
    expect_equal(store.find_session("only-there"), theirs, "find_session in another project")
    expect_equal(store.find_session(KEY.session_id), KEY, "find_session")
    expect_equal(store.find_session("never-seen"), None, "find_session of an unknown id")
    projects = set(store.list_projects())
    if not {PROJECT, OTHER_PROJECT} <= projects:
        raise AssertionError(f"list_projects {sorted(projects)} misses a project")


def find_session_prefers_newest(ctx: Ctx) -> None:
    """One session id in several projects: find_session answers the newest, as the CLI
    does (with a note naming the others), whatever the projects' names."""
    store = ctx.store()
    first, last = SessionKey("-a-first", "twice"), SessionKey("-z-last", "twice")
    store.append(first, entries(0, 1))
    store.append(last, entries(1, 1))
    day_ago = int(time.time() * 1000) - 86_400_000
    for older, newer in ((first, last), (last, first)):
        store.set_modified(older, day_ago - 86_400_000)
        store.set_modified(newer, day_ago)
        expect_equal(store.find_session("twice"), newer, f"find_session, {newer} newest")


def projects_follow_transcripts(ctx: Ctx) -> None:
    """A project is listed while it holds a transcript, main or subkey, whatever its name."""
    store = ctx.store()
    dotted = SessionKey(".dotted", "in-a-dotted-project")  # valid, though no path makes it
    subkey_only = SessionKey(OTHER_PROJECT, "no-main").child("subagents/a")
    store.append(dotted, entries(0, 1))
    store.append(subkey_only, entries(1, 1))
    store.append(KEY, entries(2, 1))
    expect_equal(
        sorted(store.list_projects()), sorted([".dotted", OTHER_PROJECT, PROJECT]), "projects"
    )
    expect_equal(store.find_session(dotted.session_id), dotted, "find_session, dotted project")
    store.delete(dotted)
    store.delete(subkey_only)
    expect_equal(store.list_projects(), [PROJECT], "projects after deleting their sessions")
    store.delete(KEY)
    expect_equal(store.list_projects(), [], "projects after deleting every session")


def reopen_sees_appends(ctx: Ctx) -> None:
    store = ctx.store()
    store.append(KEY, entries(0, 3))
    other = ctx.reopened(store)
    expect_equal(other.load(KEY), entries(0, 3), "a second handle's load")
    other.append(KEY, entries(2, 3))  # overlaps: the second handle knows uuids it did not write
    expect_equal(store.load(KEY), entries(0, 5), "first handle after the second appended")


def no_leftovers_after_appends(ctx: Ctx) -> None:
    store = ctx.store()
    store.append(KEY, entries(0, 2))
    store.append(KEY.child("subagents/agent-a"), entries(2, 1))
    store.append(OTHER_KEY, entries(3, 1))
    # every file is old enough by this clock: what is listed must still be no transcript
    expect_equal(store.leftovers(0, time.time() + 86_400), [], "leftovers of a store never killed")
    expect_equal(store.load(KEY), entries(0, 2), "a session after listing leftovers")
    expect_equal(store.load(KEY.child("subagents/agent-a")), entries(2, 1), "its subkey")


SESSION_CASES: list[Case[SessionStoreBase]] = [
    Case("append_then_load", "load is deep-equal to what was appended, in order", append_then_load),
    Case("unknown_key_is_none", "load of an unknown key is None", unknown_key_is_none),
    Case("multiple_appends", "appends concatenate in order", multiple_appends),
    Case(
        "empty_append_is_noop", "append(key, []) creates and changes nothing", empty_append_is_noop
    ),
    Case("subpath_isolation", "a subkey is its own transcript", subpath_isolation),
    Case("project_isolation", "one session id in two projects is two sessions", project_isolation),
    Case("list_sessions_scoping", "list_sessions lists one project only", list_sessions_scoping),
    Case("list_sessions_mtime_ms", "mtime is int epoch milliseconds", list_sessions_mtime_ms),
    Case(
        "set_modified_dates_the_listing",
        "set_modified sets what list_sessions reports",
        set_modified_dates_the_listing,
    ),
    Case(
        "list_sessions_excludes_subpaths",
        "list_sessions lists main transcripts only",
        list_sessions_excludes_subpaths,
    ),
    Case("delete_main", "delete removes one session", delete_main),
    Case("delete_cascades", "deleting a main key deletes its subkeys", delete_cascades),
    Case("delete_unknown_key", "deleting an unknown key is no error", delete_unknown_key),
    Case("list_subkeys", "list_subkeys lists a session's subpaths", list_subkeys),
    Case("delete_subkey_only", "deleting a subkey leaves the rest", delete_subkey_only),
    Case(
        "idempotent_within_batch",
        "a uuid repeated in a batch is kept once",
        idempotent_within_batch,
    ),
    Case(
        "idempotent_across_batches", "a retried batch adds nothing twice", idempotent_across_batches
    ),
    Case("entries_without_uuid", "entries without uuid are all kept", entries_without_uuid),
    Case("unicode_text", "CJK step names and text survive exactly", unicode_text),
    Case("control_characters", "NUL and control characters in strings survive", control_characters),
    Case(
        "lone_surrogate", "a lone surrogate escape (Node's cut emoji) round-trips", lone_surrogate
    ),
    Case(
        "odd_uuids_and_types",
        "a lone surrogate or NUL in a uuid or type is stored and de-duplicated",
        odd_uuids_and_types,
    ),
    Case("ten_megabyte_entry", "a 10 MB entry round-trips", ten_megabyte_entry),
    Case("ten_thousand_entries", "10,000 entries round-trip in order", ten_thousand_entries),
    Case(
        "concurrent_processes",
        "two processes appending to one session lose and double nothing",
        concurrent_processes,
    ),
    Case("deep_nesting", "deep entries load back from anywhere or are refused", deep_nesting),
    Case(
        "rejects_non_json_safe",
        "a bad entry fails its batch, nothing written",
        rejects_non_json_safe,
    ),
    Case(
        "rejects_non_list_batches",
        "a dict, a generator or a string as the batch is refused as such, nothing written",
        rejects_non_list_batches,
    ),
    Case(
        "hostile_keys_rejected", "'..', '/', NUL and empty names are refused", hostile_keys_rejected
    ),
    Case("forged_keys_rejected", "keys forged past validation are refused", forged_keys_rejected),
    Case("exists_tracks_appends", "exists follows append and delete", exists_tracks_appends),
    Case(
        "last_usage", "last_usage is the last assistant entry's usage", last_usage_of_last_assistant
    ),
    Case(
        "iter_entries_matches_load",
        "iter_entries yields what load returns",
        iter_entries_matches_load,
    ),
    Case("find_session_and_projects", "find_session and list_projects", find_session_and_projects),
    Case(
        "find_session_prefers_newest",
        "find_session answers the newest of several projects",
        find_session_prefers_newest,
    ),
    Case(
        "projects_follow_transcripts",
        "list_projects lists the projects holding a transcript",
        projects_follow_transcripts,
    ),
    Case("reopen_sees_appends", "a second handle sees and respects appends", reopen_sees_appends),
    Case(
        "no_leftovers_after_appends",
        "leftovers lists no transcript of a store never killed",
        no_leftovers_after_appends,
    ),
]
