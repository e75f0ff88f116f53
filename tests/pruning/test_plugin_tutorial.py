"""The path a user takes to add a policy (docs/writing-a-pruning-policy.md), end to end:
a package declaring an entry point in group ``flower`` -> discovered -> selected in
``[tool.flower.pruning]`` of a project's pyproject -> applied on load."""

from __future__ import annotations

import re
import shutil
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
from pruning_builders import TranscriptBuilder
from pruning_memory_store import MemoryStore

from flower.core.config import load_settings
from flower.core.errors import ConfigError
from flower.core.plugins import get_registry, reset_registry
from flower.core.records import SessionKey
from flower.core.transcript import check_conversation, conversation
from flower.stores.prune import PruningSessionStore

pytestmark = pytest.mark.usefixtures("english")  # expects flower's English output

PACKAGE = Path(__file__).parent / "plugin_pkg"
DOCS = Path(__file__).parents[2] / "docs" / "writing-a-pruning-policy.md"
KEY = SessionKey("-tmp-proj", "thinking-1")


def install_without_pip(site: Path) -> None:
    """What ``pip install`` leaves behind, minus the copying of files we don't need:
    the package and a ``.dist-info`` whose ``entry_points.txt`` comes from its pyproject."""
    project = tomllib.loads((PACKAGE / "pyproject.toml").read_text())["project"]
    shutil.copytree(PACKAGE / "flower_drop_thinking", site / "flower_drop_thinking")
    dist = site / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n"
    )
    lines = ["[flower]"] + [f"{k} = {v}" for k, v in project["entry-points"]["flower"].items()]
    (dist / "entry_points.txt").write_text("\n".join(lines) + "\n")


@pytest.fixture
def installed_plugin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    site = tmp_path_factory.mktemp("site-packages")
    install_without_pip(site)
    sys.path.insert(0, str(site))
    try:
        reset_registry()
        yield
    finally:
        sys.path.remove(str(site))
        sys.modules.pop("flower_drop_thinking", None)
        reset_registry()


def thinking_session() -> list[dict]:
    b = TranscriptBuilder(session_id=KEY.session_id, streamed=True)
    for i in range(4):
        b.user(f"question {i}")
        b.assistant(
            [
                {"type": "thinking", "thinking": f"pondering {i}", "signature": "sig"},
                {"type": "text", "text": f"answer {i}"},
            ]
        )
    return b.entries


def test_a_plugin_policy_is_discovered_selected_in_pyproject_and_applied(
    installed_plugin: None, in_tmp: Path
) -> None:
    registry = get_registry()
    assert "drop-thinking" in registry.names("pruning_policies")
    info = next(p for p in registry.plugins if p.name == "drop_thinking")
    assert info.distribution == "flower-drop-thinking"
    (in_tmp / "pyproject.toml").write_text(
        "[tool.flower.pruning]\n"
        'policies = ["synthetic-errors", "drop-thinking"]\n'
        "[tool.flower.pruning.options.drop-thinking]\nkeep_turns = 1\n"
    )
    inner = MemoryStore()
    inner.append(KEY, thinking_session())
    store = PruningSessionStore.from_settings(inner, load_settings().settings, trim=False)
    assert [p.name for p in store.policies] == ["synthetic-errors", "drop-thinking"]
    pruned = store.load(KEY)
    assert pruned is not None
    messages = conversation(pruned)
    check_conversation(messages)
    thoughts = [b["thinking"] for m in messages for b in m["content"] if b["type"] == "thinking"]
    assert thoughts == ["pondering 3"]
    assert [b["text"] for m in messages[1::2] for b in m["content"] if b["type"] == "text"] == [
        f"answer {i}" for i in range(4)
    ]
    assert len(inner.data[KEY]) == 12  # storage untouched


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ('keep_turns = "two"', "keep_turns: Expected `int`, got `str`"),
        ("keep_turns = -1", "keep_turns: Expected `int` >= 0"),
        ("keep_turn = 1", "keep_turn: unknown key (expected one of: keep_turns)"),
    ],
)
def test_the_tutorial_policy_rejects_bad_options_by_name(
    installed_plugin: None, in_tmp: Path, line: str, reason: str
) -> None:
    (in_tmp / "pyproject.toml").write_text(
        '[tool.flower.pruning]\npolicies = ["drop-thinking"]\n'
        f"[tool.flower.pruning.options.drop-thinking]\n{line}\n"
    )
    with pytest.raises(ConfigError) as info:
        PruningSessionStore.from_settings(MemoryStore(), load_settings().settings)
    assert str(info.value) == f"[tool.flower.pruning.options.drop-thinking] {reason}"
    assert info.value.exit_code == 2
    assert info.value.key == "pruning.options"  # so the CLI can name where it was set


def test_the_cli_names_the_file_or_variable_that_set_a_bad_option(
    installed_plugin: None, in_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from flower.cli.main import build_app

    pyproject = in_tmp / "pyproject.toml"
    pyproject.write_text(
        '[tool.flower.pruning]\npolicies = ["drop-thinking"]\n'
        '[tool.flower.pruning.options.drop-thinking]\nkeep_turns = "two"\n'
    )
    done = CliRunner().invoke(build_app(), ["prune", "some-session"])
    assert done.exit_code == 2
    assert (
        f"flower: error: {pyproject}: [tool.flower.pruning.options.drop-thinking] keep_turns: "
        "Expected `int`, got `str`"
    ) in done.output

    pyproject.write_text('[tool.flower.pruning]\npolicies = ["drop-thinking"]\n')
    monkeypatch.setenv("FLOWER_PRUNING_OPTIONS", '{"drop-thinking": {"keep_turns": "x"}}')
    done = CliRunner().invoke(build_app(), ["prune", "some-session"])
    assert done.exit_code == 2
    assert "keep_turns: Expected `int`, got `str` (set by env FLOWER_PRUNING_OPTIONS)" in (
        done.output
    )


def test_without_the_plugin_the_same_pyproject_is_a_clear_error(in_tmp: Path) -> None:
    reset_registry()
    (in_tmp / "pyproject.toml").write_text('[tool.flower.pruning]\npolicies = ["drop-thinking"]\n')
    with pytest.raises(ConfigError, match=r"drop-thinking.*available: .*denials"):
        PruningSessionStore.from_settings(MemoryStore(), load_settings().settings)


def test_the_tutorial_shows_exactly_the_tested_code() -> None:
    text = DOCS.read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    module = (PACKAGE / "flower_drop_thinking" / "__init__.py").read_text()
    assert module in blocks
    pyproject = re.findall(r"```toml\n(.*?)```", text, flags=re.S)
    assert any("[project.entry-points.flower]" in b and "drop_thinking" in b for b in pyproject)


def test_the_pruning_page_samples_run(in_tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = (DOCS.parent / "pruning.md").read_text()
    for block in re.findall(r"```python\n(.*?)```", text, flags=re.S):
        exec(compile(block, "docs/pruning.md", "exec"), {})
    out = capsys.readouterr().out
    assert "['synthetic-errors', 'denials', 'interrupted', 'ephemeral']" in out
    assert "tool_use 't1' is never answered" in out
