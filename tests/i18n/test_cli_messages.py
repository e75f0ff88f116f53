"""The CLI's own output beyond the banner (retention, rewind, adopt, doctor, config,
routing, errors, the run lock, live lines, plugins, resilience, the viewer) in either
language, and ``--json`` the same bytes in both."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from flower.cli.main import build_app
from flower.core.config import ResilienceConfig
from flower.core.errors import ConfigError, NoSuchPluginError
from flower.core.i18n import available_languages, language
from flower.core.plugins import get_registry
from flower.core.resilience import Resilience, endpoint
from flower.core.run_lock import run_lock
from flower.runtime.spec import StepResult
from flower.runtime.summary import format_totals, summarize_result, totals
from flower.ui.server import PortInUseError, bind
from flower_plugins.probes import TcpProber


def flower(lang: str, *args: str, **env: str) -> Result:
    """``flower ARGS`` in-process, in ``lang`` (FLOWER_LANG, as a user sets it)."""
    return CliRunner().invoke(build_app(), list(args), env={"FLOWER_LANG": lang, **env})


@pytest.fixture
def empty(in_tmp: Path) -> Path:
    """A directory flower has never worked in, the store in it."""
    return in_tmp


def test_retention(empty: Path) -> None:
    en = flower("en", "sessions", "gc", "--older-than", "30d", "--dry-run")
    zh = flower("zh_CN", "sessions", "gc", "--older-than", "30d", "--dry-run")
    assert en.exit_code == zh.exit_code == 0
    assert "0 sessions to delete" in en.output
    assert "0 个会话待删除" in zh.output
    bad = flower("zh_CN", "sessions", "gc", "--older-than", "soon")
    assert bad.exit_code == 2
    assert "--older-than 'soon':应为数字加单位(s、m、h、d、w),例如 30d" in bad.output


def test_rewind(empty: Path) -> None:
    en = flower("en", "rewind")
    zh = flower("zh_CN", "rewind")
    assert en.exit_code == zh.exit_code == 2
    assert f"nothing to rewind: no lineage for {empty}" in en.output
    assert f"没有可回退的:runs 里没有 {empty} 的谱系" in zh.output
    assert not (empty / "runs").exists()


def test_adopt(empty: Path) -> None:
    en = flower("en", "adopt")
    zh = flower("zh_CN", "adopt")
    assert en.exit_code == zh.exit_code == 1
    assert "nothing to adopt here: no lineage of another directory" in en.output
    assert "这里没有可接过的:谱系存储里没有别的目录的谱系" in zh.output


DOCTOR_ENV = {"FLOWER_PROBE_STRATEGY": "none", "ANTHROPIC_API_KEY": "sk-test"}
"""No probe (no time in its line) and a key: every check passes, the same every run."""


def test_doctor_lines_and_json(empty: Path) -> None:
    en = flower("en", "doctor", **DOCTOR_ENV)
    zh = flower("zh_CN", "doctor", **DOCTOR_ENV)
    assert en.exit_code == zh.exit_code == 0, en.output
    assert en.output.splitlines()[-1] == "all checks ok"
    assert zh.output.splitlines()[-1] == "全部检查通过"
    assert "ok    api key   ANTHROPIC_API_KEY set" in en.output
    assert "正常  API 密钥  已设置 ANTHROPIC_API_KEY" in zh.output
    as_json = {lang: flower(lang, "doctor", "--json", **DOCTOR_ENV) for lang in ("en", "zh_CN")}
    assert as_json["en"].stdout == as_json["zh_CN"].stdout
    checks = {c["name"]: c["detail"] for c in json.loads(as_json["zh_CN"].stdout)["checks"]}
    assert checks["api key"] == "ANTHROPIC_API_KEY set"  # the data words, in English


def aligned(config_output: str) -> str:
    """``flower config``'s lines with the padding before ``=`` (as wide as the longest
    key, which grows with every new setting) made one space."""
    return re.sub(r" +=", " =", config_output)


def test_config_lines_and_json(empty: Path) -> None:
    en = flower("en", "config")
    zh = flower("zh_CN", "config")
    assert en.output.splitlines()[0] == "pyproject: (none: no [tool.flower] table found)"
    assert zh.output.splitlines()[0] == "pyproject: (无:没有找到 [tool.flower] 表)"
    assert "session store: sqlite:///" in en.output and "会话存储: sqlite:///" in zh.output
    assert "# default" in en.output and "# 默认" in zh.output
    assert "language = zh_CN  # env FLOWER_LANG" in aligned(zh.output)
    assert "workflow.brief_file = null  # default: brief.md (English)" in aligned(en.output)
    assert "workflow.goals_file = null  # 默认:目标.md(中文)" in aligned(zh.output)
    (empty / "需求.md").write_text("## 背景\n", encoding="utf-8")
    (empty / "brief.md").write_text("## Background\n", encoding="utf-8")
    assert "workflow.brief_file = null  # found: brief.md (需求.md not used)" in (
        aligned(flower("en", "config").output)
    )
    assert "workflow.brief_file = null  # 已找到:需求.md(没有用 brief.md)" in (
        aligned(flower("zh_CN", "config").output)
    )
    en_json = json.loads(flower("en", "config", "--json").stdout)
    zh_json = json.loads(flower("zh_CN", "config", "--json").stdout)
    # the files a run would use follow the language (its name for a new one, its own
    # name first of two); every other byte differs only by the language itself
    en_goals, zh_goals = (
        en_json["effective"].pop("goals_file"),
        zh_json["effective"].pop("goals_file"),
    )
    assert en_goals == {"file": "goals.md", "how": "default", "not_used": []}
    assert zh_goals == {"file": "目标.md", "how": "default", "not_used": []}
    en_brief, zh_brief = (
        en_json["effective"].pop("brief_file"),
        zh_json["effective"].pop("brief_file"),
    )
    assert en_brief == {"file": "brief.md", "how": "found", "not_used": ["需求.md"]}
    assert zh_brief == {"file": "需求.md", "how": "found", "not_used": ["brief.md"]}
    en_rest = json.dumps(en_json, ensure_ascii=False, sort_keys=True)
    zh_rest = json.dumps(zh_json, ensure_ascii=False, sort_keys=True)
    assert en_rest.replace('"en"', '"zh_CN"') == zh_rest
    assert '"default"' in zh_rest


def test_routing(empty: Path) -> None:
    en = flower("en", "sesions")
    zh = flower("zh_CN", "sesions")
    assert en.exit_code == zh.exit_code == 2
    assert "No such command 'sesions'. Did you mean 'sessions'?" in en.output
    assert "没有命令 'sesions'。你是不是想用 'sessions'?" in zh.output


def test_a_config_error_names_file_and_key_in_the_language(empty: Path) -> None:
    (empty / "pyproject.toml").write_text('[tool.flower.sessions]\nbackend = "sqllite"\n')
    where = f"{empty / 'pyproject.toml'}: [tool.flower.sessions] backend:"
    en = flower("en", "config")
    zh = flower("zh_CN", "config")
    assert en.exit_code == zh.exit_code == 2
    assert f"{where} no session store named 'sqllite' (did you mean 'sqlite'?)" in en.output
    assert f"{where} 没有名为 'sqllite' 的会话存储 (你是不是想用 'sqlite'?)" in zh.output


def test_an_error_in_the_settings_is_said_before_they_choose_a_language(empty: Path) -> None:
    """The settings are read to know the language, so an error in them is said in the
    language of the environment: FLOWER_LANG, else the locale, else English."""
    toml = empty / "pyproject.toml"
    toml.write_text('[tool.flower]\nlanguage = "zh_CN"\nrun_dri = "runs"\n')
    zh = flower("zh_CN", "config")
    assert zh.exit_code == 2
    assert f"{toml}: [tool.flower] run_dri: 未知的键(应为以下之一:" in zh.output
    by_locale = CliRunner().invoke(
        build_app(), ["config"], env={"FLOWER_LANG": "", "LC_ALL": "C.UTF-8"}
    )
    assert by_locale.exit_code == 2
    assert f"{toml}: [tool.flower] run_dri: unknown key (expected one of:" in by_locale.output
    toml.write_text('[tool.flower]\nlanguage = "xx"\n')
    named = flower("zh_CN", "config")
    assert named.exit_code == 2
    available = ", ".join(available_languages())
    assert f"{toml} [tool.flower] language:未知的语言 'xx'(可用:{available})" in named.output
    # an unknown FLOWER_LANG is itself the error, said in the locale's language
    toml.unlink()
    wrong = CliRunner().invoke(build_app(), ["config"], env={"FLOWER_LANG": "xx", "LANG": "zh"})
    assert wrong.exit_code == 2
    assert f"env FLOWER_LANG:未知的语言 'xx'(可用:{available})" in wrong.output


def test_the_run_lock(empty: Path) -> None:
    """Another flower holds the run directory (here: this process, another one asks)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLOWER_")}
    with run_lock(empty / "runs"):
        said = {
            lang: subprocess.run(
                [sys.executable, "-m", "flower.cli.main", "adopt"],
                cwd=empty,
                env={**env, "FLOWER_LANG": lang},
                capture_output=True,
                text=True,
                timeout=60,
            )
            for lang in ("en", "zh_CN")
        }
    assert said["en"].returncode == said["zh_CN"].returncode == 1
    assert f"another flower (pid {os.getpid()}) is running here" in said["en"].stderr
    assert f"另一个 flower(pid {os.getpid()})正在这里运行" in said["zh_CN"].stderr


def test_live_lines() -> None:
    results = [StepResult("a", num_turns=2, cost_usd=0.5), StepResult("b", num_turns=1)]
    with language("en"):
        assert format_totals(totals(results, 3.25)) == "2 runs · 3 turns · $0.5000 · 3.2 s"
        assert summarize_result("", is_error=False, denied=False) == "(no output)"
    with language("zh_CN"):
        assert format_totals(totals(results, 3.25)) == "2 次运行 · 3 轮 · $0.5000 · 3.2 s"
        assert summarize_result("a\nb", is_error=False, denied=False) == "2 行:a"
        assert summarize_result("no", is_error=False, denied=True) == "被拒绝:no"


def test_plugins_and_resilience() -> None:
    for lang, said in (("en", "no prober named 'tpc'"), ("zh_CN", "没有名为 'tpc' 的探测器")):
        with language(lang), pytest.raises(NoSuchPluginError) as caught:
            get_registry().get("probers", "tpc")
        assert said in str(caught.value)
    with language("zh_CN"), pytest.raises(ConfigError) as caught_url:
        endpoint("ftp://api.anthropic.com")
    assert "base_url='ftp://api.anthropic.com' 不是有效的 URL:必须以 http://" in str(
        caught_url.value
    )
    conf = ResilienceConfig(max_attempts=0)
    with language("zh_CN"), pytest.raises(ConfigError, match="max_attempts 至少为 1,实际为 0"):
        Resilience(conf, prober=TcpProber(), base_url="https://api.anthropic.com")


def test_the_viewer_says_where_it_listens() -> None:
    taken = bind("127.0.0.1", 0)
    port = taken.getsockname()[1]
    try:
        for lang, said in (("en", "is in use: pick another"), ("zh_CN", "已被占用")):
            with language(lang), pytest.raises(PortInUseError, match=said):
                bind("127.0.0.1", port)
    finally:
        taken.close()


def test_the_viewer_start_line(empty: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLOWER_")}
    lines = {}
    for lang in ("en", "zh_CN"):
        process = subprocess.Popen(
            [sys.executable, "-m", "flower.cli.main", "ui", "--port", "0"],
            cwd=empty,
            env={**env, "FLOWER_LANG": lang},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert process.stderr is not None
            lines[lang] = process.stderr.readline()
        finally:
            process.send_signal(signal.SIGINT)
            process.wait(timeout=30)
    assert "(read-only) at http://127.0.0.1:" in lines["en"]
    assert lines["en"].rstrip().endswith("(Ctrl-C stops)")
    assert "(只读)在 http://127.0.0.1:" in lines["zh_CN"]
    assert lines["zh_CN"].rstrip().endswith("(Ctrl-C 停止)")
