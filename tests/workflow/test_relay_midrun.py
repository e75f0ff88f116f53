"""Relay in the middle of a long working run (the real Runtime on the fake Messages API).

The fake's usage script models a conversation in which every message weighs 1,000
tokens: a request's context is ``1000 * len(messages)``. A worker reads a file every
turn until it has done ``turns`` reads, so a step's single run grows past the relay
threshold unless it hands off mid-work.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
from workflow_helpers import last_user_text, user_prompts

from flower import AgentSpec, Step, Workflow
from flower.core.config import RelayConfig, Settings
from flower.core.i18n import _
from flower.core.manifest import read_manifest
from flower.core.resilience import RESUME_PROMPT as ENGINE_RESUME_PROMPT
from flower.testing.fake_api import (
    FakeMessagesAPI,
    RecordedRequest,
    conversation_problems,
    reply,
    text,
    tool_use,
)
from flower.workflow import prompts

HANDOFF_PROMPT = _(prompts.HANDOFF_PROMPT)  # in the tests' language
THRESHOLD = 10_000
PER_MESSAGE = 1_000
WORKER = AgentSpec(
    name="worker", instructions="你是执行者。", allowed_tools=["Read"], max_turns=200
)
PROMPT = "把 seed.txt 读十遍"


class Worker:
    """The fake model: reads until ``turns`` reads are done, writes handoffs on request."""

    def __init__(self, turns: int, seeded_extra: int = 0) -> None:
        self.turns = turns
        self.reads = 0
        self.seeded_extra = seeded_extra
        self.contexts: list[int] = []
        self.problems: list[str] = []

    def __call__(self, req: RecordedRequest) -> Any:
        context = PER_MESSAGE * len(req.messages)
        if self.seeded_extra and "交接文档" in user_prompts(req)[0]:
            context += self.seeded_extra
        self.contexts.append(context)
        self.problems += conversation_problems(req.messages)
        usage = {"input_tokens": 3, "cache_read_input_tokens": context - 3}
        if last_user_text(req) == HANDOFF_PROMPT:
            return text(f"## 进度\n已经读了 {self.reads} 遍,接着读", usage=usage)
        if self.reads >= self.turns:
            return text("读完了", usage=usage)
        self.reads += 1
        return reply(
            f"第 {self.reads} 遍", tool_use("Read", {"file_path": "seed.txt"}), usage=usage
        )


def wake(settings: Settings) -> dict[str, Any]:
    from flower.runtime.engine import Runtime

    async def go() -> dict[str, Any]:
        rt = Runtime(workspace=".", run_dir="runs", settings=settings)
        try:
            return await Workflow([Step("干活", WORKER, PROMPT, resume_prompt="接着读")]).run(rt)
        finally:
            rt.close()

    return asyncio.run(go())


def _session_key(session_id: str) -> Any:
    import os

    from flower.core.keys import project_key
    from flower.core.records import SessionKey

    return SessionKey(project_key(os.path.realpath(".")), session_id)


def first_entry(session_id: str) -> dict[str, Any]:
    from flower.stores.open import open_session_store

    store = open_session_store("sqlite:///runs/sessions.db")
    try:
        entries = store.load(_session_key(session_id))
    finally:
        store.close()
    assert entries is not None
    return entries[0]


def append_to(session_id: str, entries: list[dict[str, Any]]) -> None:
    """Store ``entries`` after the session's last one, as a killed run had written them
    (the first is re-parented onto that last entry when it names no parent)."""
    from flower.stores.open import open_session_store

    store = open_session_store("sqlite:///runs/sessions.db")
    key = _session_key(session_id)
    try:
        stored = store.load(key) or []
        if stored and "parentUuid" not in entries[0]:
            entries = [{**entries[0], "parentUuid": stored[-1]["uuid"]}, *entries[1:]]
        store.append(key, entries)
    finally:
        store.close()


HANDOFF_ASKED = {
    "type": "user",
    "uuid": "handoff-asked",
    "message": {"role": "user", "content": HANDOFF_PROMPT},
}


def handoff_answered(doc: str) -> dict[str, Any]:
    return {
        "type": "assistant",
        "uuid": "handoff-answered",
        "parentUuid": "handoff-asked",
        "message": {
            "id": "msg_handoff",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-6",
            "content": [{"type": "text", "text": doc}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 9_000, "output_tokens": 10},
        },
    }


def worked_a_while(in_tmp: Path, fake: FakeMessagesAPI) -> str:
    """The work step's session after a first wake well under the threshold."""
    (in_tmp / "seed.txt").write_text("苹果\n", encoding="utf-8")
    fake.set_script([text("做了一半", usage={"input_tokens": 2_000})])
    return str(wake(relay_settings())["_sessions"]["干活"])


def relay_settings(**kw: Any) -> Settings:
    return msgspec.structs.replace(
        Settings(), relay=RelayConfig(threshold_tokens=THRESHOLD, **kw), run_dir="runs"
    )


def test_a_long_run_hands_off_mid_work_and_finishes_in_the_new_session(
    in_tmp: Path, fake: FakeMessagesAPI
) -> None:
    (in_tmp / "seed.txt").write_text("苹果\n", encoding="utf-8")
    worker = Worker(turns=6)
    fake.set_script(worker)
    ctx = wake(relay_settings())

    assert ctx["_ok"] and ctx["干活"] == "读完了" and worker.reads == 6
    assert max(worker.contexts) < THRESHOLD  # no request the model received passed it
    assert worker.problems == []  # never a tool_use without its result
    (move,) = ctx["_relays"]
    old, new = move["from"], move["to"]
    assert ctx["_sessions"]["干活"] == new != old

    # the old session stopped between turns and wrote the handoff one request later
    handoff = next(r for r in fake.requests if last_user_text(r) == HANDOFF_PROMPT)
    assert [b["type"] for b in handoff.messages[-1]["content"]] == ["tool_result", "text"]
    doc = Path(move["doc"])
    assert doc.parent == in_tmp / "notes" / "relay" and doc.name.endswith("-干活.md")
    assert "已经读了 4 遍" in doc.read_text(encoding="utf-8")

    # the new session starts from the document and the work it was given
    seeded = fake.requests[fake.requests.index(handoff) + 1]
    (only,) = user_prompts(seeded)
    assert "已经读了 4 遍" in only and PROMPT in only
    assert first_entry(new)["relayFrom"] == old

    lineage = json.loads(Path("runs/lineage.json").read_text(encoding="utf-8"))
    assert lineage["steps"] == {"干活": new}
    (row,) = read_manifest("runs")  # one line for the whole turn
    assert row["session_id"] == new and row["retired"] == [old] and row["ok"]
    assert row["num_turns"] == len(fake.requests) == 4 + 1 + 3


class SilentAtHandoff(Worker):
    """A worker that answers the request for a handoff document with nothing."""

    def __call__(self, req: RecordedRequest) -> Any:
        if last_user_text(req) == HANDOFF_PROMPT:
            self.contexts.append(PER_MESSAGE * len(req.messages))
            return text("", usage={"input_tokens": 9_000})
        return super().__call__(req)


@pytest.mark.parametrize(
    ("there", "named"),
    [((), ("需求.md", "目标.md")), (("brief.md",), ("brief.md", "目标.md"))],
)
def test_without_a_handoff_document_the_fallback_names_the_brief_and_goals_files(
    in_tmp: Path, fake: FakeMessagesAPI, there: tuple[str, ...], named: tuple[str, str]
) -> None:
    """The same lookup as every other reader: an existing brief.md is the one named."""
    (in_tmp / "seed.txt").write_text("苹果\n", encoding="utf-8")
    for name in there:
        (in_tmp / name).write_text("x\n", encoding="utf-8")
    fake.set_script(SilentAtHandoff(turns=6))
    ctx = wake(relay_settings())
    (move,) = ctx["_relays"]
    doc = Path(move["doc"]).read_text(encoding="utf-8")
    assert "上一个会话没能写出交接文档" in doc
    assert f"要做的事和验收目标见工作区里的 {named[0]} 和 {named[1]}" in doc


def test_a_very_long_run_relays_as_often_as_it_needs(in_tmp: Path, fake: FakeMessagesAPI) -> None:
    (in_tmp / "seed.txt").write_text("苹果\n", encoding="utf-8")
    worker = Worker(turns=20)
    fake.set_script(worker)
    ctx = wake(relay_settings())

    assert ctx["_ok"] and worker.reads == 20
    assert max(worker.contexts) < THRESHOLD and worker.problems == []
    moves = ctx["_relays"]
    assert len(moves) >= 4
    for before, after in itertools.pairwise(moves):
        assert after["from"] == before["to"]
        assert first_entry(after["to"])["relayFrom"] == after["from"]
    (row,) = read_manifest("runs")
    assert row["retired"] == [m["from"] for m in moves]
    assert row["session_id"] == moves[-1]["to"] == ctx["_sessions"]["干活"]


def test_between_runs_a_session_near_the_threshold_relays_before_sending(
    in_tmp: Path, fake: FakeMessagesAPI
) -> None:
    (in_tmp / "seed.txt").write_text("苹果\n", encoding="utf-8")
    fake.set_script([text("做了一半", usage={"input_tokens": 9_900})])
    old = wake(relay_settings())["_sessions"]["干活"]
    worker = Worker(turns=1)
    fake.set_script(worker)
    ctx = wake(relay_settings())
    # 9,900 leaves no room for the next request and a handoff: relay first
    assert ctx["_relays"][0]["from"] == old and ctx["_sessions"]["干活"] != old
    assert "接着读" in user_prompts(fake.requests[-2])[0]
    assert max(worker.contexts) < THRESHOLD


def test_with_relay_off_the_run_is_not_limited(in_tmp: Path, fake: FakeMessagesAPI) -> None:
    (in_tmp / "seed.txt").write_text("苹果\n", encoding="utf-8")
    worker = Worker(turns=6)
    fake.set_script(worker)
    ctx = wake(relay_settings(enabled=False))
    assert ctx["_ok"] and ctx["_relays"] == []
    assert max(worker.contexts) > THRESHOLD  # what relay prevents


def test_a_relayed_session_full_from_its_first_request_fails_instead_of_looping(
    in_tmp: Path, fake: FakeMessagesAPI
) -> None:
    (in_tmp / "seed.txt").write_text("苹果\n", encoding="utf-8")
    # the seeded request alone is 9,850: no room for one more turn after it
    worker = Worker(turns=50, seeded_extra=8_850)
    fake.set_script(worker)
    ctx = wake(relay_settings())
    assert not ctx["_ok"] and ctx["_failed"] == "干活"
    row = read_manifest("runs")[-1]
    assert "从第一次请求起" in row["error"] and row["stop"] == "context_limit"
    assert max(worker.contexts) < THRESHOLD
    (move,) = ctx["_relays"]  # relaying again would not help
    assert move["turns"] == 1 and row["session_id"] == move["to"]


def test_a_handoff_a_killed_run_left_unanswered_is_finished_not_carried_on(
    in_tmp: Path, fake: FakeMessagesAPI
) -> None:
    old = worked_a_while(in_tmp, fake)
    # killed while the old session was writing its handoff: the request waits unanswered
    append_to(old, [HANDOFF_ASKED])
    worker = Worker(turns=1)
    fake.set_script(worker)
    before = len(fake.requests)
    ctx = wake(relay_settings())
    asked = fake.requests[before]  # the handoff, asked once, with nothing added to it
    assert last_user_text(asked) == HANDOFF_PROMPT
    assert user_prompts(asked).count(HANDOFF_PROMPT) == 1 and "接着读" not in user_prompts(asked)
    (move,) = ctx["_relays"]
    assert move["from"] == old and ctx["_sessions"]["干活"] == move["to"] != old
    assert Path(move["doc"]).is_file()
    assert "接着读" in user_prompts(fake.requests[before + 1])[0]  # the new session carries on


def _killed_after_the_handoff_answered(in_tmp: Path, fake: FakeMessagesAPI, doc: str) -> str:
    """The old session of a run killed after it answered the handoff with ``doc``,
    before the new session existed."""
    old = worked_a_while(in_tmp, fake)
    append_to(old, [HANDOFF_ASKED, handoff_answered(doc)])
    return old


def test_a_handoff_a_killed_run_got_but_never_passed_on_is_not_asked_again(
    in_tmp: Path, fake: FakeMessagesAPI
) -> None:
    doc = "## 进度\n读了三遍,接着读"
    old = _killed_after_the_handoff_answered(in_tmp, fake, doc)
    worker = Worker(turns=1)
    fake.set_script(worker)
    before = len(fake.requests)
    ctx = wake(relay_settings())
    sent = fake.requests[before:]
    assert not [r for r in sent if HANDOFF_PROMPT in user_prompts(r)]  # answered once only
    (move,) = ctx["_relays"]
    assert move["from"] == old and ctx["_sessions"]["干活"] == move["to"] != old
    assert doc in user_prompts(sent[0])[0] and "接着读" in user_prompts(sent[0])[0]
    assert doc in Path(move["doc"]).read_text(encoding="utf-8")


def _wake_relaying_once_from(old: str, fake: FakeMessagesAPI) -> list[RecordedRequest]:
    """Wake once; the work step must relay from ``old``, once. The requests it sent."""
    before = len(fake.requests)
    ctx = wake(relay_settings())
    (move,) = ctx["_relays"]
    assert move["from"] == old and ctx["_sessions"]["干活"] == move["to"] != old
    return fake.requests[before:]


def _api_error(uuid: str, parent: str) -> dict[str, Any]:
    """The entry the engine stores for a failed attempt (the stream was cut)."""
    return {
        "type": "assistant",
        "uuid": uuid,
        "parentUuid": parent,
        "isApiErrorMessage": True,
        "message": {
            "role": "assistant",
            "model": "<synthetic>",
            "content": [{"type": "text", "text": "API Error: connection reset"}],
        },
    }


def _user(uuid: str, parent: str, content: Any) -> dict[str, Any]:
    return {
        "type": "user",
        "uuid": uuid,
        "parentUuid": parent,
        "message": {"role": "user", "content": content},
    }


def test_a_handoff_answered_after_a_retry_is_not_asked_again(
    in_tmp: Path, fake: FakeMessagesAPI
) -> None:
    """The handoff's reply was cut, the engine's retry said "go on" (its resume prompt)
    and the document came in answer to that; the run was killed before the new
    session existed. The handoff is still the request that reply answers."""
    RESUME_PROMPT = _(ENGINE_RESUME_PROMPT)  # in this wake's language

    doc = "## 进度\n读了三遍,接着读"
    old = worked_a_while(in_tmp, fake)
    answered = handoff_answered(doc)
    append_to(
        old,
        [
            HANDOFF_ASKED,
            _api_error("cut", "handoff-asked"),
            _user("go-on", "cut", RESUME_PROMPT),
            {**answered, "parentUuid": "go-on"},
        ],
    )
    fake.set_script(Worker(turns=1))
    sent = _wake_relaying_once_from(old, fake)
    assert not [r for r in sent if HANDOFF_PROMPT in user_prompts(r)]  # answered once only
    assert doc in user_prompts(sent[0])[0]


def test_a_handoff_cut_in_the_middle_of_its_own_tool_calls_is_finished_not_asked_again(
    in_tmp: Path, fake: FakeMessagesAPI
) -> None:
    """Killed while the old session, writing its handoff, waited for a tool: the next
    run finishes that request (the engine's resume prompt) instead of asking again."""
    RESUME_PROMPT = _(ENGINE_RESUME_PROMPT)  # in this wake's language

    old = worked_a_while(in_tmp, fake)
    looked = {
        "type": "assistant",
        "uuid": "handoff-looks",
        "parentUuid": "handoff-asked",
        "message": {
            "id": "msg_looks",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-6",
            "content": [
                {
                    "type": "tool_use",
                    "id": "toolu_look",
                    "name": "Read",
                    "input": {"file_path": "seed.txt"},
                }
            ],
            "stop_reason": "tool_use",
        },
    }
    result = [{"type": "tool_result", "tool_use_id": "toolu_look", "content": "苹果"}]
    append_to(old, [HANDOFF_ASKED, looked, _user("handoff-read", "handoff-looks", result)])
    doc = "## 进度\n读了一遍,接着读"
    fake.set_script(
        lambda req: (
            text(doc, usage={"input_tokens": 9_000})
            if last_user_text(req) == RESUME_PROMPT
            else text("读完了", usage={"input_tokens": 3})
        )
    )
    sent = _wake_relaying_once_from(old, fake)
    assert [user_prompts(r).count(HANDOFF_PROMPT) for r in sent[:1]] == [1]  # the stored one
    assert last_user_text(sent[0]) == RESUME_PROMPT
    assert not [r for r in sent[1:] if HANDOFF_PROMPT in user_prompts(r)]
    assert doc in user_prompts(sent[1])[0]


def test_a_handoff_document_a_killed_run_wrote_is_reused_with_your_edits(
    in_tmp: Path, fake: FakeMessagesAPI
) -> None:
    from flower.workflow.relay import handoff_path, write_handoff

    doc = "## 进度\n读了三遍,接着读"
    old = _killed_after_the_handoff_answered(in_tmp, fake, doc)
    # the killed run had written the document too, and you added a line since
    written = handoff_path(in_tmp.resolve(), "干活", now=0)
    write_handoff(written, "干活", old, doc)
    other = handoff_path(in_tmp.resolve(), "干活", now=60)  # another session's, newer
    write_handoff(other, "干活", "another-session", "## 别的")
    edited = written.read_text(encoding="utf-8") + "- 注意:别碰 seed.txt\n"
    written.write_text(edited, encoding="utf-8")
    fake.set_script(Worker(turns=1))
    before = len(fake.requests)
    ctx = wake(relay_settings())
    (move,) = ctx["_relays"]
    assert Path(move["doc"]) == written
    assert sorted((in_tmp / "notes" / "relay").iterdir()) == sorted([written, other])
    assert written.read_text(encoding="utf-8") == edited
    assert "别碰 seed.txt" in user_prompts(fake.requests[before])[0]


def test_a_relay_killed_before_lineage_named_its_new_session_goes_on_there(
    in_tmp: Path, fake: FakeMessagesAPI
) -> None:

    doc = "## 进度\n读了三遍,接着读"
    old = _killed_after_the_handoff_answered(in_tmp, fake, doc)
    # ... and after the new session's first entry was stored, before lineage named it
    seeded = _(prompts.RELAY_SEED).format(path="notes/relay/x.md", doc=doc) + "接着读"
    append_to(
        "relayed-to",
        [
            {
                "type": "user",
                "uuid": "relay-seed",
                "parentUuid": None,
                "relayFrom": old,
                "message": {"role": "user", "content": seeded},
            }
        ],
    )
    worker = Worker(turns=1)
    fake.set_script(worker)
    before = len(fake.requests)
    ctx = wake(relay_settings())
    sent = fake.requests[before:]
    assert ctx["_ok"] and ctx["_sessions"]["干活"] == "relayed-to"  # no second new session
    assert not [r for r in sent if HANDOFF_PROMPT in user_prompts(r)]
    assert user_prompts(sent[0]).count(seeded) == 1 and len(sent[0].messages) == 1
    lineage = json.loads((in_tmp / "runs" / "lineage.json").read_text(encoding="utf-8"))
    assert lineage["steps"]["干活"] == "relayed-to"
