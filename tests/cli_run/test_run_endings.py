"""How a run ends, through the real console script (issue 29 item 4): its exit code and
last line when goals are left unmet, and the session its closing line names."""

from __future__ import annotations

import json
from pathlib import Path

from cli_run_helpers import REQUEST, Flower, ScriptedModel, lineage

from flower.testing.fake_api import RecordedRequest, Reply, reply, server_error
from flower.workflow.clarify import goal_setter
from flower.workflow.goal import judge_agent
from flower.workflow.outcome import GOALS_NOT_MET_EXIT

UNMET = "1. 达成\n2. 未达成 — 没跑\n3. 达成"


def test_goals_left_unmet_exit_with_their_own_code_and_say_how_many_were_met(
    flower: Flower, model: ScriptedModel, ws: Path
) -> None:
    model.override(judge_agent().instructions, lambda req: reply(UNMET))
    done = flower("--yes", "--rounds", "2", REQUEST)
    assert done.returncode == GOALS_NOT_MET_EXIT == 4, done.stderr
    last = done.stdout.splitlines()[-1]
    assert last == "   3 个目标达成了 2 个:在这里再跑 `flower` 会接着做剩下的"
    # not an error's code: every step ran, and the next `flower` goes on
    assert "失败" not in done.stdout

    status = flower("status")
    assert "验收        3 个目标达成了 2 个(第 1 次唤醒)" in status.stdout.splitlines()
    verdict = json.loads(flower("status", "--json").stdout)["checks"]["verdict"]
    assert verdict == {"step": "干活", "goals": 3, "met": 2, "woke": 1}

    as_json = flower("--yes", "--rounds", "1", "--json")
    assert as_json.returncode == GOALS_NOT_MET_EXIT, as_json.stderr
    out = json.loads(as_json.stdout)
    assert out["ok"] is True and out["goal_met"] is False


def test_all_goals_met_still_exits_0(flower: Flower, ws: Path) -> None:
    done = flower("--yes", REQUEST)
    assert done.returncode == 0, done.stderr
    assert "目标达成了" not in done.stdout


def test_the_closing_line_names_the_session_of_the_step_that_failed(
    flower: Flower, model: ScriptedModel, ws: Path
) -> None:
    def broken(req: RecordedRequest) -> Reply:
        if len(req.messages) > 1:  # its first request is answered, the next fails
            return server_error()  # type: ignore[return-value]
        return reply("先看看需求。", tool_use_read())

    model.override(goal_setter().instructions, broken)
    done = flower("--yes", REQUEST)
    assert done.returncode == 1, done.stderr
    steps = lineage(ws)["steps"]
    assert set(steps) == {"确认需求", "设定目标"}
    assert "!! 设定目标 失败" in done.stdout
    last = [line for line in done.stdout.splitlines() if "flower sessions show" in line]
    assert last and last[-1].endswith(f"flower sessions show {steps['设定目标']}")
    assert steps["确认需求"] not in done.stdout


def tool_use_read() -> dict[str, object]:
    from flower.testing.fake_api import tool_use

    return tool_use("Read", {"file_path": "需求.md"})


def test_status_names_the_steps_in_run_order_and_the_words_not_heard_yet(
    flower: Flower, model: ScriptedModel, ws: Path
) -> None:
    assert flower("--yes", REQUEST).returncode == 0
    model.override(goal_setter().instructions, lambda req: server_error())  # type: ignore[arg-type,return-value]
    cut = flower("--yes", "顺便支持代码块高亮")
    assert cut.returncode == 1, cut.stdout  # the goals were not derived again: not heard
    record = lineage(ws)
    # lineage lists its steps in the order they were recorded, which need not be the
    # order a wake runs them (a step set aside and recorded again goes last)
    record["steps"] = dict(reversed(record["steps"].items()))
    (ws / "runs" / "lineage.json").write_text(json.dumps(record, ensure_ascii=False))

    status = flower("status")
    assert status.returncode == 0, status.stderr
    lines = status.stdout.splitlines()
    said = "说过        顺便支持代码块高亮(干活 还没听到:下次 `flower` 会转给它)"
    assert said in lines
    steps = [line.split()[1].split(":")[0] for line in lines if line.startswith("步骤 ")]
    assert steps == ["确认需求", "设定目标", "干活"]
    assert lines[-1] == "下一步      `flower` 接着做 设定目标、干活(第 3 次唤醒)"
    assert json.loads(flower("status", "--json").stdout)["checks"]["unheard"] == [
        "顺便支持代码块高亮"
    ]


def test_a_judge_that_gave_no_verdict_is_no_success(
    flower: Flower, model: ScriptedModel, ws: Path
) -> None:
    model.override(judge_agent().instructions, lambda req: server_error())  # type: ignore[arg-type,return-value]
    done = flower("--yes", REQUEST)
    assert done.returncode == GOALS_NOT_MET_EXIT, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1] == "   验收人没有给出结论:在这里再跑 `flower` 会接着做"
    verdict = json.loads(flower("status", "--json").stdout)["checks"]["verdict"]
    assert verdict == {"step": "干活", "goals": 3, "met": None, "woke": 1}
    assert "验收        验收人没有给出结论(第 1 次唤醒)" in flower("status").stdout.splitlines()
