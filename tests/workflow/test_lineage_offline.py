"""Continuity end to end against the fake Messages API (the seed's tests/lineage_offline.py).

1. the seed's example, run twice: ``_woke == 2`` and the same session id
2. anything that does not match is a silent fresh start
3. kill -9 inside the first step, then a rerun resumes it
4. the judge is always a fresh session, never in lineage
5. several processes on one directory keep every manifest line
6. relay at the threshold: a handoff document seeds the new session
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from workflow_helpers import SEED_FIELDS, last_user_text, system_text, user_prompts

from flower import AgentSpec, Step, Workflow, wake_state
from flower.core.config import RelayConfig, Settings
from flower.core.i18n import _
from flower.core.manifest import read_manifest
from flower.testing.fake_api import (
    FakeMessagesAPI,
    RecordedRequest,
    reply,
    stall,
    text,
    tool_use,
)
from flower.workflow import prompts
from flower.workflow.goal import with_goal

terse = AgentSpec(
    name="terse",
    instructions="回答极简,一行以内,不解释不寒暄。",
    allowed_tools=["Read", "Glob"],
    max_turns=4,
)
PROMPT = "读 seed.txt,只回文件里那个词。"
RESUME = "接着上次的进度继续。"


def read_seed_word(req: RecordedRequest) -> Any:
    """The terse agent: Read seed.txt, then answer with the word it found."""
    last = req.messages[-1]["content"]
    if isinstance(last, list) and any(b.get("type") == "tool_result" for b in last):
        return text("苹果")
    return reply(tool_use("Read", {"file_path": "seed.txt"}))


def lineage_file() -> dict[str, Any]:
    return json.loads(Path("runs/lineage.json").read_text(encoding="utf-8"))


async def run_seed_example(**workflow_kw: Any) -> dict[str, Any]:
    from flower.runtime.engine import Runtime

    wf = Workflow([Step("取词", terse, PROMPT, resume_prompt=RESUME)], **workflow_kw)
    rt = Runtime(workspace=".", run_dir="runs")
    try:
        return await wf.run(rt)
    finally:
        rt.close()


@pytest.fixture
def seeded(in_tmp: Path, fake: FakeMessagesAPI) -> FakeMessagesAPI:
    (in_tmp / "seed.txt").write_text("苹果\n", encoding="utf-8")
    fake.set_script(read_seed_word)
    return fake


# -- 1. the seed's example -----------------------------------------------------------


def test_seed_example_twice_resumes_the_same_session(seeded: FakeMessagesAPI) -> None:
    first = asyncio.run(run_seed_example())
    assert first["_woke"] == 1
    assert first["取词"] == "苹果"
    sid = first["_sessions"]["取词"]
    assert lineage_file()["steps"] == {"取词": sid}
    before = len(seeded.requests)

    second = asyncio.run(run_seed_example())
    assert second["_woke"] == 2
    assert second["_sessions"] == {"取词": sid}
    assert second["_resumed"] == {"取词": True}
    resumed = seeded.requests[before]
    prompts = user_prompts(resumed)
    assert prompts[0] == PROMPT and prompts[-1] == RESUME  # the old conversation, then resume
    assert PROMPT not in prompts[1:]  # the brief is not sent again

    st = wake_state(".", run_dir="runs")
    assert st["waking"] is True and st["woke"] == 2 and st["steps"] == {"取词": sid}
    assert st["checks"]["lineage"] == "ok" and st["checks"]["alive"] == {"取词": True}
    assert st["checks"]["context"]["取词"] > 0


def test_manifest_has_every_field_and_the_run(seeded: FakeMessagesAPI) -> None:
    asyncio.run(run_seed_example())
    rows = read_manifest("runs")
    assert [r["step"] for r in rows] == ["取词"]
    row = rows[0]
    assert set(row) >= SEED_FIELDS
    assert row["ok"] is True and row["text"] == "苹果"


# -- 2. silent fresh starts ----------------------------------------------------------


def _fresh(ctx: dict[str, Any], old_sid: str) -> None:
    assert ctx["_sessions"]["取词"] != old_sid
    assert ctx["_resumed"] == {"取词": False}
    assert ctx["取词"] == "苹果"


def test_copied_workspace_starts_fresh(
    seeded: FakeMessagesAPI, in_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = asyncio.run(run_seed_example())["_sessions"]["取词"]
    copy = in_tmp.parent / f"{in_tmp.name}-copy"
    shutil.copytree(in_tmp, copy)
    monkeypatch.chdir(copy)
    ctx = asyncio.run(run_seed_example())
    _fresh(ctx, old)
    assert ctx["_woke"] == 1
    assert lineage_file()["workspace"] == os.path.realpath(copy)


def test_deleted_sessions_db_starts_fresh(seeded: FakeMessagesAPI, in_tmp: Path) -> None:
    old = asyncio.run(run_seed_example())["_sessions"]["取词"]
    for path in Path("runs").glob("sessions.db*"):
        path.unlink()
    assert wake_state(".", run_dir="runs")["waking"] is False
    ctx = asyncio.run(run_seed_example())
    _fresh(ctx, old)
    assert lineage_file()["steps"] == {"取词": ctx["_sessions"]["取词"]}


@pytest.mark.parametrize("garbage", ['{"workspace": ', "[1, 2]", "\x00\x01", ""])
def test_corrupt_lineage_starts_fresh(seeded: FakeMessagesAPI, garbage: str) -> None:
    old = asyncio.run(run_seed_example())["_sessions"]["取词"]
    Path("runs/lineage.json").write_text(garbage)
    ctx = asyncio.run(run_seed_example())
    _fresh(ctx, old)
    assert ctx["_woke"] == 1


def test_continuous_false_starts_fresh_every_time(seeded: FakeMessagesAPI) -> None:
    a = asyncio.run(run_seed_example(continuous=False))
    b = asyncio.run(run_seed_example(continuous=False))
    assert a["_woke"] == b["_woke"] == 1
    assert a["_sessions"]["取词"] != b["_sessions"]["取词"]
    assert not Path("runs/lineage.json").exists()
    # an explicit resume_from still works without lineage
    from flower.runtime.engine import Runtime

    rt = Runtime(workspace=".", run_dir="runs")
    try:
        wf = Workflow([Step("取词", terse, PROMPT, resume_prompt=RESUME)], continuous=False)
        c = asyncio.run(wf.run(rt, resume_from=a))
    finally:
        rt.close()
    assert c["_sessions"]["取词"] == a["_sessions"]["取词"]


# -- 3. kill -9 inside the first step ------------------------------------------------

_CHILD = textwrap.dedent(
    f"""
    import asyncio
    from flower import AgentSpec, Runtime, Step, Workflow

    terse = AgentSpec(name="terse", instructions="x", allowed_tools=["Read", "Glob"],
                      max_turns=4)

    async def main():
        wf = Workflow([Step("取词", terse, {PROMPT!r}, resume_prompt={RESUME!r}),
                       Step("第二步", terse, "second")])
        rt = Runtime(workspace=".", run_dir="runs")
        await wf.run(rt)

    asyncio.run(main())
    """
)


def _wait_for(predicate: Any, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.02)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGHUP])
def test_killed_inside_first_step_then_rerun_resumes(
    seeded: FakeMessagesAPI, in_tmp: Path, sig: signal.Signals
) -> None:
    seeded.set_script([stall(60)])  # the first API call never answers
    child = subprocess.Popen([sys.executable, "-c", _CHILD], cwd=in_tmp)
    try:
        _wait_for(lambda: len(seeded.requests) >= 1)
        # on_session wrote lineage before the first API call: no step boundary reached
        sid = lineage_file()["steps"]["取词"]
        child.send_signal(sig)
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == -sig
    assert not read_manifest("runs")  # it died before any step ended

    seeded.set_script(read_seed_word)
    before = len(seeded.requests)
    ctx = asyncio.run(run_seed_example())
    assert ctx["_sessions"]["取词"] == sid
    assert ctx["_resumed"]["取词"] is True
    assert ctx["_woke"] == 2
    prompts = user_prompts(seeded.requests[before])
    assert prompts[0] == PROMPT and prompts[-1] == RESUME


# -- 4. the judge is always a fresh session ------------------------------------------

GOALS = "# 目标\n\n1. 有 hello.py\n2. 有 README.md\n"
WORKER = AgentSpec(name="worker", instructions="你是执行者。", allowed_tools=["Read"], max_turns=4)


def judged_work(verdicts: list[str]) -> Any:
    queue = list(verdicts)

    def handle(req: RecordedRequest) -> Any:
        if "验收人" in system_text(req):
            return text(queue.pop(0))
        return text("做完了")

    return handle


async def run_judged(rounds: int = 3) -> tuple[dict[str, Any], list[tuple[str, Any]]]:
    """Run 干活 under the goal gate; also note what on_session was for each rt.run."""
    from flower.runtime.engine import Runtime

    rt = Runtime(workspace=".", run_dir="runs")
    hooks: list[tuple[str, Any]] = []
    real_run = rt.run

    async def spying_run(agent: AgentSpec, prompt: str, resume: Any = None, **kw: Any) -> Any:
        hooks.append((kw.get("step"), rt.on_session, resume))
        return await real_run(agent, prompt, resume=resume, **kw)

    rt.run = spying_run  # type: ignore[method-assign]
    step = with_goal(Step("干活", WORKER, "做", resume_prompt="接着做"), rounds=rounds)
    try:
        return await Workflow([step]).run(rt), hooks
    finally:
        rt.close()


def test_judge_is_a_fresh_session_every_round_and_every_wake(
    in_tmp: Path, fake: FakeMessagesAPI
) -> None:
    (in_tmp / "目标.md").write_text(GOALS, encoding="utf-8")
    fake.set_script(judged_work(["1. 达成 — 有\n2. 未达成 — 缺 README.md", "1. 达成\n2. 达成"]))
    ctx, hooks = asyncio.run(run_judged())
    rows = read_manifest("runs")
    assert [r["step"] for r in rows] == ["干活", "干活·判定#1", "干活#round2", "干活·判定#2"]
    worker_sid = ctx["_sessions"]["干活"]
    judge_sids = [r["session_id"] for r in rows if "判定" in r["step"]]
    assert len(set(judge_sids)) == 2 and worker_sid not in judge_sids
    assert rows[2]["session_id"] == worker_sid  # sent back into the same conversation
    assert lineage_file()["steps"] == {"干活": worker_sid}
    assert ctx["_goal_met"] is True
    # the hook was off and nothing resumed while the judge ran
    for label, hook, resume in hooks:
        if "判定" in label:
            assert hook is None and resume is None
        else:
            assert hook is not None
    judge_requests = [r for r in fake.requests if "验收人" in system_text(r)]
    assert all(len(user_prompts(r)) == 1 for r in judge_requests)
    send_back = [r for r in fake.requests if "缺 README.md" in last_user_text(r)]
    assert len(send_back) == 1 and "验收人" not in system_text(send_back[0])

    # next wake: the worker resumes, the judge is new eyes again
    fake.set_script(judged_work(["1. 达成\n2. 达成"]))
    before = len(fake.requests)
    ctx2, _ = asyncio.run(run_judged())
    rows2 = [r for r in read_manifest("runs") if r["step"] == "干活·判定#1"]
    assert ctx2["_sessions"]["干活"] == worker_sid
    assert rows2[-1]["session_id"] not in judge_sids
    new_judge = [r for r in fake.requests[before:] if "验收人" in system_text(r)]
    assert len(new_judge) == 1 and len(user_prompts(new_judge[0])) == 1
    assert lineage_file()["steps"] == {"干活": worker_sid}


def test_rounds_limit_and_unmet_verdict(in_tmp: Path, fake: FakeMessagesAPI) -> None:
    (in_tmp / "目标.md").write_text(GOALS, encoding="utf-8")
    fake.set_script(judged_work(["1. 未达成 — 没有\n2. 达成"] * 2))
    ctx, _ = asyncio.run(run_judged(rounds=2))
    steps = [r["step"] for r in read_manifest("runs")]
    assert steps == ["干活", "干活·判定#1", "干活#round2", "干活·判定#2"]
    assert ctx["_goal_met"] is False
    assert ctx["_verdicts"]["干活"].met == [False, True]


# -- 5. several processes, one directory ---------------------------------------------

_PARALLEL = textwrap.dedent(
    """
    import asyncio, sys
    from flower import AgentSpec, Runtime, Step, Workflow
    from flower.core.manifest import run_id

    a = AgentSpec(name="a", instructions="x", max_turns=2)
    tag = sys.argv[1]

    async def main():
        wf = Workflow([Step(f"{tag}{i}", a, "go") for i in range(6)], continuous=False)
        rt = Runtime(workspace=".", run_dir="runs")
        try:
            await wf.run(rt)
        finally:
            rt.close()
        print(run_id())

    asyncio.run(main())
    """
)


def test_two_processes_on_one_directory_keep_both_manifests(
    in_tmp: Path, fake: FakeMessagesAPI
) -> None:
    fake.set_script(lambda req: text("ok", delay=0.01))
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _PARALLEL, tag], cwd=in_tmp, stdout=subprocess.PIPE, text=True
        )
        for tag in ("p", "q")
    ]
    runs = [p.communicate(timeout=120)[0].strip() for p in procs]
    assert [p.returncode for p in procs] == [0, 0]
    rows = read_manifest("runs")
    assert len(rows) == 12
    for tag, run in zip(("p", "q"), runs, strict=True):
        assert [r["step"] for r in rows if r["run"] == run] == [f"{tag}{i}" for i in range(6)]


# -- 6. relay ------------------------------------------------------------------------


def test_relay_at_threshold_seeds_a_new_session_from_the_handoff(
    in_tmp: Path, fake: FakeMessagesAPI
) -> None:
    from flower.runtime.engine import Runtime

    settings = Settings(relay=RelayConfig(threshold_tokens=1000))

    async def wake() -> dict[str, Any]:
        rt = Runtime(workspace=".", run_dir="runs", settings=settings)
        try:
            return await Workflow([Step("干活", WORKER, "做", resume_prompt="接着做")]).run(rt)
        finally:
            rt.close()

    fake.set_script([text("做了一半", usage={"input_tokens": 900})])
    old = asyncio.run(wake())["_sessions"]["干活"]
    fake.set_script([text("还差一点", usage={"input_tokens": 1500})])
    assert asyncio.run(wake())["_sessions"]["干活"] == old  # under the threshold: no relay

    fake.set_script([text("## 进度\n做到第三步,卡在编码问题"), text("继续中")])
    before = len(fake.requests)
    ctx = asyncio.run(wake())
    handoff_req, seeded_req = fake.requests[before:]
    assert last_user_text(handoff_req) == _(prompts.HANDOFF_PROMPT)
    assert len(user_prompts(handoff_req)) > 1  # asked in the old conversation
    new = ctx["_sessions"]["干活"]
    assert new != old
    docs = list((in_tmp / "notes" / "relay").glob("*-干活.md"))
    assert len(docs) == 1 and "做到第三步,卡在编码问题" in docs[0].read_text(encoding="utf-8")
    (only,) = user_prompts(seeded_req)  # a new conversation, seeded with the document
    assert "做到第三步,卡在编码问题" in only and only.rstrip().endswith("接着做")
    assert lineage_file()["steps"] == {"干活": new}
    row = read_manifest("runs")[-1]
    assert row["session_id"] == new and row["retired"] == [old]
    assert ctx["_relays"][0]["from"] == old
