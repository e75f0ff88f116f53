"""flower's own errors and warnings in the language of the run: a step that fails, a
missing key, a refused credential, a configuration mistake, a warning, the retry line.
What stays data (``errors[].kind``, ``flower doctor --json``) is the same in both."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
from two_languages import BRIEF, FILES, REQUEST
from typer.testing import CliRunner, Result

from flower.cli.main import build_app
from flower.core.config import ResilienceConfig
from flower.core.i18n import language
from flower.core.manifest import read_manifest
from flower.core.resilience import AttemptInfo, GaveUpError, Resilience
from flower.runtime.engine import OrphanWarning, Runtime
from flower.runtime.spec import AgentSpec
from flower.testing.fake_api import (
    FakeMessagesAPI,
    RecordedRequest,
    ended_early,
    reply,
    text,
    tool_use,
    unauthorized,
)
from flower.workflow.builtin import builtin_workflow
from flower.workflow.documents import read_goals
from flower_plugins.probes import NoProber

LANGUAGES = ["en", "zh_CN"]

NO_KEY = {
    "en": "flower: error: no API key: set ANTHROPIC_API_KEY (for example",
    "zh_CN": "flower: error: 没有 API 密钥:请设置 ANTHROPIC_API_KEY(例如",
}
NOT_CONFIRMED = {
    "en": "the brief was not confirmed after 6 exchanges",
    "zh_CN": "来回 6 次后需求仍未确认",
}
NO_GOALS = {
    "en": "the goal-setting step gave no numbered goals",
    "zh_CN": "设定目标这一步没有给出带编号的目标",
}
GOALS_FROM_BRIEF = {
    "en": "   -> no numbered goals from the model: {file} takes 2 goals from the brief's"
    ' "What to do"; on to the work',
    "zh_CN": "   -> 模型没有给出编号的目标:{file} 从需求的「要做什么」取了 2 条,接着干活",
}
BRIEF_WHAT = {"en": "a script", "zh_CN": "脚本"}
NO_GOAL_IN_FILE = {
    "en": "lists no numbered goal; deriving it again",
    "zh_CN": "里没有带编号的目标;重新设定",
}
UNAUTHORIZED = {
    "en": "the API rejected the credentials (401: ",
    "zh_CN": "API 拒绝了凭据(401:",
}
CUT_STREAM = {
    "en": "connection closed before the response was complete (no message_stop)",
    "zh_CN": "响应还没完整连接就断开了(没有 message_stop)",
}
MAX_TURNS = {
    "en": "stopped at max_turns=1 before the agent finished",
    "zh_CN": "到了 max_turns=1,智能体还没做完就停了",
}
KILLED = {
    "en": "killed 2 commands a killed flower left running: 'npm run dev'; 'sleep 300'",
    "zh_CN": "结束了 2 个被强行终止的 flower 留下还在运行的命令:'npm run dev'; 'sleep 300'",
}
UNKNOWN_POLICY = {
    "en": "[tool.flower.pruning] policies: no plugin provides 'nope'; available: ",
    "zh_CN": "[tool.flower.pruning] policies:没有插件提供修剪策略 'nope';可用的:",
}
TWICE = {
    "en": "[tool.flower.pruning] policies: 'denials' listed twice; each policy runs once, "
    "where it is listed",
    "zh_CN": "[tool.flower.pruning] policies:'denials' 列了两次;"
    "每个修剪策略只在它列出的位置运行一次",
}
OPTIONS_OF_BUILTIN = {
    "en": "[tool.flower.pruning.options.denials]: the built-in policy 'denials' takes no "
    "options table; set [tool.flower.pruning] keep_denials",
    "zh_CN": "[tool.flower.pruning.options.denials]:内置修剪策略 'denials' 不接受选项表;"
    "请设置 [tool.flower.pruning] keep_denials",
}
RETRY = {"en": "API error (transient): ", "zh_CN": "API 错误(暂时性):"}
GAVE_UP = {"en": "last error (transient): ", "zh_CN": "最后的错误(暂时性):"}


def flower(lang: str, *args: str, **env: str) -> Result:
    """``flower ARGS`` in-process, in ``lang`` (FLOWER_LANG, as a user sets it)."""
    return CliRunner().invoke(build_app(), list(args), env={"FLOWER_LANG": lang, **env})


class Model:
    """The clarifier, goal setter, worker and judge of one language, told apart by their
    instructions; ``answers`` replaces what some of them say."""

    def __init__(self, lang: str, **answers: str) -> None:
        from flower.workflow.builtin import worker_agent
        from flower.workflow.clarify import clarifier, goal_setter
        from flower.workflow.goal import judge_agent

        with language(lang):
            agents = {
                "clarifier": clarifier(),
                "goal_setter": goal_setter(),
                "worker": worker_agent(),
                "judge": judge_agent(),
            }
        said = {"clarifier": BRIEF[lang], "goal_setter": "1. it runs", "worker": "done"}
        said |= {"judge": "1. met", **answers}
        self.answers = {agents[role].instructions: said[role] for role in agents}

    def __call__(self, req: RecordedRequest) -> Any:
        system = req.body.get("system")
        if not isinstance(system, str):
            system = "".join(b.get("text", "") for b in system or [] if isinstance(b, dict))
        return text(self.answers[system])


def _wake(lang: str, said: str | None, **options: Any) -> dict[str, Any]:
    with language(lang):
        rt = Runtime(workspace=".", run_dir="runs")
        try:
            workflow = builtin_workflow(said, settings=rt.settings, **options)
            ctx: dict[str, Any] = asyncio.run(workflow.run(rt))
        finally:
            rt.close()
    return ctx


@pytest.mark.parametrize("lang", LANGUAGES)
def test_no_api_key(in_tmp: Path, monkeypatch: pytest.MonkeyPatch, lang: str) -> None:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    done = flower(lang, REQUEST[lang])
    assert done.exit_code == 1
    assert NO_KEY[lang] in done.output
    assert "`flower demo`" in done.output  # the command is named as it is typed


@pytest.mark.parametrize("lang", LANGUAGES)
def test_a_brief_never_confirmed(in_tmp: Path, fake: FakeMessagesAPI, lang: str) -> None:
    fake.set_script(Model(lang, clarifier="one file or a folder?"))  # never a brief
    ctx = _wake(lang, REQUEST[lang], request_as_brief=lambda request: False)
    assert not ctx["_ok"]
    (record,) = [r for r in read_manifest("runs") if not r["ok"]]
    assert record["error"] == NOT_CONFIRMED[lang]
    # the step key is the run's language's: an English run writes no Chinese
    assert record["step"] == {"en": "confirm the brief", "zh_CN": "确认需求"}[lang]


@pytest.mark.parametrize("lang", LANGUAGES)
def test_a_goals_file_without_goals_then_no_numbered_goals(
    in_tmp: Path, fake: FakeMessagesAPI, lang: str
) -> None:
    """As a run shows them: the warning on stderr, then the goals the run goes on with
    (taken from the brief: the model gave none; issue 29 item 1)."""
    brief, goals = FILES[lang]
    (in_tmp / brief).write_text(BRIEF[lang], encoding="utf-8")
    (in_tmp / goals).write_text("# Goals\n\nsomething, some day\n", encoding="utf-8")
    # never a numbered list; the judge finds both goals it falls back on met
    fake.set_script(Model(lang, goal_setter="make it good", judge="1. met\n2. met"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLOWER_")}
    env |= {"FLOWER_LANG": lang, "FLOWER_PROBE_STRATEGY": "none"}
    done = subprocess.run(
        [sys.executable, "-m", "flower.cli.main", "--yes", REQUEST[lang]],
        env=env,
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert done.returncode == 0, done.stderr
    warning = f"flower: warning: {in_tmp / goals} {NO_GOAL_IN_FILE[lang]}"
    assert warning in done.stderr.splitlines()
    assert GOALS_FROM_BRIEF[lang].format(file=goals) in done.stdout.splitlines()
    # what to do, then what was said, added to the brief
    assert read_goals(in_tmp / goals) == [BRIEF_WHAT[lang], REQUEST[lang]]
    assert all(r["ok"] for r in read_manifest(in_tmp / "runs"))


@pytest.mark.parametrize("lang", LANGUAGES)
def test_no_numbered_goals_and_no_fallback(in_tmp: Path, fake: FakeMessagesAPI, lang: str) -> None:
    """Without a goals fallback (the Python API's default) the step fails, saying why."""
    brief, _goals = FILES[lang]
    (in_tmp / brief).write_text(BRIEF[lang], encoding="utf-8")
    fake.set_script(Model(lang, goal_setter="make it good"))  # never a numbered list
    ctx = _wake(lang, None)
    assert not ctx["_ok"]
    failed = [(r["step"], r["error"]) for r in read_manifest(in_tmp / "runs") if not r["ok"]]
    key = {"en": "set goals", "zh_CN": "设定目标"}[lang]
    assert failed == [(key, NO_GOALS[lang])]  # the manifest says what the screen said


@pytest.mark.parametrize("lang", LANGUAGES)
def test_refused_credentials(in_tmp: Path, fake: FakeMessagesAPI, lang: str) -> None:
    fake.add(unauthorized())
    with language(lang):
        rt = Runtime(workspace=".", run_dir="runs")
        result = asyncio.run(rt.run(AgentSpec("x", ""), "hi"))
        rt.close()
    assert not result.ok and result.error is not None
    assert result.error.startswith(UNAUTHORIZED[lang])
    assert result.error.endswith("ANTHROPIC_API_KEY")
    assert [e["kind"] for e in result.errors] == ["fatal"]  # data, in every language


@pytest.mark.parametrize("lang", LANGUAGES)
def test_a_cut_stream(in_tmp: Path, fake: FakeMessagesAPI, lang: str) -> None:
    fake.add(ended_early("an answer that is cut", after=2))
    with language(lang):
        rt = Runtime(workspace=".", run_dir="runs")
        result = asyncio.run(rt.run(AgentSpec("x", ""), "hi"))
        stored = rt.store.load(rt.key(result.session_id or ""))
        rt.close()
    assert not result.ok and result.error is not None
    assert [e["text"] for e in result.errors] == [CUT_STREAM[lang]]
    assert CUT_STREAM[lang] in result.error
    shown = [e for e in stored or [] if e.get("isApiErrorMessage")]
    assert len(shown) == 1 and CUT_STREAM[lang] in json.dumps(shown, ensure_ascii=False)


@pytest.mark.parametrize("lang", LANGUAGES)
def test_max_turns(in_tmp: Path, fake: FakeMessagesAPI, lang: str) -> None:
    (in_tmp / "seed.txt").write_text("apple\n", encoding="utf-8")
    fake.add(reply(tool_use("Read", {"file_path": str(in_tmp / "seed.txt")})))
    agent = AgentSpec("x", "", allowed_tools=["Read"], max_turns=1)
    with language(lang):
        rt = Runtime(workspace=".", run_dir="runs")
        result = asyncio.run(rt.run(agent, "read it"))
        rt.close()
    assert not result.ok and result.stop == "max_turns"
    assert result.error == MAX_TURNS[lang]


@pytest.mark.parametrize("lang", LANGUAGES)
def test_killed_commands_warning(in_tmp: Path, monkeypatch: pytest.MonkeyPatch, lang: str) -> None:
    from flower.runtime.tools import orphans

    monkeypatch.setattr(orphans, "reap", lambda ledger: ["npm run dev", "sleep 300"])
    with language(lang):
        rt = Runtime(workspace=".", run_dir="runs")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", OrphanWarning)
            rt._reap_orphans()
        rt.close()
    assert [str(w.message) for w in caught] == [KILLED[lang]]


PRUNING_MISTAKES = {
    "unknown": ('policies = ["nope"]', UNKNOWN_POLICY),
    "twice": ('policies = ["denials", "denials"]', TWICE),
    "builtin options": ("[tool.flower.pruning.options.denials]\nkeep = 2", OPTIONS_OF_BUILTIN),
}


@pytest.mark.parametrize("mistake", sorted(PRUNING_MISTAKES))
def test_pruning_configuration_errors(in_tmp: Path, mistake: str) -> None:
    table, expected = PRUNING_MISTAKES[mistake]
    (in_tmp / "pyproject.toml").write_text(f"[tool.flower.pruning]\n{table}\n", encoding="utf-8")
    env = {"FLOWER_PROBE_STRATEGY": "none", "ANTHROPIC_API_KEY": "sk-test"}
    for lang in LANGUAGES:
        status = flower(lang, "status")
        assert status.exit_code == 2, status.output
        assert expected[lang] in status.output
        doctor = flower(lang, "doctor", **env)
        pruning = [line for line in doctor.output.splitlines() if expected[lang] in line]
        assert doctor.exit_code == 1 and len(pruning) == 1, doctor.output
    as_json = [flower(lang, "doctor", "--json", **env).stdout for lang in LANGUAGES]
    assert as_json[0] == as_json[1]  # data: English in every language
    checks = {c["name"]: c["detail"] for c in json.loads(as_json[1])["checks"]}
    assert expected["en"] in checks["pruning"]


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_error_kind_in_the_retry_and_give_up_lines(lang: str) -> None:
    said: list[str] = []

    async def no_wait(seconds: float) -> None:
        return None

    async def cut(info: AttemptInfo) -> str:
        raise TimeoutError("timed out")

    config = ResilienceConfig(max_attempts=2, base_delay=0.01, max_delay=0.01)
    resilience = Resilience(config, prober=NoProber(), sleep=no_wait, on_status=said.append)
    with language(lang), pytest.raises(GaveUpError) as gave_up:
        asyncio.run(resilience.run(cut))
    assert len(said) == 1 and said[0].startswith(RETRY[lang])
    assert GAVE_UP[lang] in str(gave_up.value)
    assert [e.kind for e in gave_up.value.errors] == ["transient", "transient"]
