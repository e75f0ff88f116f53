"""PruningSessionStore: pass-through writes, pruned loads, configuration, bad input."""

from __future__ import annotations

import copy
import json
import re
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

import msgspec
import pruning_memory_store
import pytest
from pruning_builders import TranscriptBuilder
from pruning_memory_store import MemoryStore

from flower.core.config import Settings, load_settings, policy_options
from flower.core.errors import ConfigError
from flower.core.plugins import reset_registry
from flower.core.protocols import PruneContext
from flower.core.records import SessionKey
from flower.core.transcript import (
    active_chain,
    check_conversation,
    conversation,
    conversation_problems,
    drop_entries,
    interrupted_note,
)
from flower.stores.prune import (
    PruningSessionStore,
    PruningWarning,
    policy_names,
    prune,
    prune_in_detail,
    prune_with_stats,
)
from flower_plugins.pruning.policies import Denials, Interrupted, SyntheticErrors

pytestmark = pytest.mark.usefixtures("english")  # expects flower's English output

KEY = SessionKey("-home-user-proj", "sess-1")


def _messy() -> list[dict]:
    b = TranscriptBuilder()
    b.user("go")
    b.denied("rm -rf a")
    b.denied("rm -rf b")
    b.api_error()
    b.user("continue")
    b.tool_round([("Bash", {"command": "git status"}, "clean", False)])
    b.cut()
    return b.entries


def test_append_passes_through_and_storage_keeps_everything(tmp_path: Path) -> None:
    inner = MemoryStore()
    store = PruningSessionStore.from_settings(inner, Settings(), run_dir=tmp_path)
    raw = _messy()
    store.append(KEY, raw)
    assert inner.data[KEY] == raw
    pruned = store.load(KEY)
    assert pruned is not None and len(pruned) < len(raw)
    check_conversation(conversation(pruned))
    assert store.load_raw(KEY) == raw
    assert inner.data[KEY] == raw  # a load never writes back
    assert store.load(SessionKey("p", "unknown")) is None
    assert store.list_projects() == ["-home-user-proj"]
    # what a caller already loaded gives the same view, with or without the counts
    assert store.prune_loaded(KEY, raw) == pruned
    with_stats = store.load_with_stats(KEY)
    assert with_stats is not None and with_stats[0] == pruned
    detail = store.prune_loaded_in_detail(KEY, raw)
    assert detail.entries == pruned and detail.off_chain == 0
    assert [row.policy for row in detail.policies] == [p.name for p in store.policies] + [
        "(repair)"
    ]
    assert store.load_with_stats(SessionKey("p", "unknown")) is None


def test_from_settings_builds_the_configured_chain(tmp_path: Path) -> None:
    settings = Settings()
    assert policy_names(settings) == [
        "synthetic-errors",
        "denials",
        "interrupted",
        "ephemeral",
        "trim",
    ]
    assert policy_names(settings, trim=False) == [
        "synthetic-errors",
        "denials",
        "interrupted",
        "ephemeral",
    ]
    assert policy_names(settings, ephemeral=False, trim=False) == [
        "synthetic-errors",
        "denials",
        "interrupted",
    ]
    store = PruningSessionStore.from_settings(
        MemoryStore(), settings, trim=False, keep_denials=3, run_dir=tmp_path
    )
    assert [p.name for p in store.policies] == [
        "synthetic-errors",
        "denials",
        "interrupted",
        "ephemeral",
    ]
    assert store.policies[1].keep == 3  # type: ignore[attr-defined]
    assert settings.pruning.keep_denials == 1  # the override did not leak into the settings


def test_configuration_in_pyproject_selects_and_orders_policies(in_tmp: Path) -> None:
    (in_tmp / "pyproject.toml").write_text(
        '[tool.flower.pruning]\npolicies = ["denials", "synthetic-errors"]\n'
        "keep_denials = 0\nephemeral = false\n"
        "[tool.flower.trim]\nenabled = false\n"
    )
    settings = load_settings().settings
    store = PruningSessionStore.from_settings(MemoryStore(), settings)
    assert [p.name for p in store.policies] == ["denials", "synthetic-errors"]
    assert store.run_dir == Path("runs")
    store.append(KEY, _messy())
    with pytest.warns(PruningWarning, match="repaired"):  # "interrupted" is not configured
        pruned = store.load(KEY)
    assert pruned is not None
    assert not any("rm -rf" in str(e.get("message")) for e in pruned)


def test_an_unknown_policy_name_is_a_config_error_listing_what_exists() -> None:
    settings = Settings()
    settings.pruning.policies = ["synthetic-errors", "no-such-policy"]
    with pytest.raises(ConfigError) as info:
        PruningSessionStore.from_settings(MemoryStore(), settings)
    text = str(info.value)
    assert "no-such-policy" in text
    for name in ("synthetic-errors", "denials", "interrupted", "ephemeral", "trim"):
        assert name in text
    assert info.value.exit_code == 2


def test_negative_keep_denials_is_a_config_error() -> None:
    with pytest.raises(ConfigError):
        PruningSessionStore.from_settings(MemoryStore(), Settings(), keep_denials=-1)


def test_an_unknown_policy_name_suggests_the_close_one() -> None:
    settings = Settings()
    settings.pruning.policies = ["synthetic-errors", "interupted"]
    with pytest.raises(ConfigError, match=r"did you mean 'interrupted'\?"):
        PruningSessionStore.from_settings(MemoryStore(), settings)


def test_a_policy_listed_twice_is_a_config_error() -> None:
    settings = Settings()
    settings.pruning.policies = ["denials", "synthetic-errors", "denials"]
    with pytest.raises(ConfigError, match="'denials' listed twice"):
        PruningSessionStore.from_settings(MemoryStore(), settings)


def test_options_for_a_policy_no_plugin_provides_are_a_config_error() -> None:
    settings = Settings()
    settings.pruning.options = {"drop-thinkng": {"keep_turns": 1}}
    with pytest.raises(ConfigError) as info:
        PruningSessionStore.from_settings(MemoryStore(), settings)
    assert "[tool.flower.pruning.options.drop-thinkng]" in str(info.value)
    assert "available: " in str(info.value)


@pytest.fixture
def test_policies() -> Iterator[None]:
    reset_registry(extra=[pruning_memory_store])
    yield
    reset_registry()


def test_a_policy_whose_factory_breaks_is_left_out_and_the_load_goes_on(
    test_policies: None,
) -> None:
    settings = Settings()
    settings.pruning.policies = ["broken-factory-test", "synthetic-errors", "no-prune-test"]
    inner = MemoryStore()
    inner.append(KEY, _messy())
    with pytest.warns(PruningWarning) as record:
        store = PruningSessionStore.from_settings(inner, settings, trim=False)
    messages = [str(w.message) for w in record]
    assert any(
        "'broken-factory-test'" in m and "left out" in m and "ValueError" in m for m in messages
    )
    assert any("'no-prune-test'" in m and "no prune()" in m for m in messages)
    assert [p.name for p in store.policies] == ["synthetic-errors"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PruningWarning)  # the repair of the cut call
        pruned = store.load(KEY)
    assert pruned is not None and not any(e.get("isApiErrorMessage") for e in pruned)


def test_a_factory_rejecting_its_options_is_a_config_error(test_policies: None) -> None:
    settings = Settings()
    settings.pruning.policies = ["strict-test"]
    with pytest.raises(ConfigError, match=r"options.strict-test\] level"):
        PruningSessionStore.from_settings(MemoryStore(), settings)


def test_a_factorys_bare_config_error_is_placed_in_its_options_table(
    test_policies: None,
) -> None:
    settings = Settings()
    settings.pruning.policies = ["bare-config-test"]
    with pytest.raises(ConfigError) as info:
        PruningSessionStore.from_settings(MemoryStore(), settings)
    assert str(info.value) == (
        "[tool.flower.pruning.options.bare-config-test]: option 'level' must be one of: low, high"
    )
    assert info.value.key == "pruning.options"


def test_warnings_name_a_policy_as_the_configuration_does(test_policies: None) -> None:
    settings = Settings()
    settings.pruning.policies = ["misnamed-test"]
    store = PruningSessionStore.from_settings(MemoryStore(), settings, trim=False)
    store.inner.append(KEY, _messy())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        store.load(KEY)
    assert any("pruning policy 'misnamed-test' failed" in str(w.message) for w in caught)
    assert not any("what-the-class-says" in str(w.message) for w in caught)


def test_an_options_table_for_a_builtin_policy_says_where_its_settings_go() -> None:
    settings = Settings()
    settings.pruning.options = {"trim": {"min_chars": "x"}}
    with pytest.raises(ConfigError) as info:
        PruningSessionStore.from_settings(MemoryStore(), settings)
    assert str(info.value) == (
        "[tool.flower.pruning.options.trim]: the built-in policy 'trim' takes no options "
        "table; set [tool.flower.trim] enabled, min_chars and keep_recent_turns"
    )


def test_a_policy_listed_twice_is_caught_even_when_switched_off() -> None:
    settings = Settings()
    settings.pruning.policies = ["denials", "trim", "trim"]
    with pytest.raises(ConfigError, match="'trim' listed twice"):
        PruningSessionStore.from_settings(MemoryStore(), settings, trim=False)


def test_policy_options_decodes_a_plugin_table_and_names_the_key() -> None:
    class Options(msgspec.Struct, forbid_unknown_fields=True):
        keep_turns: Annotated[int, msgspec.Meta(ge=0)] = 2

    def options(table: dict) -> Options:
        settings = Settings()
        settings.pruning.options = {"drop-thinking": table}
        return policy_options(settings, "drop-thinking", Options)

    assert options({}).keep_turns == 2 and options({"keep_turns": 5}).keep_turns == 5
    table = "[tool.flower.pruning.options.drop-thinking]"
    with pytest.raises(ConfigError, match=re.escape(f"{table} keep_turns: Expected `int`")):
        options({"keep_turns": "two"})
    with pytest.raises(ConfigError, match=re.escape(f"{table} keep_turns: Expected `int` >= 0")):
        options({"keep_turns": -1})
    with pytest.raises(
        ConfigError, match=r"keep_turn: unknown key \(expected one of: keep_turns\)"
    ):
        options({"keep_turn": 1})


def test_negative_counts_in_pyproject_are_config_errors_naming_the_file(in_tmp: Path) -> None:
    pyproject = in_tmp / "pyproject.toml"
    for table, key in (
        ("pruning", "keep_denials"),
        ("trim", "min_chars"),
        ("trim", "keep_recent_turns"),
    ):
        pyproject.write_text(f"[tool.flower.{table}]\n{key} = -1\n")
        with pytest.raises(ConfigError) as info:
            load_settings()
        assert str(info.value).startswith(f"{pyproject}: [tool.flower.{table}] {key}: ")
        assert ">= 0" in str(info.value)


class Exploding:
    name = "exploding"

    def prune(self, entries: list[dict], ctx: PruneContext) -> list[dict]:
        raise RuntimeError("kaboom")


class ReturnsGarbage:
    name = "garbage"

    def prune(self, entries: list[dict], ctx: PruneContext) -> object:
        return None


def test_a_failing_policy_is_skipped_with_a_warning_naming_it_and_the_session() -> None:
    inner = MemoryStore()
    inner.append(KEY, _messy())
    store = PruningSessionStore(
        inner, [Exploding(), SyntheticErrors(), ReturnsGarbage(), Denials()]
    )
    with pytest.warns(PruningWarning) as record:
        pruned = store.load(KEY)
    messages = [str(w.message) for w in record]
    assert any("'exploding'" in m and "sess-1" in m and "kaboom" in m for m in messages)
    assert any("'garbage'" in m for m in messages)
    assert pruned is not None
    assert not any(e.get("isApiErrorMessage") for e in pruned)  # the others still ran
    check_conversation(conversation(pruned))


class ReturnsStrangers:
    name = "strangers"

    def prune(self, entries: list[dict], ctx: PruneContext) -> list:
        return [1, "two", None, *entries]


class Exits:
    name = "exits"

    def prune(self, entries: list[dict], ctx: PruneContext) -> list[dict]:
        raise SystemExit(3)


class EmptiesIt:
    name = "empties"

    def prune(self, entries: list[dict], ctx: PruneContext) -> list[dict]:
        return []


@pytest.mark.parametrize("detail", [False, True])
def test_a_policy_returning_non_entries_or_exiting_is_blamed_and_skipped(detail: bool) -> None:
    inner = MemoryStore()
    inner.append(KEY, _messy())
    store = PruningSessionStore(inner, [ReturnsStrangers(), Exits(), SyntheticErrors()])
    with pytest.warns(PruningWarning) as record:
        if detail:
            result = store.load_with_stats(KEY)
            assert result is not None
            pruned, stats = result
            failed = {row.policy: row.error for row in stats}
            assert "holding int, not only entries" in (failed["strangers"] or "")
            assert "sys.exit(3)" in (failed["exits"] or "")
        else:
            pruned = store.load(KEY)
    messages = [str(w.message) for w in record]
    assert any("'strangers' failed" in m and "holding int" in m for m in messages)
    assert any("'exits' failed" in m and "sys.exit(3)" in m for m in messages)
    assert not any("synthetic-errors" in m for m in messages)  # the good one is not blamed
    assert pruned is not None and all(isinstance(e, dict) for e in pruned)
    assert not any(e.get("isApiErrorMessage") for e in pruned)


def test_a_policy_that_removes_everything_is_warned_about() -> None:
    inner = MemoryStore()
    inner.append(KEY, _messy())
    store = PruningSessionStore(inner, [EmptiesIt()])
    with pytest.warns(PruningWarning, match="'empties' removed every entry of session sess-1"):
        assert store.load(KEY) == []


def test_the_safety_net_repairs_what_the_chain_left_invalid() -> None:
    inner = MemoryStore()
    inner.append(KEY, _messy())
    store = PruningSessionStore(inner, [])  # no interrupted policy: the cut tool_use is unanswered
    with pytest.warns(PruningWarning, match="repaired"):
        pruned = store.load(KEY)
    assert pruned is not None
    check_conversation(conversation(pruned))


def _said(uid: str, parent: object, content: object, kind: str = "user", mid: str = "") -> dict:
    message = {"role": kind, "content": content, **({"id": mid} if mid else {})}
    return {"type": kind, "uuid": uid, "parentUuid": parent, "message": message}


_CALL = [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}]
_DAMAGED = {
    # the same reply entry written twice, once before the first prompt
    "repeated-entry": [
        _said("A", "U", _CALL, "assistant", "m1"),
        _said("U", None, "start"),
        _said("A", "U", _CALL, "assistant", "m1"),
        _said("C", "A", "continue"),
    ],
    # a side entry whose parent link is a list (the repair used to raise TypeError)
    "unhashable-parent": [
        _said("U", None, "start"),
        {**_said("X", ["A"], "side"), "isSidechain": True},
        _said("A", "U", _CALL, "assistant", "m1"),
        _said("C", "A", "continue"),
    ],
    # a block of the first reply hangs off the summary, the reply's other block off the
    # boundary: the chain starts with the assistant, off the walked links
    "reply-split-across-branches": [
        {"type": "system", "subtype": "compact_boundary", "uuid": "S", "parentUuid": None},
        _said("X", "S", "summary"),
        _said("B", "X", [{"type": "text", "text": "Building."}], "assistant", "m1"),
        _said("A", "S", _CALL, "assistant", "m1"),
        _said("C", "A", "continue"),
    ],
}


@pytest.mark.parametrize("name", list(_DAMAGED))
def test_the_safety_net_makes_damaged_transcripts_valid(name: str) -> None:
    entries = _DAMAGED[name]
    before = copy.deepcopy(entries)
    with pytest.warns(PruningWarning, match="repaired"):
        pruned = prune(entries, [], PruneContext())
    check_conversation(conversation(pruned))
    assert entries == before


def test_the_default_chain_needs_no_repair_on_a_messy_session(tmp_path: Path) -> None:
    store = PruningSessionStore.from_settings(MemoryStore(), Settings(), run_dir=tmp_path)
    store.append(KEY, _messy())
    with warnings.catch_warnings():
        warnings.simplefilter("error", PruningWarning)
        store.load(KEY)


def test_prune_with_stats_reports_each_policy(tmp_path: Path) -> None:
    raw = _messy()
    before = copy.deepcopy(raw)
    store = PruningSessionStore.from_settings(MemoryStore(), Settings(), run_dir=tmp_path)
    out, stats = prune_with_stats(raw, store.policies, PruneContext(run_dir=tmp_path))
    assert raw == before
    rows = {s.policy: s for s in stats}
    assert list(rows) == [
        "synthetic-errors",
        "denials",
        "interrupted",
        "ephemeral",
        "trim",
        "(repair)",
    ]
    assert rows["synthetic-errors"].removed == 1 and rows["synthetic-errors"].bytes_saved > 0
    assert rows["denials"].removed == 2 and rows["denials"].tokens_saved > 0
    assert rows["interrupted"].added == 1 and rows["interrupted"].bytes_saved < 0
    assert rows["ephemeral"].changed == 1
    assert rows["(repair)"].removed == rows["(repair)"].changed == rows["(repair)"].added == 0
    check_conversation(conversation(out))


def test_other_store_methods_are_delegated() -> None:
    inner = MemoryStore()
    inner.append(
        KEY,
        [
            {
                "type": "user",
                "uuid": "u",
                "parentUuid": None,
                "message": {"role": "user", "content": "x"},
            }
        ],
    )
    store = PruningSessionStore(inner, [])
    assert store.exists(KEY)
    assert store.find_session("sess-1") == KEY
    assert [s.session_id for s in store.list_sessions("-home-user-proj")] == ["sess-1"]
    assert store.loads == inner.loads  # unknown attributes reach the inner store


class _DropUsers:
    """A policy dropping fixed user entries (here: every one after the compaction)."""

    name = "drop-users"

    def __init__(self, uuids: list[str]) -> None:
        self.uuids = set(uuids)

    def prune(self, entries: list[dict], ctx: PruneContext) -> list[dict]:
        return drop_entries(entries, [e["uuid"] for e in entries if e.get("uuid") in self.uuids])


def test_a_chain_that_leaves_nothing_after_the_compaction_never_reaches_into_the_history(
    tmp_path: Path,
) -> None:
    b = TranscriptBuilder()
    b.user("build it")
    b.cut("make")  # a call that never got its result, before the compaction
    b.compact("Summary.")
    b.user("go on")
    chain = active_chain(b.entries)
    assert chain[0]["subtype"] == "compact_boundary"
    live_users = [e["uuid"] for e in chain if e["type"] == "user"]
    policies = [_DropUsers(live_users), Interrupted()]

    pruned = prune(b.entries, policies, PruneContext(run_dir=tmp_path))
    # what the model is sent is the pruned chain; the history before the compaction, its
    # cut call included, is not part of it and is not pruned
    assert conversation(pruned) == []
    assert interrupted_note() not in json.dumps(pruned, ensure_ascii=False)
    assert {e["uuid"] for e in pruned} <= {e["uuid"] for e in chain}
    detail = prune_in_detail(b.entries, policies, PruneContext(run_dir=tmp_path))
    assert detail.entries == pruned
    assert {row.policy: row.added for row in detail.policies}["interrupted"] == 0
    assert detail.off_chain == len(b.entries) - len(chain)


class _Boom:
    name = "boom"

    def prune(self, entries: list[dict], ctx: PruneContext) -> list[dict]:
        raise RuntimeError("broken plugin")


def test_a_load_warns_once_and_reports_the_entries_off_the_chain(tmp_path: Path) -> None:
    b = TranscriptBuilder()
    b.user("build it")
    b.compact("Summary.")
    b.user("go on")
    chain = active_chain(b.entries)
    ctx = PruneContext(run_dir=tmp_path)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        kept = prune_in_detail(b.entries, [_Boom()], ctx)
    assert kept.off_chain == len(b.entries) - len(chain) > 0
    assert kept.entries == chain
    assert [str(w.message).count("'boom'") for w in caught] == [1]


class MutatesInPlace:
    name = "mutator"

    def prune(self, entries: list[dict], ctx: PruneContext) -> list[dict]:
        for entry in entries:
            entry.pop("isApiErrorMessage", None)
        return entries


def test_the_stats_report_names_a_policy_that_changes_its_input_in_place() -> None:
    entries = _messy()
    with pytest.warns(PruningWarning, match="repaired"):  # the cut call: no "interrupted"
        _, stats = prune_with_stats(entries, [MutatesInPlace(), SyntheticErrors()], PruneContext())
    rows = {s.policy: s for s in stats}
    assert any("changed the entries it was given in place" in n for n in rows["mutator"].notes)
    assert not rows["synthetic-errors"].notes


def test_entries_that_are_not_objects_are_left_out_of_a_prune_with_a_warning() -> None:
    policies = PruningSessionStore.from_settings(MemoryStore(), Settings(), trim=False).policies
    user = {"type": "user", "uuid": "u1", "parentUuid": None,
            "message": {"role": "user", "content": "hi"}}  # fmt: skip
    for stray in (None, 1, "text", [1, 2]):
        with pytest.warns(PruningWarning) as record:
            pruned = prune([user, stray], policies, PruneContext())  # type: ignore[list-item]
        assert pruned == [user]
        assert any("left out 1 entries that are not JSON objects" in str(w.message) for w in record)


def test_denials_without_uuids_are_removed_without_a_failure() -> None:
    b = TranscriptBuilder()
    b.user("go")
    b.denied("rm -rf a")
    b.denied("rm -rf b")
    b.user("continue")
    b.assistant([{"type": "text", "text": "ok"}])
    entries = [{k: v for k, v in e.items() if k != "uuid"} if i in (1, 2) else e
               for i, e in enumerate(b.entries)]  # fmt: skip
    kept = Denials().prune(entries, PruneContext())
    assert len(kept) == len(entries) - 2  # the old denial's call and result are gone
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", PruningWarning)
        prune(entries, [SyntheticErrors(), Denials()], PruneContext())
    assert not [w for w in caught if "failed" in str(w.message)]  # (a repair may be needed)


@pytest.mark.parametrize("policies", [[SyntheticErrors(), Denials()], [Exploding()]])
def test_messages_without_a_uuid_are_reported_not_silently_lost(policies: list) -> None:
    b = TranscriptBuilder()
    b.user("first question")
    b.assistant([{"type": "text", "text": "first answer"}])
    b.user("second question")
    b.assistant([{"type": "text", "text": "second answer"}])
    entries = [{k: v for k, v in e.items() if k != "uuid"} if i == 1 else e
               for i, e in enumerate(b.entries)]  # fmt: skip
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", PruningWarning)
        prune(entries, policies, PruneContext())
    notes = [str(w.message) for w in caught if "no uuid" in str(w.message)]
    assert notes == [
        "session <unknown session>: 1 user/assistant entry has no uuid, so it has no place "
        "in the conversation and is not sent to the model"
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error", PruningWarning)
        prune(b.entries, [SyntheticErrors(), Denials()], PruneContext())  # intact: no warning


@pytest.mark.usefixtures("english")  # asserts the English fix texts
def test_a_tool_use_without_an_id_is_removed_not_answered_with_a_null_id() -> None:
    b = TranscriptBuilder()
    b.user("go")
    b.assistant([{"type": "text", "text": "looking"}, {"type": "tool_use", "name": "Bash",
                                                        "input": {"command": "ls"}}])  # fmt: skip
    b.user("and then?")
    b.assistant([{"type": "tool_use", "id": None, "name": "Bash", "input": {}}])
    assert conversation_problems(conversation(b.entries))  # the API would refuse it
    with pytest.warns(PruningWarning, match="removed a tool_use without an id"):
        pruned = prune(b.entries, [SyntheticErrors()], PruneContext())
    messages = conversation(pruned)
    check_conversation(messages)
    blocks = [block for m in messages for block in m["content"]]
    assert not any(block.get("type") in ("tool_use", "tool_result") for block in blocks)
    assert messages[-1] == {"role": "user", "content": [{"type": "text", "text": "and then?"}]}


# --------------------------------------------------------------------------- the chain only


def _files(folder: Path) -> dict[str, tuple[int, int]]:
    """Each file under ``folder``: (inode, mtime_ns), to tell a rewrite from no write."""
    return {
        str(p.relative_to(folder)): (p.stat().st_ino, p.stat().st_mtime_ns)
        for p in folder.rglob("*")
        if p.is_file()
    }


def test_trim_writes_files_only_for_results_on_the_chain_once_each(tmp_path: Path) -> None:
    from flower_plugins.pruning.policies import Trim

    big = "x" * 500
    b = TranscriptBuilder(session_id="trim-chain", streamed=False)
    b.user("start")
    (history,) = b.tool_round([("Read", {"file_path": "/old"}, big, False)])
    b.compact("Summary.")
    fork = b.user("on with it")
    (abandoned,) = b.tool_round([("Read", {"file_path": "/branch"}, big + "b", False)])
    b.rewind_to(fork["uuid"])  # a rewind: the branch above is left behind
    (kept,) = b.tool_round([("Read", {"file_path": "/kept"}, big + "k", False)])
    for words in ("and then", "more"):  # two turns after it: old enough to trim
        b.user(words)
        b.assistant([{"type": "text", "text": "done"}])
    inner = MemoryStore({KEY: b.entries})
    trimmed = tmp_path / "trimmed"

    def view() -> PruningSessionStore:  # a new process's view: remembers no file
        return PruningSessionStore(
            inner, [Trim(min_chars=100, keep_recent_turns=1)], run_dir=tmp_path
        )

    first = view().load(KEY)
    assert first is not None
    written = _files(trimmed)
    assert list(written) == [f"{KEY.session_id}/{kept}.txt"]  # not {history}, not {abandoned}
    assert (trimmed / KEY.session_id / f"{kept}.txt").read_text() == big + "k"
    assert f"{kept}.txt" in json.dumps(first)
    for _ in range(2):  # later loads, fresh or not, find the file and write nothing
        assert view().load(KEY) == first
    assert _files(trimmed) == written
    assert history and abandoned


def test_a_dropped_result_is_answered_by_the_safety_net() -> None:
    b = TranscriptBuilder(streamed=False)
    b.user("start")
    b.tool_round([("Bash", {"command": "make"}, "built", False)])
    b.user("thanks")
    b.assistant([{"type": "text", "text": "welcome"}])
    answering = next(e for e in b.entries if e["type"] == "user" and e.get("toolUseResult"))
    with pytest.warns(PruningWarning, match="answered tool_use"):
        pruned = prune(b.entries, [_DropUsers([answering["uuid"]])], PruneContext())
    assert conversation_problems(conversation(pruned)) == []
    assert interrupted_note() in json.dumps(pruned, ensure_ascii=False)


@pytest.mark.usefixtures("english")  # asserts the English fix texts
def test_a_dropped_call_leaves_an_orphan_result_that_the_safety_net_removes() -> None:
    b = TranscriptBuilder(streamed=False)
    b.user("start")
    b.tool_round([("Bash", {"command": "make"}, "built", False)])
    b.user("thanks")
    asking = next(e for e in b.entries if e["type"] == "assistant")

    class DropCall:
        name = "drop-call"

        def prune(self, entries: list[dict], ctx: PruneContext) -> list[dict]:
            return drop_entries(entries, [asking["uuid"]])

    with pytest.warns(PruningWarning, match="answers nothing"):
        pruned = prune(b.entries, [DropCall()], PruneContext())
    assert conversation_problems(conversation(pruned)) == []
    assert "built" not in json.dumps(pruned)
