"""Where the brief and the goals are: one lookup, named by the language, never orphaning."""

from __future__ import annotations

from pathlib import Path

import pytest

from flower.core.config import Settings, WorkflowConfig
from flower.core.i18n import language
from flower.workflow.documents import document_lookups, documents, render_goals
from flower.workflow.wake import archive_conversation

NAMES = {"en": ("brief.md", "goals.md"), "zh_CN": ("需求.md", "目标.md")}
OTHER = {"en": "zh_CN", "zh_CN": "en"}


@pytest.mark.parametrize("lang", sorted(NAMES))
def test_a_new_workspace_names_them_in_its_language(tmp_path: Path, lang: str) -> None:
    with language(lang):
        files = documents(tmp_path)
    assert (files.brief.name, files.goals.name) == NAMES[lang]
    assert files.brief.parent == files.goals.parent == tmp_path
    assert files.not_used == ()


@pytest.mark.parametrize("lang", sorted(NAMES))
def test_a_file_under_the_other_languages_name_is_the_one(tmp_path: Path, lang: str) -> None:
    other_brief, other_goals = NAMES[OTHER[lang]]
    (tmp_path / other_brief).write_text("# brief\n", encoding="utf-8")
    with language(lang):
        files = documents(tmp_path)
    assert files.brief == tmp_path / other_brief  # a language switch orphans no brief
    assert files.goals.name == NAMES[lang][1]  # none yet: this language's name
    (tmp_path / other_goals).write_text("1. x\n", encoding="utf-8")
    with language(lang):
        assert documents(tmp_path).goals == tmp_path / other_goals


@pytest.mark.parametrize("lang", sorted(NAMES))
def test_with_both_names_there_this_languages_is_used_and_the_other_named(
    tmp_path: Path, lang: str
) -> None:
    for name in (*NAMES["en"], *NAMES["zh_CN"]):
        (tmp_path / name).write_text("x\n", encoding="utf-8")
    with language(lang):
        files = documents(tmp_path)
        again = documents(tmp_path)
    assert (files.brief.name, files.goals.name) == NAMES[lang]
    assert [p.name for p in files.not_used] == list(NAMES[OTHER[lang]])
    assert again == files


def test_flower_config_says_which_file_each_lookup_found_and_why(tmp_path: Path) -> None:
    for name in ("需求.md", "brief.md"):
        (tmp_path / name).write_text("x\n", encoding="utf-8")
    with language("en"):
        brief, goals = document_lookups(tmp_path)
        said = brief.said(tmp_path), goals.said(tmp_path)
    assert said == ("found: brief.md (需求.md not used)", "default: goals.md (English)")
    assert brief.as_json(tmp_path) == {"file": "brief.md", "how": "found", "not_used": ["需求.md"]}
    elsewhere = tmp_path.parent
    assert goals.as_json(elsewhere)["file"] == str(Path(tmp_path.name) / "goals.md")
    assert goals.as_json(tmp_path / "sub")["file"] == str(tmp_path / "goals.md")


def test_a_directory_under_the_name_is_no_brief(tmp_path: Path) -> None:
    (tmp_path / "需求.md").mkdir()
    with language("en"):
        assert documents(tmp_path).brief == tmp_path / "brief.md"


def test_names_in_the_settings_win_over_what_is_there(tmp_path: Path) -> None:
    for name in (*NAMES["en"], *NAMES["zh_CN"]):
        (tmp_path / name).write_text("x\n", encoding="utf-8")
    settings = Settings(workflow=WorkflowConfig(brief_file="spec.md", goals_file="checks.md"))
    for lang in NAMES:
        with language(lang):
            files = documents(tmp_path, settings)
        assert files.brief == tmp_path / "spec.md" and files.goals == tmp_path / "checks.md"
        assert files.not_used == ()


@pytest.mark.parametrize(("lang", "title"), [("en", "# Goals"), ("zh_CN", "# 目标")])
def test_the_goals_file_is_titled_in_the_language(lang: str, title: str) -> None:
    with language(lang):
        assert render_goals(["a", "b"]) == f"{title}\n\n1. a\n2. b\n"


def test_new_archives_the_files_of_both_languages(in_tmp: Path) -> None:
    """Left behind, the other language's brief would be the next run's brief."""
    for name in (*NAMES["en"], *NAMES["zh_CN"]):
        (in_tmp / name).write_text(f"{name}\n", encoding="utf-8")
    with language("en"):
        into = archive_conversation(Settings(), in_tmp)
    assert into is not None
    assert sorted(p.name for p in in_tmp.glob("*.md")) == []
    for name in (*NAMES["en"], *NAMES["zh_CN"]):
        assert (into / name).read_text(encoding="utf-8") == f"{name}\n"


@pytest.mark.parametrize("lang", sorted(NAMES))
def test_status_and_the_banner_say_which_file_is_used(in_tmp: Path, lang: str) -> None:
    from flower.workflow.banner import wake_banner_lines
    from flower.workflow.base import wake_state
    from flower.workflow.status import describe_state

    for name in (*NAMES["en"], *NAMES["zh_CN"]):
        (in_tmp / name).write_text("x\n", encoding="utf-8")
    settings = Settings()
    with language(lang):
        state = wake_state(in_tmp, "runs", settings=settings)
        lines = describe_state(state, in_tmp, settings)
        banner = wake_banner_lines(state, in_tmp, settings)
    brief, goals = NAMES[lang]
    other_brief, other_goals = NAMES[OTHER[lang]]
    if lang == "zh_CN":
        assert f"需求        {brief} 未确认" in lines
        assert f"目标        {goals} 里 0 条" in lines
        not_used = [line for line in lines if line.startswith("没有用")]
        assert not_used == [
            f"没有用      {name}(另一种语言的名字;用的是这次运行的)"
            for name in (other_brief, other_goals)
        ]
    else:
        assert f"brief       {brief} not confirmed" in lines
        assert f"goals       0 in {goals}" in lines
        assert [line.split()[2] for line in lines if line.startswith("not used")] == [
            other_brief,
            other_goals,
        ]
    shown = banner.lines[-1].text
    assert banner.lines[-1].tone == "warning"
    assert f"{other_brief}, {other_goals}" in shown and f"{brief}, {goals}" in shown
    if lang == "zh_CN":
        assert shown.startswith("   !! 这里还有另一种语言命名的文件,没有用:")
    else:
        assert shown.startswith("   !! also here under another language's name, not used:")


def test_status_names_this_languages_files_in_a_new_workspace(in_tmp: Path) -> None:
    from flower.workflow.base import wake_state
    from flower.workflow.status import describe_state

    settings = Settings()
    with language("en"):
        lines = describe_state(wake_state(in_tmp, "runs", settings=settings), in_tmp, settings)
    assert "brief       brief.md not confirmed" in lines
    assert "goals       none yet (goals.md does not exist)" in lines
    assert not [line for line in lines if line.startswith("not used")]
