"""A seeded fuzzer of whole engine runs against the fake Messages API.

One *trial* is a session: a random script (text, single and parallel tool calls,
thinking blocks, max_tokens, refusals, odd stop reasons, HTTP errors, cut and broken
streams, stalls) served one item per request, and up to four ``Runtime.run`` calls on
it, each of which may be cut at a random point (``task.cancel()`` or a
``KeyboardInterrupt`` raised inside a store append) and is then resumed by a new
``Runtime``. After every run the stored session and every request the fake saw are
checked (:func:`check_trial`); a violation is a :class:`Finding`.

Used by ``test_engine_fuzz.py`` with a fixed seed budget, and from the command line
to explore more seeds::

    python tests/runtime/engine_fuzz.py --seeds 0:200
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import json
import math
import os
import random
import sys
import tempfile
import threading
import traceback
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
from runtime_helpers import AlwaysUp, sqlite_settings

from flower.core.config import ResilienceConfig, Settings
from flower.core.i18n import _
from flower.core.records import Entry, SessionKey
from flower.core.resilience import Resilience
from flower.core.transcript import conversation_problems, to_messages
from flower.runtime.engine import Runtime
from flower.runtime.events import ToolCall, ToolResult, TurnEnd
from flower.runtime.loop import TRUNCATED_TOOL_USE
from flower.runtime.pricing import cost_of, price_for, price_table
from flower.runtime.spec import AgentSpec, StepResult
from flower.testing.fake_api import (
    FakeMessagesAPI,
    Fault,
    RecordedRequest,
    Reply,
    ScriptItem,
    api_error,
    rate_limited,
    refuse,
    reply,
    stall,
    text,
    tool_use,
)

MODEL = "claude-sonnet-4-6"
TOOLS = ["Read", "Glob", "Grep", "Bash", "Write", "Edit"]
REQUEST_TIMEOUT = 0.4
RAN_LOG = "ran.log"
FINAL = "all done"
CONTINUE = "Go on."


# --------------------------------------------------------------------------- script


def _tool_call(rng: random.Random, ids: Callable[[], str]) -> dict[str, Any]:
    tid = ids()
    kind = rng.choice(
        ["Read", "Read", "Glob", "Grep", "Bash", "Bash", "Bash", "Write", "Edit", "bad"]
    )
    if kind == "Read":
        path = rng.choice(["seed.txt", "missing.txt", "../outside.txt", "out/w.txt"])
        return tool_use("Read", {"file_path": path}, id=tid)
    if kind == "Glob":
        return tool_use("Glob", {"pattern": rng.choice(["*.txt", "**/*", "nothing*"])}, id=tid)
    if kind == "Grep":
        return tool_use("Grep", {"pattern": rng.choice(["tulip", "x[", "zzz"])}, id=tid)
    if kind == "Bash":
        # every Bash call logs its id: a tool that runs twice for one call shows there
        extra = rng.choice(["", "; true", "; exit 3", "; sleep 0.02", "; sleep 0.2", "; ls"])
        return tool_use("Bash", {"command": f"echo {tid} >> {RAN_LOG}{extra}"}, id=tid)
    if kind == "Write":
        body = rng.choice(["one\n", "two\nlines\n", "ünïcode ✓\n"])
        return tool_use("Write", {"file_path": "out/w.txt", "content": body}, id=tid)
    if kind == "Edit":
        return tool_use(
            "Edit",
            {"file_path": "seed.txt", "old_string": "tulip", "new_string": "tulip"},
            id=tid,
        )
    return tool_use("Read", id=tid, raw_input=rng.choice(['{"file_path": "se', "[1, 2]", "nul"]))


def _usage(rng: random.Random) -> dict[str, Any]:
    return {
        "input_tokens": rng.randint(1, 3000),
        "output_tokens": rng.randint(1, 400),
        "cache_creation_input_tokens": rng.choice([0, 0, rng.randint(1, 2000)]),
        "cache_read_input_tokens": rng.choice([0, rng.randint(1, 9000)]),
    }


def _thinking(rng: random.Random) -> dict[str, Any]:
    if rng.random() < 0.2:
        return {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"}
    return {"type": "thinking", "thinking": "Let me think.", "signature": "sig_" + "a" * 16}


def _reply(rng: random.Random, ids: Callable[[], str]) -> Reply:
    """A model response: text, tools, thinking and a stop reason, in random mixes."""
    blocks: list[dict[str, Any] | str] = []
    if rng.random() < 0.2:
        blocks.append(_thinking(rng))
    if rng.random() < 0.7:
        blocks.append(rng.choice(["Working.", "Let me look.", "x" * 60, "ok"]))
    calls = rng.choice([0, 0, 1, 1, 1, 2, 3])
    blocks.extend(_tool_call(rng, ids) for _ in range(calls))
    if not blocks:
        blocks.append("done")
    roll = rng.random()
    stop: str | None = None
    if roll < 0.08:
        stop = "max_tokens"
    elif roll < 0.11:
        stop = "refusal"
    elif roll < 0.13:
        stop = rng.choice(["surprise_reason", "model_context_window_exceeded"])
    elif roll < 0.16 and not calls:
        stop = "pause_turn"
    elif roll < 0.18 and not calls:
        stop = "stop_sequence"
    item = reply(*blocks, stop_reason=stop, usage=_usage(rng), chunk=rng.choice([3, 24]))
    _stream_fault(rng, item)
    return item


def _stream_fault(rng: random.Random, item: Reply) -> None:
    roll = rng.random()
    if roll < 0.06:
        item.drop_after = rng.randint(0, 8)
    elif roll < 0.11:
        item.error_after = rng.randint(1, 8)
        item.error_type = rng.choice(["overloaded_error", "api_error"])
    elif roll < 0.13:
        item.stall_after = rng.randint(1, 6)
        item.stall_seconds = rng.choice([0.05, REQUEST_TIMEOUT * 2.5])
    elif roll < 0.16:
        item.garble_after = rng.randint(0, 8)


def _fault(rng: random.Random) -> Fault:
    kind = rng.choice(
        ["429", "429ra", "500", "529", "529ra", "close", "stall", "refuse", "5xx", "fatal"]
    )
    if kind == "5xx":
        return api_error(rng.choice([502, 503, 504, 408, 409]), "Upstream trouble")
    if kind == "fatal":
        return rng.choice(
            [
                api_error(400, "messages: prompt is too long"),
                api_error(413, "Request too large"),
                api_error(401, "invalid x-api-key"),
            ]
        )
    if kind == "429":
        return rate_limited()
    if kind == "429ra":
        return rate_limited(retry_after=rng.choice([0, 1, 2]))
    if kind == "500":
        return api_error(500, "Internal server error")
    if kind == "529":
        return api_error(529, "Overloaded")
    if kind == "529ra":
        return api_error(529, "Overloaded", retry_after=1)
    if kind == "close":
        return Fault("close")
    if kind == "stall":
        return stall(REQUEST_TIMEOUT * 2.5)
    return refuse(0.05)


def make_script(rng: random.Random, trial: int, length: int) -> list[ScriptItem]:
    counter = itertools.count()

    def ids() -> str:
        return f"toolu_t{trial}x{next(counter)}"

    return [_fault(rng) if rng.random() < 0.2 else _reply(rng, ids) for _ in range(length)]


# --------------------------------------------------------------------------- cuts


@dataclass
class Cut:
    """Where a run is interrupted: ``kind`` is ``none``, ``cancel`` (task.cancel() right
    after the ``at``-th store append), ``interrupt`` (KeyboardInterrupt raised by the
    ``at``-th append, ``before`` or after it is stored), ``request`` (task.cancel()
    when the fake receives the ``at``-th request of the run) or ``timer`` (task.cancel()
    ``seconds`` after the run starts)."""

    kind: str = "none"
    at: int = 0
    before: bool = False
    seconds: float = 0.0


def make_cut(rng: random.Random) -> Cut:
    roll = rng.random()
    if roll < 0.35:
        return Cut()
    if roll < 0.6:
        return Cut("cancel", rng.randint(1, 8))
    if roll < 0.75:
        return Cut("interrupt", rng.randint(1, 8), before=rng.random() < 0.5)
    if roll < 0.9:
        return Cut("request", rng.randint(1, 5))
    return Cut("timer", seconds=rng.uniform(0.0, 0.3))


class CuttingStore:
    """Wraps the raw store: counts appends and cuts the run at the planned one."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.arm(Cut())

    def arm(self, cut: Cut) -> None:
        """Plan the next run's cut; counting starts again."""
        self.cut = cut
        self.appends = 0
        self.task: asyncio.Task[Any] | None = None
        self.fired = False

    def append(self, key: SessionKey, entries: Sequence[Entry]) -> None:
        self.appends += 1
        due = not self.fired and self.appends == self.cut.at
        if due and self.cut.kind == "interrupt" and self.cut.before:
            self.fired = True
            raise KeyboardInterrupt
        self.inner.append(key, entries)
        if due and self.cut.kind == "interrupt":
            self.fired = True
            raise KeyboardInterrupt
        if due and self.cut.kind == "cancel" and self.task is not None:
            self.fired = True
            self.task.cancel()

    def cancel(self) -> None:
        """Cancel the run now, if it is still running (from the loop's thread)."""
        if self.task is not None and not self.task.done():
            self.fired = True
            self.task.cancel()

    def close(self) -> None:  # the shared store outlives every Runtime
        return None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


# --------------------------------------------------------------------------- findings


@dataclass
class Finding:
    seed: int
    run: int
    problem: str
    script: list[ScriptItem] = field(default_factory=list)
    cuts: list[Cut] = field(default_factory=list)

    def __str__(self) -> str:
        return f"seed {self.seed} run {self.run}: {self.problem}"


class Violation(AssertionError):
    pass


def expect(condition: bool, problem: str) -> None:
    if not condition:
        raise Violation(problem)


# --------------------------------------------------------------------------- checks


def check_chain(raw: list[Entry]) -> None:
    uuids = [e.get("uuid") for e in raw]
    expect(len(set(uuids)) == len(uuids), f"duplicate uuids: {Counter(uuids).most_common(2)}")
    expect(raw[0].get("parentUuid") is None, "the first entry has a parent")
    for before, after in itertools.pairwise(raw):
        expect(
            after.get("parentUuid") == before.get("uuid"),
            f"entry {after.get('uuid')} ({after.get('type')}) is not chained to the entry "
            "written before it",
        )


def check_tool_answers(raw: list[Entry]) -> None:
    """Every tool_result answers an earlier tool_use, and no call is answered twice."""
    asked: set[str] = set()
    answered: Counter[str] = Counter()
    for entry in raw:
        content = (entry.get("message") or {}).get("content")
        if not isinstance(content, list):
            continue
        for block in content:
            if block.get("type") == "tool_use":
                asked.add(block["id"])
            elif block.get("type") == "tool_result":
                tid = block.get("tool_use_id")
                expect(tid in asked, f"tool_result for {tid} answers no earlier tool_use")
                answered[tid] += 1
    twice = [tid for tid, n in answered.items() if n > 1]
    expect(not twice, f"tool calls answered more than once in the transcript: {twice}")


def check_prompts(raw: list[Entry]) -> None:
    """No prompt is stored twice between two replies of the model."""
    said: set[str] = set()
    for entry in raw:
        if entry.get("type") == "assistant" and not entry.get("isApiErrorMessage"):
            said = set()
            continue
        content = (entry.get("message") or {}).get("content")
        if entry.get("type") == "user" and isinstance(content, str):
            expect(content not in said, f"prompt stored twice in one turn: {content[:60]!r}")
            said.add(content)


def _user_texts(message: dict[str, Any]) -> list[str]:
    content = message.get("content")
    if isinstance(content, str):
        return [content]
    return [b.get("text", "") for b in content or () if b.get("type") == "text"]


def check_request(request: RecordedRequest, number: int) -> None:
    messages = request.messages
    problems = conversation_problems(messages)
    expect(not problems, f"request {number} is not a valid conversation: {problems}")
    if messages and messages[-1].get("role") == "user":
        texts = _user_texts(messages[-1])
        twice = [t for t, n in Counter(texts).items() if n > 1]
        expect(not twice, f"request {number} ends with the same words twice: {twice}")
    # earlier turns: pruning may join the user turns around a turn it removed, but the
    # same words said on both sides are sent once
    for message in messages:
        if message.get("role") == "user":
            texts = _user_texts(message)
            again = [a for a, b in itertools.pairwise(texts) if a == b]
            expect(not again, f"request {number} repeats the same words in a row: {again}")
    expect(
        not any("API Error" in t for t in request.texts()),
        f"request {number} shows the model an API Error text",
    )


def check_ran_log(workspace: Path, trial: int) -> None:
    path = workspace / RAN_LOG
    if not path.exists():
        return
    mine = [line for line in path.read_text().split() if line.startswith(f"toolu_t{trial}x")]
    twice = [tid for tid, n in Counter(mine).items() if n > 1]
    expect(not twice, f"Bash calls run more than once: {twice}")


def check_result(
    result: StepResult, new_entries: list[Entry], sid: str, prices: dict[str, Any]
) -> None:
    expect(result.session_id == sid, f"result.session_id {result.session_id} != {sid}")
    if result.ok:
        expect(result.error is None and result.stop is None, f"ok with error/stop: {result}")
    else:
        expect(bool(result.error), f"not ok without an error: {result}")
    expect(result.stop in (None, "max_turns", "context_limit"), f"stop {result.stop!r}")
    expect(result.attempts >= 1, f"attempts {result.attempts}")
    replies = [
        e for e in new_entries if e.get("type") == "assistant" and not e.get("isApiErrorMessage")
    ]
    synthetic = [e for e in new_entries if e.get("isApiErrorMessage")]
    expect(
        result.num_turns == len(replies),
        f"num_turns {result.num_turns} but {len(replies)} replies stored",
    )
    expect(
        len(result.errors) == len(synthetic),
        f"{len(result.errors)} errors reported but {len(synthetic)} error entries stored",
    )
    expect(
        result.attempts in (len(result.errors), len(result.errors) + 1),
        f"attempts {result.attempts} with {len(result.errors)} errors",
    )
    price = price_for(MODEL, prices)
    cost = sum(cost_of(e["message"]["usage"], price) or 0.0 for e in replies)
    expect(result.cost_usd is not None and result.cost_usd >= 0, f"cost_usd {result.cost_usd!r}")
    expect(
        math.isclose(result.cost_usd or 0.0, cost, rel_tol=1e-9, abs_tol=1e-12),
        f"cost_usd {result.cost_usd} but the stored usage costs {cost}",
    )
    expect(result.context is None or result.context >= 0, f"context {result.context}")
    texts = [
        "".join(b["text"] for b in e["message"]["content"] if b.get("type") == "text")
        for e in replies
    ]
    last_text = next((t for t in reversed(texts) if t), "")
    expect(result.text == last_text, f"text {result.text!r} but the last reply said {last_text!r}")


def check_events(events: list[Any], result: StepResult, new: list[Entry], resumed: bool) -> None:
    kinds = [type(e).__name__ for e in events]
    expect(kinds.count("SessionStarted") == 1, f"SessionStarted x{kinds.count('SessionStarted')}")
    expect(kinds[0] == "SessionStarted", f"the first event is {kinds[0]}")
    started = events[0]
    expect(
        started.session_id == result.session_id and started.resumed == resumed,
        f"SessionStarted {started} for a run with resume={resumed}",
    )
    expect(kinds.count("StepDone") == 1 and kinds[-1] == "StepDone", f"StepDone: {kinds[-3:]}")
    expect(events[-1].result is result, "StepDone carries another result")
    turns = [e for e in events if isinstance(e, TurnEnd)]
    expect(len(turns) == result.num_turns, f"{len(turns)} TurnEnd for {result.num_turns} turns")
    cost = sum(t.cost_usd or 0.0 for t in turns)
    expect(
        math.isclose(cost, result.cost_usd or 0.0, rel_tol=1e-9, abs_tol=1e-12),
        f"TurnEnd costs sum to {cost}, result says {result.cost_usd}",
    )
    calls = [e.tool_use_id for e in events if isinstance(e, ToolCall)]
    answers = [e.tool_use_id for e in events if isinstance(e, ToolResult)]
    expect(calls == answers, f"ToolCall {calls} but ToolResult {answers}")
    stored = [
        b["tool_use_id"]
        for e in new
        if e.get("type") == "user" and isinstance(e["message"]["content"], list)
        for b in e["message"]["content"]
        if b.get("type") == "tool_result" and b.get("content") != _(TRUNCATED_TOOL_USE)
    ]
    expect(stored == answers, f"tool results stored {stored} but ToolResult events {answers}")


# --------------------------------------------------------------------------- trials


class Harness:
    """One fake API, one store, one workspace for many trials."""

    def __init__(self, root: Path, fake: FakeMessagesAPI, store_url: str | None = None) -> None:
        self.root = root
        self.fake = fake
        self.workspace = root / "ws"
        self.workspace.mkdir(exist_ok=True)
        (self.workspace / "seed.txt").write_text("tulip\n", encoding="utf-8")
        (self.workspace / "out").mkdir(exist_ok=True)
        self.settings = _settings(root, store_url)
        self.store: Any = None
        self.script: list[ScriptItem] = []
        self.on_request: Callable[[], None] | None = None
        self.log: list[str] = []
        self.events: list[Any] = []
        self._before: list[Entry] = []
        self._resumed = False
        self._lock = threading.Lock()
        fake.set_script(self._answer)

    def _answer(self, request: RecordedRequest) -> ScriptItem:
        with self._lock:
            item = self.script.pop(0) if self.script else text(FINAL)
            hook = self.on_request
        if hook is not None:
            hook()
        return copy.deepcopy(item)

    def runtime(self, store: Any) -> Runtime:
        return Runtime(
            self.workspace,
            self.root / "runs",
            settings=self.settings,
            store=store,
            resilience=_resilience(self.fake.base_url),
        )

    def open_store(self) -> Any:
        if self.store is None:
            from flower.stores.open import open_session_store

            self.store = open_session_store(settings=self.settings)
        return self.store

    def close(self) -> None:
        if self.store is not None:
            self.store.close()

    def trial(
        self, seed: int, script: list[ScriptItem] | None = None, cuts: list[Cut] | None = None
    ) -> Finding | None:
        rng = random.Random(seed)
        length = rng.randint(1, 10)
        # drawn even when given, so a replay draws everything after them the same way
        drawn_script = make_script(rng, seed, length)
        drawn_cuts = [make_cut(rng) for _ in range(4)]
        script = drawn_script if script is None else script
        cuts = drawn_cuts if cuts is None else cuts
        agent = AgentSpec(
            "fuzz",
            "Be terse.",
            allowed_tools=rng.choice([TOOLS, TOOLS, ["Read", "Bash"], []]),
            max_turns=rng.randint(2, 12),
            model=MODEL,
            max_tokens=rng.choice([1024, 16000]),
        )
        context_limit = rng.choice([None, None, None, rng.randint(2000, 40000)])
        store = CuttingStore(self.open_store())
        # one Runtime for every run of the trial (as a workflow has it), or one per run
        shared = self.runtime(store) if rng.random() < 0.5 else None
        with self._lock:
            self.script = copy.deepcopy(script)
        finding = Finding(seed, 0, "", copy.deepcopy(script), list(cuts))
        requests_before = len(self.fake.requests)
        rejections_before = len(self.fake.rejections)
        sid: str | None = None
        try:
            for number, cut in enumerate(cuts):
                finding.run = number
                prompt = f"task {seed}" if number == 0 else rng.choice([CONTINUE, f"task {seed}"])
                store.arm(cut)
                rt = shared or self.runtime(store)
                try:
                    sid, result = self._one_run(rt, store, agent, prompt, sid, context_limit)
                finally:
                    if shared is None:
                        rt.close()
                self.log.append(_outcome(seed, number, cut, result))
                self._check(seed, sid, result, requests_before, rejections_before)
                if result is not None and (result.ok or result.stop):
                    break
        except Violation as exc:
            finding.problem = str(exc)
            return finding
        except Exception as exc:  # a crash out of run() is a finding too
            finding.problem = f"run raised {type(exc).__name__}: {exc}\n{traceback.format_exc()}"
            return finding
        finally:
            if shared is not None:
                shared.close()
        return None

    def _one_run(
        self,
        rt: Runtime,
        store: CuttingStore,
        agent: AgentSpec,
        prompt: str,
        sid: str | None,
        context_limit: int | None,
    ) -> tuple[str | None, StepResult | None]:
        cut = store.cut
        seen: list[str] = []
        rt.on_session = seen.append
        self.events = []
        rt.on_event = self.events.append
        self._resumed = sid is not None
        self._before = self._entries(rt, sid)
        requests = 0

        async def go() -> StepResult:
            nonlocal requests
            task = asyncio.create_task(
                rt.run(agent, prompt, resume=sid, context_limit=context_limit)
            )
            store.task = task
            loop = asyncio.get_running_loop()

            def count_request() -> None:
                nonlocal requests
                requests += 1
                if cut.kind == "request" and requests == cut.at:
                    loop.call_soon_threadsafe(store.cancel)

            self.on_request = count_request
            if cut.kind == "timer":
                loop.call_later(cut.seconds, store.cancel)
            try:
                return await task
            finally:
                self.on_request = None

        result: StepResult | None = None
        try:
            result = asyncio.run(go())
        except (asyncio.CancelledError, KeyboardInterrupt):
            result = None
        finally:
            self.on_request = None
        expect(
            result is None or not store.fired,
            f"the run was cut ({cut.kind}) but returned a result: the cut was swallowed",
        )
        return (sid or (seen[0] if seen else None)), result

    def _entries(self, rt: Runtime, sid: str | None) -> list[Entry]:
        if sid is None:
            return []
        return rt.store.load(rt.key(sid)) or []

    def _check(
        self,
        trial: int,
        sid: str | None,
        result: StepResult | None,
        requests_before: int,
        rejections_before: int,
    ) -> None:
        rejected = self.fake.rejections[rejections_before:]
        expect(not rejected, f"the fake rejected a request: {rejected[0][1] if rejected else ''}")
        for number, request in enumerate(self.fake.requests[requests_before:]):
            check_request(request, number)
        check_ran_log(self.workspace, trial)
        if sid is None:
            expect(result is None or result.session_id is None, "a result without a session")
            return
        rt = self.runtime(self.open_store())
        try:
            key = rt.key(sid)
            raw = rt.store.load(key) or []
            expect(bool(raw), f"session {sid} has no entries")
            check_chain(raw)
            check_tool_answers(raw)
            check_prompts(raw)
            chain = rt.view.load(key) or []
            problems = conversation_problems(to_messages(chain))
            expect(not problems, f"the pruned chain is not a valid conversation: {problems}")
            if result is not None:
                before = {e["uuid"] for e in self._before}
                new = [e for e in raw if e["uuid"] not in before]
                check_result(result, new, sid, price_table(self.settings.engine.prices))
                check_events(self.events, result, new, self._resumed)
        finally:
            rt.close()


def _outcome(seed: int, number: int, cut: Cut, result: StepResult | None) -> str:
    if result is None:
        return f"{seed}.{number} cut {cut.kind}@{cut.at}"
    return (
        f"{seed}.{number} ok={result.ok} stop={result.stop} turns={result.num_turns} "
        f"attempts={result.attempts} error={(result.error or '')[:70]!r}"
    )


def _settings(root: Path, store_url: str | None = None) -> Settings:
    settings = sqlite_settings(root)
    if store_url is not None:
        sessions = msgspec.structs.replace(settings.sessions, url=store_url, auto_migrate=True)
        settings = msgspec.structs.replace(settings, sessions=sessions)
    engine = msgspec.structs.replace(
        settings.engine, request_timeout=REQUEST_TIMEOUT, bash_timeout=5.0
    )
    return msgspec.structs.replace(settings, engine=engine)


async def _short_sleep(seconds: float) -> None:
    await asyncio.sleep(min(seconds, 0.01))


def _resilience(base_url: str) -> Resilience:
    config = ResilienceConfig(base_delay=0.0, max_attempts=4, probe_interval=0.05)
    return Resilience(config, prober=AlwaysUp(), base_url=base_url, sleep=_short_sleep)


# --------------------------------------------------------------------------- minimise


def minimise(harness: Harness, finding: Finding) -> Finding:
    """Drop script items and cuts while the same kind of problem still shows."""
    signature = finding.problem.split(":")[0]

    def still(script: list[ScriptItem], cuts: list[Cut]) -> Finding | None:
        found = harness.trial(finding.seed, script, cuts)
        return found if found is not None and found.problem.startswith(signature) else None

    best = finding
    changed = True
    while changed:
        changed = False
        for i in range(len(best.script)):
            candidate = best.script[:i] + best.script[i + 1 :]
            found = still(candidate, best.cuts)
            if found is not None:
                best, changed = found, True
                break
        for i, cut in enumerate(best.cuts):
            if cut.kind == "none" and i == len(best.cuts) - 1:
                continue
            candidate_cuts = [*best.cuts[:i], *best.cuts[i + 1 :]] or [Cut()]
            if candidate_cuts == best.cuts:
                continue
            found = still(best.script, candidate_cuts)
            if found is not None:
                best, changed = found, True
                break
    return best


def run_seeds(
    seeds: Sequence[int], *, shrink: bool = False, store_url: str | None = None
) -> list[Finding]:
    findings: list[Finding] = []
    with tempfile.TemporaryDirectory() as tmp, FakeMessagesAPI() as fake:
        os.environ.update(fake.env())
        if store_url == "jsonfs":
            store_url = f"jsonfs:///{tmp}/sessions"
        harness = Harness(Path(tmp), fake, store_url)
        try:
            for seed in seeds:
                found = harness.trial(seed)
                if found is not None:
                    findings.append(minimise(harness, found) if shrink else found)
            if os.environ.get("FUZZ_VERBOSE"):
                print("\n".join(harness.log))
        finally:
            harness.close()
    return findings


def main(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", default="0:50")
    parser.add_argument("--shrink", action="store_true")
    parser.add_argument("--store", default=None, help="a store URL, 'jsonfs' or 'postgres'")
    args = parser.parse_args(argv)
    start, stop = (int(x) for x in args.seeds.split(":"))
    if args.store == "postgres":
        from flower.testing.postgres import temporary_schema

        with temporary_schema() as url:
            findings = run_seeds(range(start, stop), shrink=args.shrink, store_url=url)
    else:
        findings = run_seeds(range(start, stop), shrink=args.shrink, store_url=args.store)
    for finding in findings:
        print("=" * 70)
        print(finding)
        print("cuts:", finding.cuts)
        for item in finding.script:
            print(
                "   ",
                json.dumps(item, default=repr)[:300] if isinstance(item, str) else repr(item)[:400],
            )
    print(f"{len(findings)} finding(s) in {stop - start} trials")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
