"""``--help`` speaks the chosen language: the root's, a group's and a nested command's,
the language read from the settings before any command is built, English when the
settings cannot be read."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner, Result

from flower.cli.main import BUILTIN_COMMANDS, build_app
from flower.core.i18n import language, translations

ROOT_EN = "Long-running Claude agent workflows that never lose their place."
ROOT_ZH = "永不丢失进度的长时间运行 Claude 代理工作流。"
SESSIONS_ROW_EN = "  list     List sessions, newest first: of one project, or of every project"
SESSIONS_ROW_ZH = "  list     列出会话,最新的在前:一个项目的,或存储里所有项目的。"
LIST_OPTION_EN = "  --project KEY  Only this project key."
LIST_OPTION_ZH = "  --project KEY  只看这个项目键。"


def flower_help(*args: str, **env: str) -> Result:
    """``flower ARGS --help`` in-process, in a locale of ``C.UTF-8`` plus ``env``."""
    base = {"FLOWER_LANG": "", "FLOWER_LANGUAGE": "", "LC_ALL": "", "LC_MESSAGES": ""}
    done = CliRunner().invoke(
        build_app(), [*args, "--help"], env={**base, "LANG": "C.UTF-8", **env}
    )
    assert done.exit_code == 0, done.output
    return done


def flower_process(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The console script in a fresh interpreter (every module imported anew)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("FLOWER_", "LC_"))}
    return subprocess.run(
        [sys.executable, "-m", "flower.cli.main", *args],
        cwd=cwd,
        env={**clean, "LANG": "C.UTF-8", **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_root_help_in_english_and_in_chinese(in_tmp: Path) -> None:
    en = flower_help().stdout
    zh = flower_help(FLOWER_LANG="zh_CN").stdout
    assert ROOT_EN in en and ROOT_ZH not in en
    assert ROOT_ZH in zh and ROOT_EN not in zh
    assert "  -r, --run-dir DIR   Run directory, relative to the working directory" in en
    assert "  -r, --run-dir DIR   运行目录,相对于工作目录(默认:runs)。" in zh
    assert "  sessions  List, show, export, import, remove and copy session transcripts." in en
    assert "  sessions  列出、显示、导出、导入、删除和复制会话记录。" in zh
    assert "  prune     显示每个修剪策略" in zh  # a command the pruning plugin registers
    # click's own words are click's (it ships no Chinese catalog)
    assert "Show this message and exit." in zh and "Options:" in zh


def test_a_group_and_a_nested_command_in_both_languages(in_tmp: Path) -> None:
    assert SESSIONS_ROW_EN in flower_help("sessions").stdout
    assert SESSIONS_ROW_ZH in flower_help("sessions", LANG="zh_CN.UTF-8").stdout
    en = flower_help("sessions", "list").stdout
    zh = flower_help("sessions", "list", FLOWER_LANG="zh_CN").stdout
    assert LIST_OPTION_EN in en and "  --json         Machine-readable output." in en
    assert LIST_OPTION_ZH in zh and "  --json         机器可读的输出。" in zh


def test_the_configured_language_wins_before_the_settings_are_loaded(in_tmp: Path) -> None:
    (in_tmp / "pyproject.toml").write_text('[tool.flower]\nlanguage = "zh_CN"\n')
    assert LIST_OPTION_ZH in flower_help("sessions", "list", FLOWER_LANG="en").stdout
    assert LIST_OPTION_EN in flower_help("sessions", "list", FLOWER_LANGUAGE="en").stdout


@pytest.mark.parametrize(
    "table",
    [
        '[tool.flower\nlanguage = "zh_CN"\n',  # not TOML
        '[tool.flower]\nlanguage = "xx"\n',  # a language flower does not speak
        "[tool.flower]\nlanguage = 3\n",
        'tool = { flower = "zh_CN" }\n',  # [tool.flower] not a table
    ],
    ids=["not-toml", "unknown-language", "not-a-string", "not-a-table"],
)
def test_a_bad_config_keeps_the_environments_language(in_tmp: Path, table: str) -> None:
    (in_tmp / "pyproject.toml").write_text(table)
    assert LIST_OPTION_EN in flower_help("sessions", "list").stdout
    assert LIST_OPTION_ZH in flower_help("sessions", "list", FLOWER_LANG="zh_CN").stdout
    command = CliRunner().invoke(build_app(), ["config"], env={"FLOWER_LANG": "en"})
    assert command.exit_code == 2  # the command itself reports the mistake
    assert "flower: error: " in command.output


def test_a_fresh_process_speaks_the_language_of_its_directory(in_tmp: Path) -> None:
    """As a user runs it: the command's module is imported after the language is set."""
    (in_tmp / "pyproject.toml").write_text('[tool.flower]\nlanguage = "zh_CN"\n')
    zh = flower_process(in_tmp, "sessions", "list", "--help")
    assert zh.returncode == 0, zh.stderr
    assert LIST_OPTION_ZH in zh.stdout
    (in_tmp / "pyproject.toml").write_text('[tool.flower\nlanguage = "zh_CN"\n')
    broken = flower_process(in_tmp, "sessions", "list", "--help")
    assert broken.returncode == 0, broken.stderr
    assert LIST_OPTION_EN in broken.stdout


def _help_texts(command: Any, path: str = "flower") -> Iterator[tuple[str, str]]:
    for holder in (command, *command.params):
        text = getattr(holder, "help", None)
        if text:
            yield f"{path} {getattr(holder, 'name', '')}", text
    for name, sub in getattr(command, "commands", {}).items():
        yield from _help_texts(sub, f"{path} {name}")


def _built_commands() -> Any:
    group = typer.main.get_command(build_app())
    ctx = typer.Context(group)  # type: ignore[arg-type]
    for name in group.list_commands(ctx):  # type: ignore[attr-defined]
        yield name, group.get_command(ctx, name)  # type: ignore[attr-defined]


def test_every_builtin_help_text_has_a_chinese_translation(in_tmp: Path) -> None:
    """Each help text of each built-in command (and its options, arguments and
    subcommands) is a message the catalog translates: a text not marked for extraction
    would stay English here."""
    chinese = translations("zh_CN")
    builtin = {c.name for c in BUILTIN_COMMANDS} | {"prune"}
    with language("en"):
        texts = [
            (where, text)
            for name, command in _built_commands()
            if name in builtin
            for where, text in _help_texts(command, f"flower {name}")
        ]
    assert len(texts) > 90
    untranslated = [(where, text) for where, text in texts if chinese.gettext(text) == text]
    assert untranslated == []
    with language("zh_CN"):
        shown = {
            text
            for name, command in _built_commands()
            if name in builtin
            for _where, text in _help_texts(command)
        }
    assert shown == {chinese.gettext(text) for _where, text in texts}
