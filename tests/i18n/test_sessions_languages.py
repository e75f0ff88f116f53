"""``flower sessions ...`` and ``flower prune`` speak the chosen language; ``--json`` never does."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from flower.cli.main import build_app
from flower.core.i18n import language
from flower.core.records import SessionKey
from flower.stores.open import open_session_store
from tests.cli.cli_helpers import Cli, transcript

KEY = SessionKey("-work-alpha", "s1")

EXPECTED = {
    "en": {
        "header": ["SESSION", "MODIFIED (UTC)", "PROJECT"],
        "show": [
            "== s1  (-work-alpha) ==",
            "user: question 0 你好",
            "tool call: Bash",
            "== 6 entries ==",
        ],
        "fork": "fork: session {new} was forked here",
        "unknown": "flower: error: no session nope in ",
        "since": "--since 'soon': expected a duration like 30s",
        "stats": [
            "session s1 (-work-alpha)",
            "  kind ",
            "  total ",
            "pruning would remove: nothing",
        ],
        "prune": ["policy", "removed", "entries 6 stored, 6 on the active chain -> 6"],
        "export": "exported 6 entries of s1 to ",
        "rm_no": "not deleting s1 without --yes (no terminal)",
        "empty": "no sessions in ",
    },
    "zh_CN": {
        "header": ["会话", "修改时间 (UTC)", "项目"],
        "show": [
            "== s1  (-work-alpha) ==",
            "用户: question 0 你好",
            "工具调用: Bash",
            "== 6 个条目 ==",
        ],
        "fork": "分叉: 会话 {new} 从这里分叉",
        "unknown": "flower: error: ",
        "since": "--since 'soon':应为时长(如 30s、10m、2h、1d、1w)",
        "stats": ["会话 s1(-work-alpha)", "  类别 ", "  合计 ", "修剪会去掉:无"],
        "prune": ["策略", "去掉", "条目:存储 6 条,活动链上 6 条 -> 6 条"],
        "export": "已把 s1 的 6 个条目导出到 ",
        "rm_no": "没有 --yes 就不删除 s1(没有终端)",
        "empty": "里没有会话",
    },
}


@pytest.fixture(params=sorted(EXPECTED))
def lang(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The language every flower of the test speaks (in-process: from FLOWER_LANG)."""
    monkeypatch.setenv("FLOWER_LANG", request.param)
    with language(request.param):
        yield request.param


@pytest.fixture
def cli(in_tmp: Path) -> Cli:
    url = f"jsonfs:///{in_tmp / 'transcripts'}"
    with open_session_store(url) as store:
        store.append(KEY, transcript("s1", "/work/alpha", prefix="s1"))
    return Cli(url)


def test_list_headers_and_json(cli: Cli, lang: str) -> None:
    listed = cli("sessions", "list")
    assert listed.exit_code == 0, listed.output
    header = listed.stdout.splitlines()[0].split("  ")
    assert [cell.strip() for cell in header if cell.strip()] == EXPECTED[lang]["header"]
    rows = json.loads(cli("sessions", "list", "--json").stdout)
    assert sorted(rows[0]) == [
        *("label", "modified", "mtime_ms", "project_key"),
        *("role", "session_id", "step", "title"),  # null: no manifest knows s1
    ]
    assert [rows[0][k] for k in ("role", "step", "label", "title")] == [None] * 4


def test_json_is_the_same_in_every_language(cli: Cli, lang: str) -> None:
    """Scripts parse --json: keys and values are never translated."""
    for args in (("sessions", "show", "s1", "--json"), ("sessions", "stats", "--json")):
        out = cli(*args)
        assert out.exit_code == 0, out.output
        with language("en"):
            english = cli(*args).stdout
        assert out.stdout == english
    stats = json.loads(cli("sessions", "stats", "s1", "--json").stdout)
    assert set(stats["by_kind"]) == {"user", "assistant", "tool result"}


def test_show_labels_and_fork_notes(cli: Cli, lang: str) -> None:
    shown = cli("sessions", "show", "s1")
    assert shown.exit_code == 0, shown.output
    for line in EXPECTED[lang]["show"]:
        assert line in shown.stdout
    new = cli("sessions", "fork", "s1", "--at", "s1a0").stdout.strip()
    assert EXPECTED[lang]["fork"].format(new=new) in cli("sessions", "show", "s1").stdout


def test_errors_and_confirmations(cli: Cli, lang: str, in_tmp: Path) -> None:
    unknown = cli("sessions", "show", "nope")
    assert unknown.exit_code == 1
    assert unknown.stderr.startswith(EXPECTED[lang]["unknown"]), unknown.stderr
    assert "nope" in unknown.stderr  # the id itself, untranslated
    since = cli("sessions", "show", "s1", "--since", "soon")
    assert since.exit_code == 2 and EXPECTED[lang]["since"] in since.stderr, since.stderr
    exported = cli("sessions", "export", "s1", "-o", str(in_tmp / "s1.jsonl"))
    assert exported.exit_code == 0 and EXPECTED[lang]["export"] in exported.stderr
    refused = cli("sessions", "rm", "s1")  # no terminal to ask on
    assert refused.exit_code == 2 and EXPECTED[lang]["rm_no"] in refused.stderr, refused.stderr


def test_stats_and_prune_report(cli: Cli, lang: str) -> None:
    stats = cli("sessions", "stats", "s1")
    assert stats.exit_code == 0, stats.output
    for line in EXPECTED[lang]["stats"]:
        assert line in stats.stdout
    report = cli("sessions", "show", "s1", "--pruned", "--stats")
    assert report.exit_code == 0, report.output
    for text in EXPECTED[lang]["prune"]:
        assert text in report.stdout
    assert "synthetic-errors" in report.stdout  # policy names stay as they are


def test_an_empty_store_says_so(lang: str, in_tmp: Path) -> None:
    empty = Cli(f"jsonfs:///{in_tmp / 'empty'}")("sessions", "list")
    assert empty.exit_code == 0 and EXPECTED[lang]["empty"] in empty.stderr, empty.stderr


EXPECTED_MORE = {
    "en": {
        "import": "imported 1 Claude Code session (1 transcript) from ",
        "import_counts": ": 6 entries read, 6 new, 0 already there, 1 line skipped",
        "torn": ":7: torn last line (9 bytes)",
        "scan": "no secrets found in 1 session of ",
        "rekey": "rekey works on an encrypted store: set [tool.flower.sessions] encrypt = true",
        "plugins": " plugins, 0 failed",
        "plugin_kind": "    session stores: ",
        "not_a_url": "'nothing' is not a store URL (scheme://...; known schemes: ",
        "bad_key": "FLOWER_ENCRYPTION_KEY: key 1 is not 32 bytes of URL-safe base64"
        " (44 characters); make one with: flower sessions keygen",
        "fork": "session s1 has 2 user turn(s): it can go back at most 1 turn(s), not 5",
        "bad_entry": "entry 1 has no string 'type' field",
        "bad_project": "project key 'a/b' is not allowed",
    },
    "zh_CN": {
        "import": "已从 ",
        "import_counts": ":读取 6 个条目,新增 6 条,已有 0 条,跳过 1 行",
        "torn": ":7: 最后一行不完整(9 字节)",
        "scan": "里没有发现机密",
        "rekey": "rekey 只用于加密的存储:请先设置 [tool.flower.sessions] encrypt = true",
        "plugins": " 个插件,0 个失败",
        "plugin_kind": "    会话存储: ",
        "not_a_url": "'nothing' 不是存储的 URL(scheme://...;已知的 scheme:",
        "bad_key": "FLOWER_ENCRYPTION_KEY:第 1 个密钥不是 32 字节的 URL 安全 base64(44 个字符);"
        "生成一个用:flower sessions keygen",
        "fork": "会话 s1 有 2 轮用户发言:最多只能退回 1 轮,不能退回 5 轮",
        "bad_entry": "第 1 条 没有字符串类型的 'type' 字段",
        "bad_project": "项目键 'a/b' 不允许",
    },
}


def test_claude_code_import_says_what_it_did(cli: Cli, lang: str, in_tmp: Path) -> None:
    project = in_tmp / "claude" / "-work-beta"
    project.mkdir(parents=True)
    lines = [json.dumps(e) for e in transcript("s9", "/work/beta", prefix="s9")]
    (project / "s9.jsonl").write_text("\n".join(lines) + '\n{"type": ', encoding="utf-8")
    done = cli("sessions", "import", "--claude-code", str(in_tmp / "claude"))
    assert done.exit_code == 0, done.output
    expected = EXPECTED_MORE[lang]
    assert done.stdout.startswith(expected["import"]), done.stdout
    assert expected["import_counts"] in done.stdout
    assert f"{project / 's9.jsonl'}{expected['torn']}" in done.stderr  # the path as it is


def test_scan_rekey_and_plugins(cli: Cli, lang: str) -> None:
    expected = EXPECTED_MORE[lang]
    scan = cli("sessions", "scan")
    assert scan.exit_code == 0 and expected["scan"] in scan.stderr, scan.output
    rekey = cli("sessions", "rekey")
    assert rekey.exit_code == 1 and expected["rekey"] in rekey.stderr, rekey.output
    listed = cli("plugins")
    assert listed.exit_code == 0, listed.output
    assert listed.stdout.splitlines()[-1].endswith(expected["plugins"])
    assert expected["plugin_kind"] in listed.stdout


def test_the_stores_errors(cli: Cli, lang: str, in_tmp: Path) -> None:
    expected = EXPECTED_MORE[lang]
    not_a_url = cli("--sessions-url", "nothing", "sessions", "list", url=False)
    assert not_a_url.exit_code == 2 and expected["not_a_url"] in not_a_url.stderr
    (in_tmp / "pyproject.toml").write_text("[tool.flower.sessions]\nencrypt = true\n")
    bad_key = cli.runner.invoke(
        build_app(), ["sessions", "list"], env={"FLOWER_ENCRYPTION_KEY": "short"}
    )
    assert bad_key.exit_code == 2 and expected["bad_key"] in bad_key.stderr, bad_key.output


def test_the_core_errors(cli: Cli, lang: str, in_tmp: Path) -> None:
    expected = EXPECTED_MORE[lang]
    fork = cli("sessions", "fork", "s1", "--turns-back", "5")
    assert fork.exit_code == 2 and expected["fork"] in fork.stderr, fork.output
    bad = in_tmp / "bad.jsonl"
    bad.write_text('{"uuid": "x"}\n', encoding="utf-8")
    imported = cli("sessions", "import", str(bad))
    assert imported.exit_code != 0 and expected["bad_entry"] in imported.stderr, imported.output
    listed = cli("sessions", "list", "--project", "a/b")
    assert listed.exit_code != 0 and expected["bad_project"] in listed.stderr, listed.output


def test_copy_verify_says_why_in_words_and_in_english_json(
    cli: Cli, lang: str, in_tmp: Path
) -> None:
    target = f"jsonfs:///{in_tmp / 'target'}"
    extra = {"type": "user", "uuid": "extra", "message": {"role": "user", "content": "more"}}
    with open_session_store(target) as store:
        store.append(KEY, [*transcript("s1", "/work/alpha", prefix="s1"), extra])
    args = ("sessions", "copy", "--from", cli.url, "--to", target, "--verify")
    as_json = cli(*args, "--json")
    assert as_json.exit_code == 1, as_json.output
    [mismatch] = json.loads(as_json.stdout)["mismatches"]
    assert mismatch["reason"] == "the target has more entries than the source"  # any language
    said = cli(*args)
    assert said.exit_code == 1
    expected = {
        "en": "differs: s1 at entry 6: the target has more entries than the source",
        "zh_CN": "不一致:s1 第 6 条:目标的条目比源多",
    }
    assert expected[lang] in said.stderr, said.output


def test_rekey_json_failures_are_english_in_every_language(lang: str, in_tmp: Path) -> None:
    from typer.testing import CliRunner

    from flower.stores.encrypt import ENC
    from flower.stores.keyring import generate_key

    root = in_tmp / "t"
    (in_tmp / "pyproject.toml").write_text(
        f'[tool.flower.sessions]\nencrypt = true\nurl = "jsonfs://{root}"\n', encoding="utf-8"
    )
    source = in_tmp / "s1.jsonl"
    lines = [json.dumps(e) for e in transcript("s1", "/work/alpha", turns=1, prefix="s1")]
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    env = {"FLOWER_ENCRYPTION_KEY": generate_key()}
    runner = CliRunner()
    imported = runner.invoke(build_app(), ["sessions", "import", str(source)], env=env)
    assert imported.exit_code == 0, imported.output
    [path] = root.glob("*/s1.jsonl")
    stored = path.read_text(encoding="utf-8").splitlines()
    damaged = json.loads(stored[1])
    damaged[ENC]["ct"] = damaged[ENC]["ct"][:-12]
    stored[1] = json.dumps(damaged)
    path.write_text("\n".join(stored) + "\n", encoding="utf-8")
    env["FLOWER_NEW_ENCRYPTION_KEY"] = generate_key()
    done = runner.invoke(build_app(), ["sessions", "rekey", "--json"], env=env)
    assert done.exit_code == 1, done.output
    assert json.loads(done.stdout)["failed"] == [
        "session s1: entry 1 (uuid s1a0) cannot be decrypted (ciphertext does not "
        "authenticate (truncated or altered)); session left under the old key"
    ]
    said = runner.invoke(build_app(), ["sessions", "rekey"], env=env)
    words = {"en": "not re-encrypted: session s1: entry 1", "zh_CN": "没有重新加密:会话 s1:第 1 条"}
    assert said.exit_code == 1 and words[lang] in said.stderr, said.output


def test_tables_align_by_the_columns_a_character_takes(capsys: pytest.CaptureFixture[str]) -> None:
    from flower.cli.output import print_table
    from flower.core.display import shown_width

    print_table(["会话", "项目"], [("s1", "-p"), ("长一点的会话", "-q")])
    lines = capsys.readouterr().out.splitlines()
    starts = [
        shown_width(line[: line.index(cell)]) for line, cell in zip(lines, "项--", strict=False)
    ]
    assert starts == [14, 14, 14], lines  # the widest cell is 12 columns, then two spaces
