"""Steps are shown by their names in the chosen language (``work`` for the key ``干活``)
wherever a user reads them, and typed by either; lineage keeps the keys."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from flower.cli.main import build_app
from flower.core.i18n import language
from flower.core.keys import project_key
from flower.core.labels import step_named
from flower.core.records import SessionKey
from flower.demo.play import lineage_line
from flower.stores.open import open_session_store

STEPS = {"确认需求": "gone-1", "设定目标": "goals-1", "干活": "work-1", "fetch": "gone-2"}
"""A lineage in the seed's shape, with another workflow's step and two lost sessions."""


def flower(lang: str, *args: str, **env: str) -> Result:
    return CliRunner().invoke(build_app(), list(args), env={"FLOWER_LANG": lang, **env})


def _user(session: str, uuid: str, parent: str | None, text: str) -> dict[str, object]:
    return {
        "type": "user",
        "uuid": uuid,
        "parentUuid": parent,
        "sessionId": session,
        "timestamp": "2026-01-01T00:00:00Z",
        "message": {"role": "user", "content": text},
    }


def _reply(session: str, uuid: str, parent: str) -> dict[str, object]:
    return {
        "type": "assistant",
        "uuid": uuid,
        "parentUuid": parent,
        "sessionId": session,
        "message": {"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
    }


@pytest.fixture
def worked(in_tmp: Path) -> Path:
    """Woken twice; the goals and work sessions are in the store (the work one with two
    user turns), the brief's and another workflow's are gone."""
    ws = in_tmp.resolve()
    runs = ws / "runs"
    runs.mkdir(mode=0o700)
    lineage = runs / "lineage.json"
    lineage.write_text(
        json.dumps({"workspace": str(ws), "woke": 2, "steps": STEPS}), encoding="utf-8"
    )
    lineage.chmod(0o600)
    with open_session_store(f"sqlite:///{runs / 'sessions.db'}") as store:
        for sid in ("goals-1", "work-1"):
            entries = [
                _user(sid, f"{sid}-u1", None, "make it"),
                _reply(sid, f"{sid}-a1", f"{sid}-u1"),
            ]
            if sid == "work-1":
                entries.append(_user(sid, "work-1-u2", "work-1-a1", "and faster"))
            store.append(SessionKey(project_key(ws), sid), entries)
    return ws


def _recorded(ws: Path) -> dict[str, str]:
    steps = json.loads((ws / "runs" / "lineage.json").read_text(encoding="utf-8"))["steps"]
    assert isinstance(steps, dict)
    return steps


def test_status_shows_the_steps_by_name(worked: Path) -> None:
    en = flower("en", "status")
    zh = flower("zh_CN", "status")
    assert en.exit_code == zh.exit_code == 0
    en_lines = en.stdout.splitlines()
    assert en_lines[2] == (
        "fresh       the sessions of confirm the brief, fetch are gone from the store: the next "
        "run sets lineage aside into notes/archive/ (`flower adopt` takes it back once they are "
        "restored)"
    )
    assert [line for line in en_lines if line.startswith(("step", "other", "next"))] == [
        "step        confirm the brief: gone-1 (gone from the store: starts fresh)",
        "step        set goals: goals-1 (in the store)",
        "step        work: work-1 (in the store)",
        "step        fetch: gone-2 (gone from the store: starts fresh)",
        "other       fetch: another workflow's steps (its Python code resumes them; `flower` "
        "runs the built-in workflow)",
        "next        `flower` resumes set goals, work (wake 3)",
    ]
    zh_lines = zh.stdout.splitlines()
    assert zh_lines[2].startswith("从头开始    确认需求、fetch的会话已不在存储里")
    assert [line for line in zh_lines if line.startswith(("步骤", "其他", "下一步"))] == [
        "步骤        确认需求:gone-1(已不在存储里:从头开始)",
        "步骤        设定目标:goals-1(在存储里)",
        "步骤        干活:work-1(在存储里)",
        "步骤        fetch:gone-2(已不在存储里:从头开始)",
        "其他        fetch:另一个工作流的步骤(由它的 Python 代码接着做;"
        "`flower` 运行的是内置工作流)",
        "下一步      `flower` 接着做 设定目标、干活(第 3 次唤醒)",
    ]


def test_rewind_list_takes_the_step_by_its_shown_name_or_its_key(worked: Path) -> None:
    by_name = flower("en", "rewind", "--list", "--step", "work")
    by_key = flower("en", "rewind", "--list", "--step", "干活")
    assert by_name.exit_code == by_key.exit_code == 0, by_name.output
    assert by_name.stdout == by_key.stdout
    assert by_name.stdout.splitlines()[0] == "work: session work-1, 2 user turns"
    goals = flower("en", "rewind", "--list", "--step", "set goals", "--json")
    assert goals.exit_code == 0, goals.output
    assert json.loads(goals.stdout)["step"] == "设定目标"  # the key, as scripts read it
    zh = flower("zh_CN", "rewind", "--list", "--step", "干活")
    assert zh.stdout.splitlines()[0] == "干活:会话 work-1,2 轮用户发言"
    # a name shown in another language names the step too: a script written in English
    # works under a Chinese locale
    assert flower("zh_CN", "rewind", "--list", "--step", "work").stdout == zh.stdout


def test_rewind_of_a_step_named_as_shown_keeps_the_key_in_lineage(worked: Path) -> None:
    done = flower("en", "rewind", "--step", "work")
    assert done.exit_code == 0, done.output
    assert done.stdout.startswith("rewound work 1 turn: now session ")
    after = _recorded(worked)
    assert list(after) == list(STEPS)  # no step named `work` appeared
    assert after["干活"] != "work-1"
    assert {k: v for k, v in after.items() if k != "干活"} == {
        k: v for k, v in STEPS.items() if k != "干活"
    }


def test_rewind_of_an_unknown_step_lists_the_steps_as_shown(worked: Path) -> None:
    en = flower("en", "rewind", "--step", "nope")
    zh = flower("zh_CN", "rewind", "--list", "--step", "nope")
    assert en.exit_code == zh.exit_code == 2
    assert en.stderr == (
        "flower: error: lineage has no step 'nope'; its steps: "
        "confirm the brief, set goals, work, fetch\n"
    )
    assert zh.stderr == (
        "flower: error: 谱系里没有步骤 'nope';已有的步骤:确认需求、设定目标、干活、fetch\n"
    )
    assert _recorded(worked) == STEPS


def test_a_key_wins_over_another_steps_shown_name() -> None:
    assert step_named("work", ["干活", "work"]) == "work"
    assert step_named("work", ["干活"]) == "干活"
    assert step_named("confirm the brief", ["确认需求"]) == "确认需求"
    assert step_named("Work", ["干活"]) is None


def test_config_shows_the_step_keys_and_how_they_are_shown(in_tmp: Path) -> None:
    en = [line for line in flower("en", "config").stdout.splitlines() if "_step " in line]
    zh = [line for line in flower("zh_CN", "config").stdout.splitlines() if "_step " in line]
    assert [" ".join(line.split()) for line in en] == [
        "workflow.clarify_step = confirm the brief # default: English",
        "workflow.goals_step = set goals # default: English",
        "workflow.work_step = work # default: English",
    ]
    assert [" ".join(line.split()) for line in zh] == [
        "workflow.clarify_step = 确认需求 # 默认:中文",
        "workflow.goals_step = 设定目标 # 默认:中文",
        "workflow.work_step = 干活 # 默认:中文",
    ]
    own = flower("en", "config", FLOWER_WORKFLOW_WORK_STEP="build").stdout.splitlines()
    assert [" ".join(line.split()) for line in own if "work_step" in line] == [
        "workflow.work_step = build # env FLOWER_WORKFLOW_WORK_STEP"
    ]


def test_config_names_the_keys_lineage_holds_in_another_language(worked: Path) -> None:
    en = [line for line in flower("en", "config").stdout.splitlines() if "_step " in line]
    assert [" ".join(line.split()) for line in en] == [
        "workflow.clarify_step = 确认需求 # default: found in lineage; shown as confirm the brief",
        "workflow.goals_step = 设定目标 # default: found in lineage; shown as set goals",
        "workflow.work_step = 干活 # default: found in lineage; shown as work",
    ]


def test_the_demo_names_lineages_key_and_says_how_it_is_shown() -> None:
    with language("en"):
        assert lineage_line("s-1") == "   runs/lineage.json  work -> s-1"
        assert lineage_line("s-1", "干活") == (
            "   runs/lineage.json  干活 -> s-1  (work: the file keeps the key it was written with)"
        )
    with language("zh_CN"):
        assert lineage_line("s-1") == "   runs/lineage.json  干活 -> s-1"


def test_the_python_api_keeps_a_key_lineage_holds_in_another_language(in_tmp: Path) -> None:
    from flower.core.config import load_settings
    from flower.workflow.builtin import builtin_workflow

    ws = in_tmp.resolve()
    (ws / "runs").mkdir(mode=0o700)
    record = {"workspace": str(ws), "woke": 1, "steps": {"干活": "work-1"}}
    (ws / "runs" / "lineage.json").write_text(json.dumps(record), encoding="utf-8")
    with language("en"):
        workflow = builtin_workflow(settings=load_settings().settings)
        fresh = builtin_workflow()  # no settings: the keys of the wake's language
    # the step lineage names keeps its key; the others get the English run's
    assert [step.name for step in workflow.steps] == ["confirm the brief", "set goals", "干活"]
    assert [step.name for step in fresh.steps] == ["confirm the brief", "set goals", "work"]
