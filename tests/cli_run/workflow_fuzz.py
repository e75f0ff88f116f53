"""A seeded fuzzer of whole CLI lives: ``flower --yes "..."`` killed and resumed until done.

One *life* is a workspace and a list of invocations of the real console script against
a scripted fake Messages API (:class:`FuzzModel`, which answers the clarifier, the goal
setter, the worker and the judge plausibly, from what each request holds). Every
invocation says new words, nothing, or ``--new`` and words, and may be cut by a signal
(SIGKILL, SIGTERM, SIGINT) at a point measured in progress: the k-th request the fake
receives, or the k-th store write (session appends and lineage saves, counted in the
child by a ``sitecustomize`` hook). The fake also answers with API faults (529, cut
streams) and reports a context that grows until a relay is due. After every invocation
:func:`check_after` checks the invariants; a violation is a :class:`Finding`.

Explore from the command line (each seed is one life)::

    python tests/cli_run/workflow_fuzz.py --seeds 0:20 --jobs 4
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "runtime"))

from cli_run_helpers import FLOWER, flower_env  # noqa: E402
from engine_fuzz import Violation as EngineViolation  # noqa: E402
from engine_fuzz import check_prompts, check_tool_answers  # noqa: E402

from flower.core.i18n import _, every_translation, set_language  # noqa: E402

# The agents' instructions below are read in the language the flowers it starts speak
# (flower_env: FLOWER_LANG, zh_CN unless set), so the fake recognises each request.
set_language(os.environ.get("FLOWER_LANG", "zh_CN"))
from flower.testing.fake_api import (  # noqa: E402
    FakeMessagesAPI,
    RecordedRequest,
    Reply,
    ScriptItem,
    dropped,
    overloaded,
    reply,
    tool_use,
    unauthorized,
)
from flower.testing.signals import let_children_hear_ctrl_c  # noqa: E402
from flower.workflow import prompts  # noqa: E402
from flower.workflow.builtin import worker_agent  # noqa: E402
from flower.workflow.clarify import clarifier, goal_setter  # noqa: E402
from flower.workflow.goal import judge_agent  # noqa: E402

HANDOFF_PROMPT = _(prompts.HANDOFF_PROMPT)

THRESHOLD = 20_000
"""The relay threshold the children run with (``FLOWER_RELAY_THRESHOLD_TOKENS``)."""
RELAY_SEED_START = "你接手一件做到一半的事"
MAX_INVOCATIONS = 8
ARCHIVED = tuple(
    text.split("{")[0]
    for text in every_translation("   archived the last conversation into {path}/")
)
"""How the line ``--new`` prints once it archived the last conversation begins."""


def says(template: str, output: str) -> bool:
    """Whether ``output`` holds ``template`` (a catalog message) in some language: every
    literal piece of one of its translations, around the placeholders."""
    return any(
        all(piece in output for piece in re.split(r"\{[^}]*\}", text) if piece)
        for text in every_translation(template)
    )


GOALS_NOT_MET = {
    text.strip()
    for text in every_translation("   the judge found goals not met yet: `flower` here goes on")
}
"""The line a run ends with when the judge sends it on (in any language flower speaks)."""

BRIEF = """\
## 背景
一个小工具箱。

## 要做什么
写出 {files}。

## 不做什么
不联网。

## 怎样算完成
每个文件都在,内容是它自己的名字。
"""

VOLATILE = re.compile(
    r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"  # session ids
    r"|toolu_\w+|\d{8}-\d{6}|\d{4}-\d\d-\d\d \d\d:\d\d(:\d\d)?"  # tool ids, stamps
)
"""What differs between two replays of one life: never part of a decision's seed."""

HOOK = '''\
"""Counts store writes in a fuzzed flower and sends itself a signal at the k-th."""
import os

_plan = os.environ.get("FUZZ_WRITE_KILL")
if _plan:
    _at, _signum, _when = _plan.split(":")
    _count = [0]

    def _wrap(cls, name):
        original = getattr(cls, name)

        def counted(self, *args, **kwargs):
            _count[0] += 1
            hit = _count[0] == int(_at)
            if hit and _when == "before":
                _fire()
            out = original(self, *args, **kwargs)
            if hit and _when == "after":
                _fire()
            return out

        setattr(cls, name, counted)

    def _fire():
        with open(os.environ["FUZZ_MARK"], "w") as mark:
            mark.write("fired")
        os.kill(os.getpid(), int(_signum))

    from flower_plugins.jsonfs.lineage import JsonLineageStore
    from flower_plugins.sql.store import SqlSessionStore

    _wrap(SqlSessionStore, "append")
    _wrap(JsonLineageStore, "save")
'''


# --------------------------------------------------------------------------- the model


def _system(req: RecordedRequest) -> str:
    system = req.body.get("system")
    if isinstance(system, str):
        return system
    return "".join(b.get("text", "") for b in system or [] if isinstance(b, dict))


def _user_texts(message: dict[str, Any]) -> list[str]:
    """The text blocks of a message (tool results left out)."""
    content = message.get("content")
    if isinstance(content, str):
        return [content]
    return [
        b.get("text", "") for b in content or () if isinstance(b, dict) and b.get("type") == "text"
    ]


def _last_user_text(req: RecordedRequest) -> str:
    for message in reversed(req.messages):
        if message.get("role") == "user":
            texts = _user_texts(message)
            if texts:
                return texts[-1]
    return ""


def _tool_uses(req: RecordedRequest) -> int:
    return sum(
        1
        for m in req.messages
        if m.get("role") == "assistant" and isinstance(m.get("content"), list)
        for b in m["content"]
        if isinstance(b, dict) and b.get("type") == "tool_use"
    )


AGENTS = {
    clarifier().instructions: "clarifier",
    goal_setter().instructions: "goals",
    worker_agent().instructions: "worker",
    judge_agent().instructions: "judge",
}


class FuzzModel:
    """Answers each agent from what its request holds; faults and growth from the seed.

    Every decision comes from a generator seeded by the life's seed, the agent, the
    request's content and how often that same request was seen, so a life replays the
    same way while its invocations do.
    """

    def __init__(self, seed: int, ws: Path, files: list[str], fault_rate: float) -> None:
        self.seed = seed
        self.ws = ws
        self.files = files
        self.fault_rate = fault_rate
        self.growth = random.Random(seed).choice([900, 1400, 2200, 3000])
        self.seen: Counter[str] = Counter()
        self.kill_at: int | None = None
        self.kill_signal = signal.SIGKILL
        self.pid: int | None = None
        self.fired = False
        self.count = 0
        self.requests: list[RecordedRequest] = []
        self.lock = threading.Lock()

    def arm(self, pid: int, at: int | None, sig: signal.Signals) -> None:
        with self.lock:
            self.pid, self.kill_at, self.kill_signal = pid, at, sig
            self.fired, self.count = False, 0
            self.requests = []

    def _rng(self, agent: str, req: RecordedRequest) -> random.Random:
        # the request's words only: no tool ids, no temporary paths, no timestamps
        words = json.dumps(req.texts(), ensure_ascii=False).replace(str(self.ws), "WS")
        words = VOLATILE.sub("", words)
        digest = hashlib.sha256(words.encode()).hexdigest()
        key = f"{agent}:{digest}"
        self.seen[key] += 1
        return random.Random(f"{self.seed}:{key}:{self.seen[key]}")

    def __call__(self, req: RecordedRequest) -> ScriptItem:
        with self.lock:
            self.count += 1
            self.requests.append(req)
            kill = self.kill_at == self.count and self.pid is not None
            if kill:
                self.fired = True
                os.kill(self.pid, self.kill_signal)  # type: ignore[arg-type]
        agent = AGENTS.get(_system(req), "other")
        rng = self._rng(agent, req)
        if rng.random() < self.fault_rate:
            answer = self._fault(rng, agent, req)
        else:
            answer = self._answer(rng, agent, req)
        if kill and isinstance(answer, Reply):
            answer.delay = 0.5  # let the signal land before the answer does
        return answer

    def _fault(self, rng: random.Random, agent: str, req: RecordedRequest) -> ScriptItem:
        if rng.random() < 0.5:
            return overloaded()
        return dropped(self._answer(rng, agent, req), after=rng.randint(1, 4))

    def _answer(self, rng: random.Random, agent: str, req: RecordedRequest) -> Reply:
        answer = getattr(self, f"_{agent}", self._other)(rng, req)
        answer.usage = self._usage(agent, req)
        return answer

    def _usage(self, agent: str, req: RecordedRequest) -> dict[str, int]:
        chars = sum(len(t) for t in req.texts())
        tokens = 1500 + chars // 3
        if agent == "worker":
            tokens += self.growth * len(req.messages)
        return {"input_tokens": tokens, "output_tokens": 100}

    def _clarifier(self, rng: random.Random, req: RecordedRequest) -> Reply:
        if len(req.messages) == 1 and rng.random() < 0.3:
            return reply("有个问题:文件放在哪个目录?")
        return reply("需求如下:\n\n" + BRIEF.format(files="、".join(self.files)))

    def needed(self, brief: str) -> list[str]:
        """The base files, and one more for every feature the user asked for."""
        extra = [f"feat{n}.txt" for n in re.findall(r"加一个功能(\d+)", brief)]
        return list(dict.fromkeys([*self.files, *extra]))

    def _goals(self, rng: random.Random, req: RecordedRequest) -> Reply:
        if rng.random() < 0.1:
            return reply("好的,我来列目标。")
        files = self.needed("\n".join(req.texts()))
        return reply("\n".join(f"{i}. 工作区里有 {f}" for i, f in enumerate(files, 1)))

    def _worker(self, rng: random.Random, req: RecordedRequest) -> Reply:
        if HANDOFF_PROMPT in _last_user_text(req):
            return reply("# 交接\n\n要做的事见需求文件;接下来把缺的文件写出来。")
        brief = self.ws / "需求.md"
        files = self.needed(brief.read_text(encoding="utf-8") if brief.exists() else "")
        missing = [f for f in files if not (self.ws / f).exists()]
        if rng.random() < 0.25:
            return reply("先看看现状。", tool_use("Glob", {"pattern": "*"}))
        if missing:
            name = missing[0]
            return reply(f"写 {name}。", tool_use("Write", {"file_path": name, "content": name}))
        return reply("做完了:" + "、".join(files) + " 都写好了。")

    def _judge(self, rng: random.Random, req: RecordedRequest) -> Reply:
        if not _tool_uses(req):
            return reply("我看一下。", tool_use("Glob", {"pattern": "*"}))
        lines = []
        goals = re.findall(r"^\d+\. 工作区里有 (\S+)$", req.texts()[0], re.MULTILINE)
        for i, name in enumerate(goals, 1):
            met = (self.ws / name).exists() and rng.random() > 0.15
            lines.append(f"{i}. {'达成' if met else '未达成'} — {name}")
        return reply("\n".join(lines))

    def _other(self, rng: random.Random, req: RecordedRequest) -> Reply:
        return reply("(fuzz) 不认识的请求。")


# --------------------------------------------------------------------------- a life


@dataclass
class Kill:
    at: str  # "request" or "write"
    k: int
    sig: signal.Signals
    when: str = "before"  # for "write": before or after the write

    def __str__(self) -> str:
        where = f"{self.when} write" if self.at == "write" else "request"
        return f"{self.sig.name} at {where} {self.k}"


@dataclass
class Invocation:
    said: str | None
    new: bool = False
    kill: Kill | None = None

    def args(self) -> list[str]:
        args = ["--yes"]
        if self.new:
            args.append("--new")
        if self.said is not None:
            args.append(self.said)
        return args

    def __str__(self) -> str:
        return f"flower {' '.join(self.args())}" + (f"  [{self.kill}]" if self.kill else "")


def make_life(seed: int) -> list[Invocation]:
    rng = random.Random(seed)
    plan: list[Invocation] = []
    words = 0

    def say() -> str:
        nonlocal words
        words += 1
        return f"第{words}句话-s{seed}:加一个功能{rng.randint(100, 999)}"

    for n in range(MAX_INVOCATIONS):
        roll = rng.random()
        if n == 0 or roll < 0.35:
            inv = Invocation(say())
        elif roll < 0.9:
            inv = Invocation(None)
        else:
            inv = Invocation(say(), new=True)
        if rng.random() < 0.75:
            sig = rng.choice([signal.SIGKILL, signal.SIGTERM, signal.SIGINT])
            if rng.random() < 0.5:
                inv.kill = Kill("request", rng.randint(1, 20), sig)
            else:
                when = rng.choice(["before", "after"])
                inv.kill = Kill("write", rng.randint(1, 60), sig, when)
        plan.append(inv)
    return plan


@dataclass
class Finding:
    seed: int
    step: int
    problem: str
    plan: list[Invocation]
    output: str = ""

    def __str__(self) -> str:
        lines = [f"seed {self.seed}, invocation {self.step}: {self.problem}"]
        lines += [f"  {i}. {inv}" for i, inv in enumerate(self.plan[: self.step + 1])]
        return "\n".join(lines)


class Violation(AssertionError):
    pass


def expect(condition: bool, problem: str) -> None:
    if not condition:
        raise Violation(problem)


@dataclass
class Outcome:
    code: int
    stdout: str
    stderr: str
    fired: bool
    requests: list[RecordedRequest]
    status: str


@dataclass
class LifeState:
    """What the fuzzer knows of the current intention (since the last ``--new``)."""

    words: list[str] = field(default_factory=list)
    superseded: list[str] = field(default_factory=list)
    woke: int = 0
    finished: bool = False


class Life:
    def __init__(self, seed: int, root: Path, plan: list[Invocation]) -> None:
        self.seed = seed
        self.plan = plan
        self.ws = (root / "ws").resolve()
        self.ws.mkdir(parents=True)
        self.home = root / "home"
        self.home.mkdir()
        hook = root / "hook"
        hook.mkdir()
        (hook / "sitecustomize.py").write_text(HOOK)
        self.hook = hook
        self.mark = root / "fired"
        rng = random.Random(f"files{seed}")
        self.files = [f"f{i}.txt" for i in range(rng.randint(1, 4))]
        self.model = FuzzModel(seed, self.ws, self.files, fault_rate=rng.choice([0.0, 0.05, 0.12]))
        self.state = LifeState()
        self.stats: Counter[str] = Counter()

    def env(self, api: FakeMessagesAPI, inv: Invocation) -> dict[str, str]:
        env = flower_env(api, self.home)
        env.update(
            FLOWER_RESILIENCE_MAX_ATTEMPTS="3",
            FLOWER_RESILIENCE_BASE_DELAY="0",
            FLOWER_RELAY_THRESHOLD_TOKENS=str(THRESHOLD),
            FUZZ_MARK=str(self.mark),
        )
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(self.hook), os.environ.get("PYTHONPATH", "")) if p
        )
        if inv.kill is not None and inv.kill.at == "write":
            env["FUZZ_WRITE_KILL"] = f"{inv.kill.k}:{int(inv.kill.sig)}:{inv.kill.when}"
        return env

    def status(self, env: dict[str, str]) -> str:
        done = subprocess.run(
            [*FLOWER, "status"], cwd=self.ws, env=env, capture_output=True, text=True, timeout=60
        )
        return done.stdout

    def invoke(self, api: FakeMessagesAPI, inv: Invocation) -> Outcome:
        env = self.env(api, inv)
        status = self.status(env)
        self.mark.unlink(missing_ok=True)
        proc = subprocess.Popen(
            [*FLOWER, *inv.args()],
            cwd=self.ws,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        at = inv.kill.k if inv.kill is not None and inv.kill.at == "request" else None
        sig = inv.kill.sig if inv.kill is not None else signal.SIGKILL
        self.model.arm(proc.pid, at, sig)
        try:
            out, err = proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            raise Violation(
                f"flower hung; stdout tail: {out[-800:]!r} stderr: {err[-800:]!r}"
            ) from None
        fired = self.model.fired or self.mark.exists()
        return Outcome(proc.returncode, out, err, fired, list(self.model.requests), status)

    def run(self) -> Finding | None:
        with FakeMessagesAPI(self.model) as api:
            for step, inv in enumerate(self.plan):
                before = self.snapshot()
                outcome: Outcome | None = None
                try:
                    outcome = self.invoke(api, inv)
                    self.account(inv, before, outcome)
                    check_after(self, inv, before, outcome, api)
                except Violation as exc:
                    output = ""
                    if outcome is not None:
                        output = f"exit {outcome.code}\n{outcome.stdout[-3000:]}\n"
                        output += outcome.stderr[-3000:]
                    return Finding(self.seed, step, str(exc), self.plan, output)
                self.tally(outcome)
        return None

    def tally(self, outcome: Outcome) -> None:
        self.stats["runs"] += 1
        self.stats["killed"] += outcome.fired
        self.stats[f"exit{outcome.code}"] += 1
        self.stats["relays"] = len(list((self.ws / "notes" / "relay").glob("*.md")))

    def snapshot(self) -> dict[str, Any]:
        return {
            "lineage": read_lineage(self.ws),
            "journal": journal_texts(self.ws),
            "brief": (self.ws / "需求.md").exists(),
            "state": (list(self.state.words), self.state.woke),
        }

    def account(self, inv: Invocation, before: dict[str, Any], outcome: Outcome) -> None:
        """Update what the fuzzer expects: the words of this intention, the wake count."""
        if inv.new:
            archived = outcome.stdout.startswith(ARCHIVED) or not before["lineage"]
            refused = outcome.code not in (0, 1) and not outcome.stdout
            if not refused and (
                archived or says("-> starting something new in {where}", outcome.stdout)
            ):
                self.state = LifeState()
        if inv.said is not None and outcome.stdout:  # it got past the start (the banner)
            lineage = before["lineage"] or {}
            # a first request no step took up: in lineage, or in the journal of a run
            # killed before lineage held it
            pending = [(lineage.get("said") or {}).get("request"), *before["journal"]]
            clarified = before["brief"] or "确认需求" in (lineage.get("steps") or {})
            for text in pending:
                if text and text in self.state.words and not inv.new and not clarified:
                    # documented: what is said now replaces a first request no step took up
                    self.state.words.remove(text)
                    self.state.superseded.append(text)
            self.state.words.append(inv.said)


# --------------------------------------------------------------------------- checks


def read_lineage(ws: Path) -> dict[str, Any] | None:
    path = ws / "runs" / "lineage.json"
    if not path.exists():
        return None
    return json.loads(path.read_text(encoding="utf-8"))


def load_sessions(ws: Path) -> dict[str, list[dict[str, Any]]]:
    """Every session in the store: ``{session_id: entries}`` (raw, decoded)."""
    path = ws / "runs" / "sessions.db"
    if not path.exists():
        return {}
    from flower.core.keys import project_key
    from flower.core.records import SessionKey
    from flower.stores.open import open_session_store

    sessions: dict[str, list[dict[str, Any]]] = {}
    with open_session_store(f"sqlite:///{path}") as store:
        pkey = project_key(ws)
        for info in store.list_sessions(pkey):
            key = SessionKey(pkey, info.session_id)
            sessions[info.session_id] = store.load(key) or []
    return sessions


def _texts_of(entry: dict[str, Any]) -> list[str]:
    return _user_texts(entry.get("message") or {})


EXIT_AFTER = {signal.SIGKILL: {-9}, signal.SIGTERM: {143, -15}, signal.SIGINT: {130, -2}}


def check_exit(inv: Invocation, outcome: Outcome) -> None:
    if outcome.fired and inv.kill is not None:
        allowed = EXIT_AFTER[inv.kill.sig]
        expect(outcome.code in allowed, f"exit {outcome.code} after {inv.kill.sig.name}")
    else:
        expect(outcome.code in (0, 1, 2, 4), f"exit {outcome.code} with no signal sent")
    expect("Traceback" not in outcome.stderr, f"a traceback: {outcome.stderr[-1500:]}")


def check_lineage(ws: Path, sessions: dict[str, list[dict[str, Any]]]) -> dict[str, Any] | None:
    path = ws / "runs" / "lineage.json"
    if not path.exists():
        return None
    try:
        lineage = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise Violation(f"lineage.json is not JSON: {exc}") from None
    expect(isinstance(lineage, dict), "lineage.json is not an object")
    expect(lineage.get("workspace") == str(ws), f"lineage workspace {lineage.get('workspace')}")
    expect(isinstance(lineage.get("woke"), int), "lineage woke is not a number")
    steps = lineage.get("steps")
    expect(isinstance(steps, dict), "lineage steps is not an object")
    for step, sid in steps.items():
        expect(sid in sessions, f"lineage step {step} names {sid}, not in the store")
    return lineage


def check_transcripts(sessions: dict[str, list[dict[str, Any]]]) -> None:
    for sid, raw in sessions.items():
        uuids = [e.get("uuid") for e in raw]
        expect(len(set(uuids)) == len(uuids), f"{sid}: duplicate uuids")
        expect(
            bool(raw) and raw[0].get("parentUuid") is None, f"{sid}: the first entry has a parent"
        )
        # a fork (``flower rewind``) ends with its title, which is no link of the chain
        chain = [e for e in raw if e.get("type") != "custom-title"]
        for before, after in itertools.pairwise(chain):
            expect(
                after.get("parentUuid") == before.get("uuid"),
                f"{sid}: entry {after.get('type')} {after.get('uuid')} is not chained to the "
                "entry before it",
            )
        try:  # what the engine fuzzer checks of one transcript, for each session
            check_prompts(raw)
            check_tool_answers(raw)
        except EngineViolation as exc:
            raise Violation(f"{sid}: {exc}") from None


def check_relays(
    sessions: dict[str, list[dict[str, Any]]], lineage: dict[str, Any] | None, killed: bool
) -> None:
    successors: dict[str, list[str]] = {}
    for sid, raw in sessions.items():
        origin = raw[0].get("relayFrom") if raw else None
        if origin:
            successors.setdefault(origin, []).append(sid)
            expect(origin in sessions, f"{sid} relays from {origin}, not in the store")
    for sid, raw in sessions.items():
        handoffs = [e for e in raw if e.get("type") == "user" and HANDOFF_PROMPT in _texts_of(e)]
        expect(len(handoffs) <= 1, f"{sid}: the handoff was asked {len(handoffs)} times")
        expect(
            len(successors.get(sid, [])) <= 1,
            f"{sid} was relayed to {len(successors[sid]) if sid in successors else 0} sessions",
        )
        if sid in successors:
            expect(bool(handoffs), f"{sid} was relayed without a handoff request")
    if lineage and not killed:  # a kill may fall between the new session and lineage
        for step, sid in (lineage.get("steps") or {}).items():
            expect(sid not in successors, f"lineage step {step} names {sid}, relayed already")


def check_requests(outcome: Outcome, words: list[str], api: FakeMessagesAPI) -> None:
    if api.rejections:
        raise Violation(f"the fake rejected a request: {api.rejections[-1][1]}")
    for n, req in enumerate(outcome.requests, 1):
        agent = AGENTS.get(_system(req), "other")
        expect(agent != "other", f"request {n}: an agent the fuzzer does not know")
        expect(
            not any("API Error" in t for t in req.texts()),
            f"request {n} shows the model an API Error text",
        )
        if agent not in ("worker", "clarifier"):
            continue
        said = [t for m in req.messages if m.get("role") == "user" for t in _user_texts(m)]
        for word in words:
            times = sum(word in t for t in said)
            if any(RELAY_SEED_START in t and word in t for t in said):
                continue  # a relay seed may quote the stopped run's prompt
            expect(times <= 1, f"request {n} ({agent}) carries {word!r} {times} times")


def journal_texts(ws: Path) -> list[str]:
    try:
        journal = json.loads((ws / "runs" / "said.json").read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    return [said["text"] for said in journal]


def check_words(
    ws: Path,
    state: LifeState,
    sessions: dict[str, list[dict[str, Any]]],
    lineage: dict[str, Any] | None,
    outcome: Outcome,
) -> None:
    """Every word of this intention is kept: in lineage until a transcript holds it."""
    kept = journal_texts(ws)  # said to a run killed before lineage held it
    said = (lineage or {}).get("said") or {}  # flower.workflow.said.SaidRecord
    if isinstance(said.get("request"), str):
        kept.append(said["request"])
    kept.extend(t for t in said.get("unheard") or [] if isinstance(t, str))
    held = [
        t for raw in sessions.values() for e in raw if e.get("type") == "user" for t in _texts_of(e)
    ]
    for word in state.words:
        in_lineage = any(word in t for t in kept)
        in_transcript = any(word in t for t in held)
        expect(
            in_lineage or in_transcript, f"{word!r} is lost: in no transcript and not in lineage"
        )
        if outcome.code in (0, 4):  # 4: every step ran, goals left unmet
            expect(in_transcript, f"{word!r} is in no transcript after a run that ended well")
    if outcome.code in (0, 4) and lineage:
        expect(not said.get("unheard"), f"unheard left after a run that ended well: {lineage}")
        expect("request" not in said, "a request left in lineage after a run that ended well")


# status speaks the language the fuzz runs flower in (zh_CN, as the step headers it reads)
_NEXT = re.compile(r"^下一步\s+(.*)$", re.MULTILINE)
_RESUMES = re.compile(r"`flower` 接着做 (.*)\(第 (\d+) 次唤醒\)")
_LEFT = "`flower` 从被中止的运行留下的请求开始:"


def check_status(inv: Invocation, outcome: Outcome, after: dict[str, Any] | None) -> None:
    """``flower status`` before a run said what this run would do (when nothing was said)."""
    if inv.said is not None or inv.new:
        return
    match = _NEXT.search(outcome.status)
    expect(match is not None, f"status has no next line: {outcome.status!r}")
    assert match is not None
    nxt = match.group(1)
    if nxt.startswith("没有可接着做的"):
        expect(outcome.code == 2, f"status said nothing to resume, flower exited {outcome.code}")
        return
    expect(outcome.code != 2, f"flower exited 2 though status said: {nxt}")
    resumes = _RESUMES.search(nxt)
    if resumes and outcome.requests and after:
        expect(
            after.get("woke") == int(resumes.group(2)),
            f"status said wake {resumes.group(2)}, lineage says {after.get('woke')}",
        )
    first: dict[str, RecordedRequest] = {}
    for req in outcome.requests:
        first.setdefault(AGENTS.get(_system(req), "other"), req)
    predicted = set(resumes.group(1).split("、")) if resumes else set()
    for step in ("确认需求", "设定目标", "干活"):
        # the step's header says whether it resumed a session: `<- 接上次`
        header = re.search(rf"^== {step} =+ .*$", outcome.stdout, re.MULTILINE)
        if header is None:
            continue
        resumed = "<- 接上次" in header.group(0)
        if step in predicted:
            expect(resumed, f"status said {step} resumes; it started a new session")
        else:
            expect(not resumed, f"status did not say {step} resumes ({nxt}); it resumed")
    if nxt.startswith(_LEFT):
        req = first.get("clarifier")
        if req is not None:
            left = nxt.removeprefix(_LEFT).rstrip("…")
            expect(left in req.texts()[-1], f"status said the request {left!r}; not asked")


def check_after(
    life: Life, inv: Invocation, before: dict[str, Any], outcome: Outcome, api: FakeMessagesAPI
) -> None:
    check_exit(inv, outcome)
    sessions = load_sessions(life.ws)
    lineage = check_lineage(life.ws, sessions)
    check_transcripts(sessions)
    check_relays(sessions, lineage, outcome.fired)
    check_requests(outcome, life.state.words + life.state.superseded, api)
    check_words(life.ws, life.state, sessions, lineage, outcome)
    check_woke(inv, before, outcome, lineage, life.state)
    check_status(inv, outcome, lineage)
    judged = any(AGENTS.get(_system(r)) == "judge" for r in outcome.requests)
    if outcome.code == 0 and judged and not any(t in outcome.stdout for t in GOALS_NOT_MET):
        life.state.finished = True


def check_woke(
    inv: Invocation,
    before: dict[str, Any],
    outcome: Outcome,
    lineage: dict[str, Any] | None,
    state: LifeState,
) -> None:
    earlier = 0 if inv.new else ((before["lineage"] or {}).get("woke") or 0)
    now = (lineage or {}).get("woke") or 0
    if inv.new and not any(a in outcome.stdout for a in ARCHIVED) and before["lineage"]:
        earlier = before["lineage"].get("woke") or 0  # refused before it archived anything
    expect(now - earlier in (0, 1), f"woke went from {earlier} to {now}")
    woke = (outcome.requests or outcome.code in (0, 1, 4)) and outcome.code != 2
    if woke and "is running here" not in outcome.stderr:
        expect(now == earlier + 1, f"woke went from {earlier} to {now} in a run that woke")
    shown = re.search(r"第 (\d+) 次唤醒", outcome.stdout)
    if shown and outcome.code in (0, 1, 4):
        expect(int(shown.group(1)) == now, f"the banner said wake {shown.group(1)}, lineage {now}")


# --------------------------------------------------------------------------- wake sequences
#
# Issue 29 item 10: every state a wake can leave lets the next plain `flower` go on. A
# *sequence* is a fresh workspace and a few wakes, each with a model behaviour, a wake
# input and perhaps a kill -9; then one plain `flower --yes` with a cooperative model,
# which must reach the work step and finish. Everything runs in English and the model
# answers in English, so any CJK character flower prints or writes is a finding.

BEHAVIOURS = (
    "cooperative",
    "ok",
    "empty",
    "question",
    "refusal",
    "max_tokens",
    "tools_only",
    "storm529",
    "one401",
    "dropped",
)
"""How the model answers during one wake (see :class:`WakeModel`)."""
SEND_BACK = "The acceptance check did not pass."
"""How the judge's send-back to the worker begins in English (these runs' language)."""
API_FAULTS = ("storm529", "one401", "dropped", "refusal")
"""The behaviours that may end a wake before its work step: an API error, or a refusal
(the model declined; the run stops, the next wake asks again)."""
WAKE_INPUTS = ("nothing", "sentence", "new", "rewind")
"""What the user types: ``flower --yes``, ``flower --yes "..."``, ``flower --yes --new
"..."``, ``flower rewind 1``."""
STEP_AGENTS = ("clarifier", "goals", "worker", "judge")
CJK = re.compile(r"[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef]+")
CJK_WORDS = re.compile(r"[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef]{4,}")
"""Chinese in a binary file: four characters in a row, not bytes that happen to decode."""
SENTENCE = re.compile(r"sentence (\d+) of seed (\d+): also add feature (\d+)")
FEATURE = re.compile(r"add feature (\d+)")


def _every_language(read: Any) -> set[str]:
    from flower.core.i18n import available_languages, language

    found = set()
    for code in available_languages():
        with language(code):
            found.add(read())
    return found


def _agent_names() -> dict[str, str]:
    from flower.workflow import builtin, clarify, goal

    names: dict[str, str] = {}
    for agent, read in (
        ("clarifier", lambda: clarify.clarifier().instructions),
        ("goals", lambda: clarify.goal_setter().instructions),
        ("worker", lambda: builtin.worker_agent().instructions),
        ("judge", lambda: goal.judge_agent().instructions),
    ):
        for text in _every_language(read):
            names[text] = agent
    return names


WAKE_AGENTS = _agent_names()
"""Each agent's instructions in every language flower speaks -> the agent."""


def _handoffs() -> set[str]:
    return every_translation(prompts.HANDOFF_PROMPT)


HANDOFFS = _handoffs()


def agent_of(req: RecordedRequest) -> str:
    return WAKE_AGENTS.get(_system(req), "other")


@dataclass
class Wake:
    """One invocation of a sequence."""

    behaviour: str
    input: str
    said: str | None = None
    targets: tuple[str, ...] = STEP_AGENTS
    """The agents that behave so; the others cooperate."""
    kill: Kill | None = None

    def args(self) -> list[str]:
        if self.input == "rewind":
            return ["rewind", "1"]
        args = ["--yes"]
        if self.input == "new":
            args.append("--new")
        if self.said is not None:
            args.append(self.said)
        return args

    def __str__(self) -> str:
        who = "all" if self.targets == STEP_AGENTS else "+".join(self.targets)
        text = f"[{self.behaviour} ({who})] flower {' '.join(self.args())}"
        return text + (f"  [{self.kill}]" if self.kill else "")


def make_sequence(seed: int, wakes: int | None = None) -> list[Wake]:
    """A seed's wakes (the final cooperative ``flower --yes`` is not among them)."""
    rng = random.Random(f"wake{seed}")
    count = wakes if wakes is not None else rng.randint(1, 4)
    plan: list[Wake] = []
    said = 0
    for n in range(count):
        behaviour = rng.choice(BEHAVIOURS)
        kind = "sentence" if n == 0 else rng.choices(WAKE_INPUTS, [3, 3, 1, 2])[0]
        retype = random.Random(f"retype{seed}:{n}").random() < 0.6
        if plan and plan[-1].input == "rewind" and plan[-1].kill is not None and retype:
            kind = "rewind"  # as a user would: the rewind was killed, type it again
        text = None
        if kind in ("sentence", "new"):
            said += 1
            text = f"sentence {said} of seed {seed}: also add feature {rng.randint(100, 999)}"
        targets = STEP_AGENTS if rng.random() < 0.4 else (rng.choice(STEP_AGENTS),)
        wake = Wake(behaviour, kind, text, targets)
        if rng.random() < 0.6:
            if kind == "rewind" or rng.random() < 0.5:
                wake.kill = Kill(
                    "write", rng.randint(1, 30), signal.SIGKILL, rng.choice(["before", "after"])
                )
            else:
                wake.kill = Kill("request", rng.randint(1, 10), signal.SIGKILL)
            if kind == "rewind":  # a rewind writes twice or so: the fork, then lineage
                wake.kill.k = 1 + (wake.kill.k - 1) % 3
        plan.append(wake)
    return plan


class WakeModel:
    """A model whose behaviour the sequence sets for each wake; cooperative, it answers
    each agent from what the request holds, in English."""

    def __init__(self, seed: int, ws: Path, files: list[str]) -> None:
        self.seed = seed
        self.ws = ws
        self.files = files
        self.behaviour = "cooperative"
        self.targets: tuple[str, ...] = STEP_AGENTS
        self.kill_at: int | None = None
        self.pid: int | None = None
        self.fired = False
        self.count = 0
        self.wake = 0
        self.answered_401 = False
        self.requests: list[RecordedRequest] = []
        self.lock = threading.Lock()

    def arm(self, pid: int, wake: int, behave: Wake | None, at: int | None) -> None:
        with self.lock:
            self.pid, self.kill_at, self.wake = pid, at, wake
            self.behaviour = behave.behaviour if behave else "cooperative"
            self.targets = behave.targets if behave else STEP_AGENTS
            self.fired, self.count, self.answered_401 = False, 0, False
            self.requests = []

    def __call__(self, req: RecordedRequest) -> ScriptItem:
        with self.lock:
            self.count += 1
            n = self.count
            self.requests.append(req)
            kill = self.kill_at == n and self.pid is not None
            if kill:
                self.fired = True
                os.kill(self.pid, signal.SIGKILL)  # type: ignore[arg-type]
        agent = agent_of(req)
        rng = random.Random(f"{self.seed}:{self.wake}:{n}")
        answer = self._behave(rng, agent, req)
        if kill and isinstance(answer, Reply):
            answer.delay = 0.5  # let the signal land before the answer does
        return answer

    # -- behaviours

    def _behave(self, rng: random.Random, agent: str, req: RecordedRequest) -> ScriptItem:
        how = self.behaviour if agent in self.targets else "cooperative"
        if how == "one401":
            with self.lock:
                first, self.answered_401 = not self.answered_401, True
            return unauthorized() if first else self._answer(rng, agent, req)
        if how == "storm529":
            return overloaded()
        if how == "dropped":
            answer = self._answer(rng, agent, req)
            return dropped(answer, after=rng.randint(1, 4)) if rng.random() < 0.7 else answer
        if how == "ok":
            return reply("OK")
        if how == "empty":
            return Reply(content=[]) if rng.random() < 0.5 else reply("")
        if how == "question":
            return reply("Before I start: which folder should the files go in, and why?")
        if how == "refusal":
            words = "I can't help with that." if rng.random() < 0.5 else ""
            return reply(words, stop_reason="refusal") if words else Reply([], "refusal")
        if how == "tools_only":
            return reply(tool_use("Glob", {"pattern": "*"}))
        answer = self._answer(rng, agent, req)
        if how == "max_tokens":
            said = "".join(b.get("text", "") for b in answer.content if b.get("type") == "text")
            return reply(said[: max(1, len(said) // 2)] or "Wri", stop_reason="max_tokens")
        return answer

    # -- the cooperative model

    def _answer(self, rng: random.Random, agent: str, req: RecordedRequest) -> Reply:
        answer = {
            "clarifier": self._clarifier,
            "goals": self._goals,
            "worker": self._worker,
            "judge": self._judge,
        }.get(agent, self._other)(req)
        answer.usage = {"input_tokens": 1500 + sum(len(t) for t in req.texts()) // 3}
        return answer

    def needed(self, text: str) -> list[str]:
        extra = [f"feature{n}.txt" for n in FEATURE.findall(text)]
        return list(dict.fromkeys([*self.files, *extra]))

    def _clarifier(self, req: RecordedRequest) -> Reply:
        asked = "\n".join(req.texts())
        quoted = list(dict.fromkeys(m.group(0) for m in SENTENCE.finditer(asked)))
        files = ", ".join(self.needed(asked))
        return reply(
            "Here is the brief.\n\n## Background\nA small toolbox.\n\n"
            f"## What to do\nWrite {files}. The user said: {'; '.join(quoted) or '(nothing)'}\n\n"
            "## What not to do\nNo network.\n\n"
            "## When it is done\nEvery file is there and holds its own name.\n"
        )

    def _goals(self, req: RecordedRequest) -> Reply:
        files = self.needed("\n".join(req.texts()))
        return reply("\n".join(f"{i}. The workspace has {f}" for i, f in enumerate(files, 1)))

    def _brief(self) -> str:
        for name in ("brief.md", "需求.md"):
            path = self.ws / name
            if path.exists():
                return path.read_text(encoding="utf-8", errors="replace")
        return ""

    def _worker(self, req: RecordedRequest) -> Reply:
        if any(h in _last_user_text(req) for h in HANDOFFS):
            return reply("# Handoff\n\nSee the brief; write the files still missing.")
        said = "\n".join(t for m in req.messages if m.get("role") == "user" for t in _user_texts(m))
        files = self.needed(self._brief() + "\n" + said)
        missing = [f for f in files if not (self.ws / f).exists()]
        if missing:
            name = missing[0]
            return reply(
                f"Writing {name}.", tool_use("Write", {"file_path": name, "content": name})
            )
        return reply("Done: " + ", ".join(files) + " are written.")

    def _judge(self, req: RecordedRequest) -> Reply:
        if not _tool_uses(req):
            return reply("Let me look.", tool_use("Glob", {"pattern": "*"}))
        first = "\n".join(_user_texts(req.messages[0]))  # the judge's prompt
        listed = first.split("Goals:", 1)[-1].split("Finally", 1)[0]
        lines = []
        for number, goal in re.findall(r"^(\d+)\. (.*)$", listed, re.MULTILINE):
            name = re.search(r"The workspace has (\S+)", goal)
            met = name is None or (self.ws / name.group(1)).exists()
            lines.append(f"{number}. {'met' if met else 'not met'} — {goal[:60]}")
        return reply("\n".join(lines) or "1. met — the workspace holds what was asked")

    def _other(self, req: RecordedRequest) -> Reply:
        return reply("(fuzz) a request the fuzzer does not know.")


@dataclass
class Said:
    wake: int
    text: str
    new: bool


class Sequence:
    """One seed's workspace, its wakes, and the final cooperative wake."""

    def __init__(self, seed: int, root: Path, plan: list[Wake], *, status: bool = True) -> None:
        self.seed = seed
        self.plan = plan
        self.status = status
        self.ws = (root / "ws").resolve()
        self.ws.mkdir(parents=True)
        self.home = root / "home"
        self.home.mkdir()
        hook = root / "hook"
        hook.mkdir()
        (hook / "sitecustomize.py").write_text(HOOK)
        self.hook = hook
        self.mark = root / "fired"
        rng = random.Random(f"files{seed}")
        self.files = [f"file{i}.txt" for i in range(rng.randint(1, 3))]
        self.model = WakeModel(seed, self.ws, self.files)
        self.said: list[Said] = []
        self.resets: list[int] = []  # wakes after which the conversation was archived
        self.dropped: set[str] = set()  # first requests a later one replaced (documented)
        self.worker_heard: list[str] = []  # the user texts of every worker request
        self.outcomes: list[Outcome] = []
        self.stats: Counter[str] = Counter()
        self.manifest_rows = 0  # rows in runs/manifest.json before the current wake
        self.rewind_base: int | None = None  # the work step's user turns before a rewind
        self.soft: dict[str, tuple[int, str, str]] = {}
        """Violations that do not stop the sequence (Chinese in an English run, a wake that
        did not reach the work step, a closing line naming another session), by kind: the
        wake that first showed it and the problem."""

    def env(self, api: FakeMessagesAPI, wake: Wake | None) -> dict[str, str]:
        env = flower_env(api, self.home)
        env.update(
            FLOWER_LANG="en",
            LANG="en_US.UTF-8",
            LC_ALL="en_US.UTF-8",
            FLOWER_RESILIENCE_MAX_ATTEMPTS="3",
            FLOWER_RESILIENCE_BASE_DELAY="0",
            FUZZ_MARK=str(self.mark),
        )
        env.pop("LANGUAGE", None)
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(self.hook), os.environ.get("PYTHONPATH", "")) if p
        )
        if wake is not None and wake.kill is not None and wake.kill.at == "write":
            k = wake.kill
            env["FUZZ_WRITE_KILL"] = f"{k.k}:{int(k.sig)}:{k.when}"
        return env

    def invoke(self, api: FakeMessagesAPI, n: int, wake: Wake | None) -> Outcome:
        args = wake.args() if wake is not None else ["--yes"]
        self.mark.unlink(missing_ok=True)
        proc = subprocess.Popen(
            [*FLOWER, *args],
            cwd=self.ws,
            env=self.env(api, wake),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        at = wake.kill.k if wake is not None and wake.kill and wake.kill.at == "request" else None
        self.model.arm(proc.pid, n, wake, at)
        try:
            out, err = proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            raise Violation(f"flower hung; stdout: {out[-800:]!r} stderr: {err[-800:]!r}") from None
        fired = self.model.fired or self.mark.exists()
        return Outcome(proc.returncode, out, err, fired, list(self.model.requests), "")

    def archives(self) -> int:
        folder = self.ws / "notes" / "archive"
        return len(list(folder.iterdir())) if folder.is_dir() else 0

    def taken_up(self) -> bool:
        """Whether a step took up the first request (a brief, or any step in lineage)."""
        lineage = read_lineage(self.ws) or {}
        brief = any((self.ws / name).exists() for name in ("brief.md", "需求.md"))
        return brief or bool(lineage.get("steps"))

    def run(self) -> list[Finding]:
        """The sequence's findings: the first that stops it (a wake that failed a check),
        and the first of each kind that does not (see :attr:`chinese`)."""
        found = self._run()
        found += [
            Finding(self.seed, n, problem, self.describe(), output)
            for n, problem, output in self.soft.values()
        ]
        return found

    def _run(self) -> list[Finding]:
        with FakeMessagesAPI(self.model) as api:
            for n, wake in enumerate([*self.plan, None]):
                outcome: Outcome | None = None
                try:
                    archives, taken = self.archives(), self.taken_up()
                    self.manifest_rows = len(manifest_rows(self.ws))
                    if wake is not None and wake.input == "rewind" and not self.rewinding():
                        self.rewind_base = self.work_turns()
                    if wake is None and self.status:
                        self.check_status(api, n)
                    fresh = read_lineage(self.ws) is None and not taken
                    outcome = self.invoke(api, n, wake)
                    self.outcomes.append(outcome)
                    if wake is not None:
                        self.account(n, wake, outcome, archives, taken, fresh)
                    self.check_rewind(wake, outcome)
                    self.check(n, wake, outcome, api)
                except Violation as exc:
                    output = ""
                    if outcome is not None:
                        output = f"exit {outcome.code}\n{outcome.stdout[-3000:]}\n"
                        output += outcome.stderr[-3000:]
                    return [Finding(self.seed, n, str(exc), self.describe(), output)]
                self.stats["wakes"] += 1
                self.stats["killed"] += outcome.fired
                self.stats[f"exit{outcome.code}"] += 1
        return []

    def describe(self) -> list[Any]:
        return [*self.plan, "[cooperative] flower --yes (the final wake)"]

    def account(
        self, n: int, wake: Wake, outcome: Outcome, archives: int, taken: bool, fresh: bool
    ) -> None:
        if wake.said is None:
            if wake.input == "rewind" and outcome.code == 0:
                self.stats["rewound"] += 1
            return
        if not taken and not (wake.input == "new" and not fresh):
            # documented: what is said now replaces a first request no step took up
            for earlier in self.expected():
                self.dropped.add(earlier)
        self.said.append(Said(n, wake.said, wake.input == "new"))
        if wake.input == "new" and (fresh or self.archives() > archives):
            self.resets.append(n)
        elif self.archives() > archives:
            self.resets.append(n)  # a killed --new archived on this later wake

    def expected(self) -> list[str]:
        """The sentences of the current task: since the last ``--new`` that archived."""
        start = 0
        if self.resets:
            last = self.resets[-1]
            news = [s.wake for s in self.said if s.new and s.wake <= last]
            start = news[-1] if news else last
        return [s.text for s in self.said if s.wake >= start and s.text not in self.dropped]

    # -- checks

    def check(self, n: int, wake: Wake | None, outcome: Outcome, api: FakeMessagesAPI) -> None:
        killed = outcome.fired and wake is not None and wake.kill is not None
        if killed:
            expect(outcome.code == -9, f"exit {outcome.code} after kill -9")
        else:
            expect(outcome.code >= 0, f"exit {outcome.code} with no signal sent")
        expect("Traceback" not in outcome.stderr, f"a traceback: {outcome.stderr[-1500:]}")
        for problem in (
            chinese_in(outcome.stdout, "stdout"),
            chinese_in(outcome.stderr, "stderr"),
            *chinese_in_files(self.ws),
        ):
            if problem is not None:
                self.note(n, problem.split(":")[0], problem, outcome)
        if api.rejections:
            raise Violation(f"invalid: the fake rejected a request: {api.rejections[-1][1]}")
        from engine_fuzz import check_request

        for number, req in enumerate(outcome.requests, 1):
            try:
                check_request(req, number)
            except EngineViolation as exc:
                raise Violation(f"invalid: {exc}") from None
            if agent_of(req) == "worker":
                heard = [t for m in req.messages if m.get("role") == "user" for t in _user_texts(m)]
                self.worker_heard.extend(heard)
                # the judge's send-back may quote a goal made from the request: not said
                told = [t for t in heard if not t.startswith(SEND_BACK)]
                for said in self.said:
                    times = sum(said.text in t for t in told)
                    if times > 1:
                        problem = f"worker request {number} carries {said.text!r} {times} times"
                        self.note(n, "twice", f"twice: {problem}", outcome)
        sessions = load_sessions(self.ws)
        problem = chinese_in_sessions(sessions)
        if problem is not None:
            self.note(n, "Chinese in a session", problem, outcome)
        check_lineage(self.ws, sessions)
        check_transcripts(sessions)
        # these do not stop the sequence: the next wakes and the final one still must go on
        for check in (
            lambda: self.check_closing_line(outcome),
            lambda: wake is not None and self.check_progress(wake, outcome),
        ):
            try:
                check()
            except Violation as exc:
                self.note(n, str(exc).split(":")[0], str(exc), outcome)
        if wake is None:
            self.check_final(outcome)

    def check_progress(self, wake: Wake, outcome: Outcome) -> None:
        """A wake nothing cut short (no kill, no API fault) reaches the work step, whatever
        the model says (the brief and the goals fall back; issue 29 items 1-3)."""
        if outcome.fired or wake.input == "rewind" or wake.behaviour in API_FAULTS:
            return
        worked = any(agent_of(r) == "worker" for r in outcome.requests)
        expect(
            worked,
            f"stuck: a wake whose model answered {wake.behaviour!r} did not reach the work"
            f" step (exit {outcome.code})",
        )

    def check_status(self, api: FakeMessagesAPI, n: int) -> None:
        """Before the final wake, ``flower status`` answers, in English."""
        done = subprocess.run(
            [*FLOWER, "status"],
            cwd=self.ws,
            env=self.env(api, None),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
        )
        expect("Traceback" not in done.stderr, f"status: a traceback: {done.stderr[-1500:]}")
        expect(done.returncode == 0, f"status: exit {done.returncode}: {done.stderr[-500:]}")
        for problem in (
            chinese_in(done.stdout, "status's stdout"),
            chinese_in(done.stderr, "status's stderr"),
        ):
            if problem is not None:
                self.soft.setdefault(problem.split(":")[0], (n, problem, done.stdout[-2000:]))

    def note(self, n: int, kind: str, problem: str, outcome: Outcome) -> None:
        """A violation that does not stop the sequence: the first of its kind is kept."""
        output = f"exit {outcome.code}\n{outcome.stdout[-3000:]}\n{outcome.stderr[-3000:]}"
        self.soft.setdefault(kind, (n, problem, output))

    def rewinding(self) -> bool:
        """Whether a rewind a kill cut short is pending here (its plan file is there)."""
        return (self.ws / "runs" / "rewind.json").exists()

    def work_turns(self) -> int | None:
        """The user turns of the work step's session as lineage names it, if any."""
        from flower.core.fork import user_turns
        from flower.core.transcript.chain import active_chain

        steps = (read_lineage(self.ws) or {}).get("steps") or {}
        key = next((k for k in ("work", "干活") if k in steps), None)  # either language's
        entries = load_sessions(self.ws).get(steps[key]) if key else None
        return len(user_turns(active_chain(entries))) if entries else None

    def check_rewind(self, wake: Wake | None, outcome: Outcome) -> None:
        """``rewind 1`` undoes one turn, even typed again after a kill cut the first one
        short (that finishes the pending plan; issue 29 item 4: not 2 turns)."""
        base = self.rewind_base
        if wake is None or wake.input != "rewind":
            if not self.rewinding():
                self.rewind_base = None  # a wake finished the plan, then went on
            return
        if outcome.fired or self.rewinding() or outcome.code != 0:
            return
        self.rewind_base = None
        now = self.work_turns()
        if base is not None and now is not None:
            expect(
                now == base - 1,
                f"ending: rewind 1 left the work step {now} of its {base} user turns",
            )

    def check_closing_line(self, outcome: Outcome) -> None:
        """After a failed step, the closing ``flower sessions show`` line names the session
        that failed (issue 29 item 4)."""
        if outcome.fired:
            return
        shown = re.findall(r"flower sessions show ([0-9a-f-]{36})", outcome.stdout)
        failed = [
            row
            for row in manifest_rows(self.ws)[self.manifest_rows :]
            if row.get("ok") is False and row.get("session_id")
        ]
        if shown and failed and outcome.code == 1:  # a step failed (4: goals not met)
            expect(
                shown[-1] == failed[-1]["session_id"],
                f"ending: the closing line names session {shown[-1][:8]}, the step that failed"
                f" ({failed[-1].get('step')}) ran in {failed[-1]['session_id'][:8]}",
            )

    def check_final(self, outcome: Outcome) -> None:
        worked = any(agent_of(r) == "worker" for r in outcome.requests)
        expect(worked, f"final: flower --yes did not reach the work step (exit {outcome.code})")
        expect(outcome.code == 0, f"final: flower --yes exited {outcome.code}")
        judged = any(agent_of(r) == "judge" for r in outcome.requests)
        expect(judged, "final: flower --yes ended without the judge")
        expect(
            not any(t in outcome.stdout for t in GOALS_NOT_MET),
            "final: the judge found goals not met with a cooperative model",
        )
        brief = self.model._brief()
        for text in self.expected():
            heard = any(text in t for t in self.worker_heard) or text in brief
            expect(heard, f"lost: {text!r} never reached the work step")


def manifest_rows(ws: Path) -> list[dict[str, Any]]:
    try:
        lines = (ws / "runs" / "manifest.json").read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []
    rows = []
    for line in lines:
        try:
            row = json.loads(line)
        except ValueError:
            continue  # a line a kill cut short
        if isinstance(row, dict):
            rows.append(row)
    return rows


def chinese_in(text: str, where: str) -> str | None:
    """A problem naming the first Chinese in ``text`` (an English run's output), if any."""
    found = CJK.search(text)
    if found is None:
        return None
    start = max(0, found.start() - 60)
    return f"Chinese in {where}: {text[start : found.end() + 60]!r}"


def chinese_in_files(ws: Path) -> list[str]:
    """No file flower wrote in the workspace or runs/ holds Chinese (the user's words and
    the model's are English here, so any is flower's own): a problem for each that does."""
    problems = []
    for path in sorted(ws.rglob("*")):
        name = path.relative_to(ws).as_posix()
        if CJK.search(name):
            problems.append(f"Chinese in the name {name}")
        if not path.is_file():
            continue
        raw = path.read_bytes()
        data = raw.decode("utf-8", errors="ignore")
        where = name.split("/")[-1] if "archive/" in name else name
        if b"\0" in raw:  # a database: words, not stray bytes that happen to decode
            found = CJK_WORDS.search(data)
            problem = chinese_in(found.group(0), where) if found else None
        else:
            problem = chinese_in(data, where)
        if problem is not None:
            problems.append(problem)
    return problems


def chinese_in_sessions(sessions: dict[str, list[dict[str, Any]]]) -> str | None:
    """Chinese in a transcript of an English run (as stored, decoded), if any."""
    for sid, raw in sessions.items():
        problem = chinese_in(json.dumps(raw, ensure_ascii=False), "a session")
        if problem is not None:
            return problem.replace("a session", f"session {sid[:8]}", 1)
    return None


def run_sequence(
    seed: int, plan: list[Wake] | None = None, *, status: bool = True
) -> tuple[list[Finding], Counter[str]]:
    """Play ``seed``'s sequence (or ``plan``): its findings and its figures. ``status``:
    ask ``flower status`` before the final wake too (one more flower to start)."""
    keep = os.environ.get("FUZZ_KEEP")
    plan = plan if plan is not None else make_sequence(seed)
    if keep:
        root = tempfile.mkdtemp(prefix=f"wake{seed}-", dir=keep)
        seq = Sequence(seed, Path(root), plan, status=status)
        return seq.run(), seq.stats
    with tempfile.TemporaryDirectory(prefix=f"wake{seed}-") as root:
        seq = Sequence(seed, Path(root), plan, status=status)
        return seq.run(), seq.stats


# --------------------------------------------------------------------------- driving


def run_life(seed: int, plan: list[Invocation] | None = None) -> Finding | None:
    keep = os.environ.get("FUZZ_KEEP")
    if keep:
        root = tempfile.mkdtemp(prefix=f"wfuzz{seed}-", dir=keep)
        return Life(seed, Path(root), plan if plan is not None else make_life(seed)).run()
    with tempfile.TemporaryDirectory(prefix=f"wfuzz{seed}-") as root:
        life = Life(seed, Path(root), plan if plan is not None else make_life(seed))
        finding = life.run()
        if finding is None and os.environ.get("FUZZ_VERBOSE"):
            print(f"seed {seed}: finished={life.state.finished} {dict(life.stats)}", flush=True)
        return finding


def main(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", default="0:4")
    parser.add_argument("--jobs", type=int, default=4)
    parser.add_argument(
        "--wake",
        action="store_true",
        help="play wake sequences (issue 29 item 10) instead of whole lives",
    )
    args = parser.parse_args(argv)
    let_children_hear_ctrl_c()  # the lives send SIGINT, even from a background job
    start, stop = (int(x) for x in args.seeds.split(":"))
    return (
        fuzz_wakes(range(start, stop), args.jobs)
        if args.wake
        else fuzz_lives(range(start, stop), args.jobs)
    )


def fuzz_lives(seeds: range, jobs: int) -> int:
    from concurrent.futures import ThreadPoolExecutor

    found = 0
    with ThreadPoolExecutor(jobs) as pool:
        for seed, finding in zip(seeds, pool.map(run_life, seeds), strict=True):
            if finding is None:
                print(f"seed {seed}: ok", flush=True)
            else:
                found += 1
                print(f"FINDING {finding}\n{finding.output}\n", flush=True)
    return 1 if found else 0


def kind_of(finding: Finding) -> str:
    """What kind of violation ``finding`` is: ``stuck``, ``final``, ``lost``, ``invalid``,
    ``Chinese in <where>``, or ``other`` (a bad exit, a traceback, a broken store)."""
    head = finding.problem.split(":", 1)[0]
    kinds = ("stuck", "final", "lost", "twice", "invalid", "ending")
    if head in kinds or head.startswith("Chinese in"):
        return head
    return "other"


def fuzz_wakes(seeds: range, jobs: int) -> int:
    """Play each seed's wake sequence; print one line a seed, the findings, and a summary
    of the violations by kind with their seeds."""
    import time
    from concurrent.futures import ThreadPoolExecutor

    started = time.monotonic()
    found: list[Finding] = []
    total: Counter[str] = Counter()
    with ThreadPoolExecutor(jobs) as pool:
        for seed, (findings, stats) in zip(seeds, pool.map(run_sequence, seeds), strict=True):
            total.update(stats)
            total["sequences"] += 1
            kinds = sorted({kind_of(f) for f in findings})
            print(f"seed {seed}: {', '.join(kinds) or 'ok'} {dict(stats)}", flush=True)
            for finding in findings:
                found.append(finding)
                print(f"FINDING {finding}\n{finding.output}\n", flush=True)
    took = time.monotonic() - started
    print(
        f"{total['sequences']} sequences, {total['wakes']} wakes, {total['killed']} killed,"
        f" {len(found)} violations in {took:.0f}s",
        flush=True,
    )
    by_kind: dict[str, list[int]] = {}
    for finding in found:
        by_kind.setdefault(kind_of(finding), []).append(finding.seed)
    for kind, seeds_of in sorted(by_kind.items()):
        print(f"  {kind}: {len(seeds_of)} (seeds {', '.join(map(str, seeds_of))})", flush=True)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
