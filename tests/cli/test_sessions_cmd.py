"""``flower sessions``: list, show, export, import, rm against the real built-in stores."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import Cli, run_flower, transcript

from flower.core.records import SessionKey
from flower.stores.open import open_session_store

# the expected text below is flower's English output (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("english")


def load(url: str, key: SessionKey) -> list[dict] | None:
    with open_session_store(url) as store:
        return store.load(key)


def test_list_all_projects(cli: Cli, seeded: dict[str, SessionKey]) -> None:
    result = cli("sessions", "list", "--json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert sorted((r["project_key"], r["session_id"]) for r in rows) == [
        ("-work-alpha", "s1"),
        ("-work-alpha", "s2"),
        ("-work-beta", "s3"),
    ]
    assert all(isinstance(r["mtime_ms"], int) for r in rows)
    text = cli("sessions", "list").stdout
    assert "s3" in text and "-work-beta" in text


def test_list_one_project(cli: Cli, seeded: dict[str, SessionKey]) -> None:
    rows = json.loads(cli("sessions", "list", "--project", "-work-beta", "--json").stdout)
    assert [r["session_id"] for r in rows] == ["s3"]


def test_list_rejects_a_hostile_project_key(cli: Cli, seeded: dict[str, SessionKey]) -> None:
    result = cli("sessions", "list", "--project", "../etc")
    assert result.exit_code == 1
    assert "not allowed" in result.stderr


def test_show_readable(cli: Cli, seeded: dict[str, SessionKey]) -> None:
    result = cli("sessions", "show", "s3")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "user: question 0 你好" in out
    assert "assistant: looking 1" in out
    assert 'tool call: Bash {"command":"ls -la"}' in out
    assert "tool result: a.txt" in out
    assert "6 entries" in out


def test_show_raw_is_the_stored_jsonl(
    cli: Cli, seeded: dict[str, SessionKey], store_url: str
) -> None:
    result = cli("sessions", "show", "s1", "--raw")
    assert result.exit_code == 0
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert lines == load(store_url, seeded["s1"])


def test_show_json(cli: Cli, seeded: dict[str, SessionKey], store_url: str) -> None:
    data = json.loads(cli("sessions", "show", "s2", "--json").stdout)
    assert data["session_id"] == "s2" and data["project_key"] == "-work-alpha"
    assert data["entries"] == load(store_url, seeded["s2"])


def test_show_pruned_goes_through_the_pruning_store(cli: Cli, in_tmp: Path, store_url: str) -> None:
    key = SessionKey("-work-p", "sp")
    entries = transcript("sp", "/work/p", turns=1)
    synthetic = {
        "type": "assistant",
        "uuid": "err1",
        "parentUuid": entries[-1]["uuid"],
        "sessionId": "sp",
        "isApiErrorMessage": True,
        "message": {
            "id": "0b0c",
            "model": "<synthetic>",
            "role": "assistant",
            "content": [{"type": "text", "text": "API Error: 529 Overloaded"}],
            "stop_reason": "stop_sequence",
            "usage": {"input_tokens": 0, "output_tokens": 0},
        },
    }
    with open_session_store(store_url) as store:
        store.append(key, [*entries, synthetic])
    raw = json.loads(cli("sessions", "show", "sp", "--json").stdout)["entries"]
    pruned = json.loads(cli("sessions", "show", "sp", "--json", "--pruned").stdout)
    assert pruned["pruned"] is True
    assert any(e["uuid"] == "err1" for e in raw)
    assert not any(e.get("uuid") == "err1" for e in pruned["entries"])
    assert "API Error" not in cli("sessions", "show", "sp", "--pruned").stdout
    assert load(store_url, key) == raw  # viewing pruned never rewrites storage


def test_raw_and_json_together_is_a_usage_error(cli: Cli, seeded: dict[str, SessionKey]) -> None:
    result = cli("sessions", "show", "s1", "--raw", "--json")
    assert result.exit_code == 2
    assert "--raw" in result.stderr


@pytest.mark.parametrize("command", ["show", "export", "rm"])
def test_unknown_session_id(
    cli: Cli, seeded: dict[str, SessionKey], store_url: str, command: str
) -> None:
    result = cli("sessions", command, "nope")
    assert result.exit_code == 1
    assert result.stderr == f"flower: error: no session nope in {store_url}\n"
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_hostile_session_id_is_rejected(cli: Cli, seeded: dict[str, SessionKey]) -> None:
    result = cli("sessions", "show", "../../etc/passwd")
    assert result.exit_code == 1
    assert "not allowed" in result.stderr


def test_export_to_stdout_and_file(
    cli: Cli, seeded: dict[str, SessionKey], store_url: str, in_tmp: Path
) -> None:
    expected = load(store_url, seeded["s1"])
    stdout = cli("sessions", "export", "s1").stdout
    assert [json.loads(x) for x in stdout.splitlines()] == expected
    out = in_tmp / "s1.jsonl"
    result = cli("sessions", "export", "s1", "-o", str(out))
    assert result.exit_code == 0
    assert [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()] == expected
    assert not [p.name for p in in_tmp.iterdir() if p.name.endswith(".tmp")]


def test_export_to_unwritable_place(cli: Cli, seeded: dict[str, SessionKey], in_tmp: Path) -> None:
    result = cli("sessions", "export", "s1", "-o", str(in_tmp / "missing" / "x.jsonl"))
    assert result.exit_code == 1
    assert "cannot write" in result.stderr


def test_import_uses_entries_session_and_cwd_and_is_idempotent(
    cli: Cli, in_tmp: Path, store_url: str
) -> None:
    entries = transcript("imp-1", str(in_tmp), turns=2)
    path = in_tmp / "whatever.jsonl"
    path.write_text(
        "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in entries), encoding="utf-8"
    )
    first = cli("sessions", "import", str(path))
    assert first.exit_code == 0, first.output
    assert "6 new" in first.stdout
    again = cli("sessions", "import", str(path))
    assert "0 new" in again.stdout
    from flower.core.keys import project_key

    assert load(store_url, SessionKey(project_key(in_tmp), "imp-1")) == entries


def test_one_entry_is_counted_in_the_singular(cli: Cli, in_tmp: Path, store_url: str) -> None:
    entry = {"type": "user", "uuid": "one", "sessionId": "imp-one", "cwd": str(in_tmp),
             "message": {"role": "user", "content": "hi"}}  # fmt: skip
    path = in_tmp / "one.jsonl"
    path.write_text(json.dumps(entry) + "\n", encoding="utf-8")
    done = cli("sessions", "import", str(path))
    assert done.exit_code == 0, done.output
    assert ": 1 entry read, 1 new," in done.stdout
    exported = cli("sessions", "export", "imp-one", "-o", str(in_tmp / "out.jsonl"))
    assert "exported 1 entry of imp-one" in exported.stderr


def test_importing_a_subagent_file_fills_the_sessions_subkey(
    cli: Cli, in_tmp: Path, store_url: str
) -> None:
    from flower.core.keys import project_key

    main = transcript("imp-2", str(in_tmp), turns=1)
    agent = [{**e, "isSidechain": True} for e in transcript("imp-2", str(in_tmp), prefix="s")]
    folder = in_tmp / "imp-2" / "subagents"
    folder.mkdir(parents=True)
    for path, entries in ((in_tmp / "imp-2.jsonl", main), (folder / "agent-a1.jsonl", agent)):
        path.write_text("".join(json.dumps(e) + "\n" for e in entries), encoding="utf-8")
    assert cli("sessions", "import", str(in_tmp / "imp-2.jsonl")).exit_code == 0
    done = cli("sessions", "import", str(folder / "agent-a1.jsonl"))
    assert done.exit_code == 0, done.output
    assert "into subagent transcript subagents/agent-a1 of session imp-2" in done.stdout
    key = SessionKey(project_key(in_tmp), "imp-2")
    assert load(store_url, key) == main  # the main transcript is left as it was
    assert load(store_url, SessionKey(key.project_key, "imp-2", "subagents/agent-a1")) == agent


def test_importing_twice_adds_no_entry_twice_with_or_without_uuid(
    cli: Cli, in_tmp: Path, store_url: str
) -> None:
    from flower.core.keys import project_key

    anonymous = [
        {"type": "summary", "summary": "the earlier part", "leafUuid": "u0"},
        {"type": "file-history-snapshot", "messageId": "m1", "snapshot": {}},
    ]
    entries = [*anonymous, *transcript("imp-anon", str(in_tmp), turns=1)]
    path = in_tmp / "anon.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in entries), encoding="utf-8")
    for _ in range(3):
        assert cli("sessions", "import", str(path)).exit_code == 0
    assert load(store_url, SessionKey(project_key(in_tmp), "imp-anon")) == entries


def test_import_reads_past_a_byte_order_mark(cli: Cli, in_tmp: Path, store_url: str) -> None:
    from flower.core.keys import project_key

    entries = transcript("imp-bom", str(in_tmp), turns=1)
    path = in_tmp / "bom.jsonl"
    text = "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in entries)
    path.write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))
    done = cli("sessions", "import", str(path))
    assert done.exit_code == 0, done.output
    assert load(store_url, SessionKey(project_key(in_tmp), "imp-bom")) == entries


def test_import_with_explicit_key(cli: Cli, in_tmp: Path, store_url: str) -> None:
    path = in_tmp / "t.jsonl"
    path.write_text(
        "".join(json.dumps(e) + "\n" for e in transcript("x", "/nowhere", 1)), encoding="utf-8"
    )
    result = cli("sessions", "import", str(path), "--project", "-p", "--session", "renamed")
    assert result.exit_code == 0, result.output
    assert len(load(store_url, SessionKey("-p", "renamed")) or []) == 3


def test_import_bad_line_writes_nothing(cli: Cli, in_tmp: Path, store_url: str) -> None:
    good = transcript("bad-1", "/w", 1)
    path = in_tmp / "t.jsonl"
    path.write_text(
        json.dumps(good[0]) + "\n" + json.dumps(good[1]) + "\n{not json\n", encoding="utf-8"
    )
    result = cli("sessions", "import", str(path))
    assert result.exit_code == 1
    assert f"{path}:3: not valid JSON" in result.stderr
    path.write_text(
        json.dumps(good[0]) + "\n" + json.dumps({"no": "type"}) + "\n", encoding="utf-8"
    )
    result = cli("sessions", "import", str(path))
    assert result.exit_code == 1
    assert f"{path}:2:" in result.stderr and "type" in result.stderr
    assert load(store_url, SessionKey("-w", "bad-1")) is None


def test_a_resumed_claude_code_file_is_the_session_its_name_is(
    cli: Cli, in_tmp: Path, store_url: str
) -> None:
    from flower.core.keys import project_key

    # Claude Code resumes session "old-1" into a new file: the old entries keep their
    # sessionId, the new ones carry the file's
    entries = transcript("old-1", str(in_tmp), 1) + transcript("new-2", str(in_tmp), 1, "n")
    path = in_tmp / "new-2.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in entries), encoding="utf-8")
    done = cli("sessions", "import", str(path))
    assert done.exit_code == 0, done.output
    assert "into session new-2 of project" in done.stdout
    assert load(store_url, SessionKey(project_key(in_tmp), "new-2")) == entries
    assert load(store_url, SessionKey(project_key(in_tmp), "old-1")) is None
    renamed = in_tmp / "export.jsonl"
    path.rename(renamed)
    unnamed = cli("sessions", "import", str(renamed))
    assert unnamed.exit_code == 2
    assert "holds entries of 2 sessions and its name is none of them" in unnamed.stderr
    assert "--session" in unnamed.stderr


def test_a_torn_last_line_is_skipped_and_said(cli: Cli, in_tmp: Path, store_url: str) -> None:
    from flower.core.keys import project_key

    entries = transcript("torn-1", str(in_tmp), 1)
    path = in_tmp / "torn-1.jsonl"
    torn = json.dumps(entries[0])[:25].encode()
    path.write_bytes(b"".join(json.dumps(e).encode() + b"\n" for e in entries) + torn)
    done = cli("sessions", "import", str(path))
    assert done.exit_code == 0, done.output
    assert f"skipped {path}:4: torn last line (25 bytes)" in done.stderr
    assert done.stdout.rstrip().endswith(", 1 line skipped")
    assert "3 entries read, 3 new" in done.stdout
    assert load(store_url, SessionKey(project_key(in_tmp), "torn-1")) == entries


def test_import_missing_file(cli: Cli, in_tmp: Path) -> None:
    result = cli("sessions", "import", str(in_tmp / "missing.jsonl"))
    assert result.exit_code == 1
    assert "cannot read" in result.stderr


def test_rm_needs_yes_without_a_terminal(
    cli: Cli, seeded: dict[str, SessionKey], store_url: str
) -> None:
    result = cli("sessions", "rm", "s2")
    assert result.exit_code == 2
    assert "--yes" in result.stderr
    assert load(store_url, seeded["s2"]) is not None
    result = cli("sessions", "rm", "s2", "--yes")
    assert result.exit_code == 0, result.output
    assert load(store_url, seeded["s2"]) is None
    assert load(store_url, seeded["s1"]) is not None


def test_cli_uses_the_configured_store(in_tmp: Path) -> None:
    """No --sessions-url: the sqlite default under the run directory, from config."""
    (in_tmp / "pyproject.toml").write_text('[tool.flower]\nrun_dir = "state"\n', encoding="utf-8")
    with open_session_store(f"sqlite:///{in_tmp / 'state' / 'sessions.db'}") as store:
        store.append(SessionKey("-p", "cfg"), transcript("cfg", "/p", 1))
    done = run_flower("sessions", "list", "--json", cwd=in_tmp)
    assert done.returncode == 0, done.stderr
    assert [r["session_id"] for r in json.loads(done.stdout)] == ["cfg"]


def test_the_newest_of_an_id_in_two_projects_is_shown_on_every_backend(
    cli: Cli, seeded: dict[str, SessionKey], store_url: str
) -> None:
    import time

    twin = SessionKey("-a-first-by-name", seeded["s1"].session_id)
    with open_session_store(store_url) as store:
        store.append(twin, transcript(twin.session_id, "/a", prefix="t"))
        store.set_modified(twin, int(time.time() * 1000) - 3 * 86_400_000)
        store.set_modified(seeded["s1"], int(time.time() * 1000))
    shown = cli("sessions", "show", "s1", "--json")
    assert json.loads(shown.stdout)["project_key"] == seeded["s1"].project_key
    assert "is also in project -a-first-by-name" in shown.stderr
    for bad in ("", " ", "a\nb"):
        done = cli("sessions", "show", "s1", "--project", bad)
        assert done.exit_code == 2 and "give a project key, one line" in done.stderr


def test_an_id_in_two_projects_is_said_and_rm_asks_which(
    cli: Cli, seeded: dict[str, SessionKey], store_url: str
) -> None:
    twin = SessionKey("-work-other", seeded["s1"].session_id)
    with open_session_store(store_url) as store:
        store.append(twin, transcript(twin.session_id, "/work/other", prefix="o"))
    shown = cli("sessions", "show", "s1", "--json")
    assert shown.exit_code == 0
    picked = json.loads(shown.stdout)["project_key"]
    other = ({"-work-other", seeded["s1"].project_key} - {picked}).pop()
    assert f"flower: note: session s1 is also in project {other}" in shown.stderr
    chosen = cli("sessions", "show", "s1", "--json", "--project", other)
    assert json.loads(chosen.stdout)["project_key"] == other and "note" not in chosen.stderr
    removed = cli("sessions", "rm", "s1", "--yes")
    assert removed.exit_code == 2 and "is in 2 projects" in removed.stderr
    assert "pick one with --project" in removed.stderr
    assert load(store_url, twin) is not None and load(store_url, seeded["s1"]) is not None
    assert cli("sessions", "rm", "s1", "--yes", "--project", "-work-other").exit_code == 0
    assert load(store_url, twin) is None and load(store_url, seeded["s1"]) is not None


@pytest.mark.parametrize("bad", ["", "  ", "a\nb"])
def test_a_blank_or_multi_line_id_is_a_usage_error(cli: Cli, bad: str) -> None:
    for argv in (["show", bad], ["export", bad], ["rm", bad, "--yes"]):
        done = cli("sessions", *argv)
        assert done.exit_code == 2, (argv, done.output)
        assert "give a session's id, one line" in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1


def test_interval_without_follow_is_a_usage_error(cli: Cli, seeded: dict[str, SessionKey]) -> None:
    done = cli("sessions", "show", "s1", "--interval", "2")
    assert done.exit_code == 2 and "it needs --follow" in done.stderr


def test_an_import_that_adds_nothing_keeps_the_sessions_age(
    cli: Cli, in_tmp: Path, store_url: str
) -> None:
    import time

    from flower.core.keys import project_key

    entries = transcript("imp-age", str(in_tmp), turns=1)
    path = in_tmp / "age.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in entries), encoding="utf-8")
    assert cli("sessions", "import", str(path)).exit_code == 0
    key = SessionKey(project_key(in_tmp), "imp-age")
    month_ago = int(time.time() * 1000) - 30 * 86_400_000
    with open_session_store(store_url) as store:
        store.set_modified(key, month_ago)
    assert "0 new" in cli("sessions", "import", str(path)).stdout
    with open_session_store(store_url) as store:
        (info,) = store.list_sessions(key.project_key)
    assert abs(info.mtime_ms - month_ago) <= 1000


def test_a_string_cut_mid_emoji_is_shown_escaped_in_every_view(in_tmp: Path) -> None:
    """Claude Code stores a lone surrogate ("\\ud83d") when it cuts output mid-emoji:
    no view of the session may stop on it."""
    cut = "cut emoji \ud83d"
    entries = [
        {
            "type": "user",
            "uuid": "u1",
            "parentUuid": None,
            "message": {"role": "user", "content": "look"},
        },
        {
            "type": "assistant",
            "uuid": "a1",
            "parentUuid": "u1",
            "message": {
                "id": "m1",
                "role": "assistant",
                "content": [{"type": "text", "text": cut}],
            },
        },
    ]
    with open_session_store(f"sqlite:///{in_tmp / 'runs' / 'sessions.db'}") as store:
        store.append(SessionKey("-p", "cut"), entries)
    for view in ([], ["--pruned"]):
        shown = run_flower("sessions", "show", "cut", *view, cwd=in_tmp)
        assert shown.returncode == 0, shown.stderr
        assert "cut emoji \\ud83d" in shown.stdout
    for command in (["sessions", "show", "cut", "--json"], ["prune", "cut", "--json"]):
        done = run_flower(*command, cwd=in_tmp)
        assert done.returncode == 0, done.stderr
        json.loads(done.stdout)  # valid JSON, the surrogate as its escape
    as_json = run_flower("sessions", "show", "cut", "--json", cwd=in_tmp)
    assert json.loads(as_json.stdout)["entries"][1]["message"]["content"][0]["text"] == cut
    stats = run_flower("sessions", "show", "cut", "--pruned", "--stats", cwd=in_tmp)
    assert stats.returncode == 0 and "conversation 1" in stats.stdout, stats.stderr


@pytest.mark.parametrize("store_url", ["jsonfs"], indirect=True)
def test_a_project_folder_linked_outside_the_store_is_skipped_with_a_warning(
    cli: Cli, seeded: dict[str, SessionKey], in_tmp: Path
) -> None:
    elsewhere = in_tmp / "elsewhere"
    with open_session_store(f"jsonfs://{elsewhere}") as other:
        other.append(SessionKey("-work-gamma", "s9"), transcript("s9", "/work/gamma"))
    (in_tmp / "transcripts" / "-work-gamma").symlink_to(elsewhere / "-work-gamma")
    result = cli("sessions", "list", "--json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert sorted(r["session_id"] for r in rows) == ["s1", "s2", "s3"]
    link = in_tmp / "transcripts" / "-work-gamma"
    assert f"{link} is a symlink to {elsewhere / '-work-gamma'}, outside the store" in result.stderr
    assert "its sessions are skipped" in result.stderr
    result = cli("sessions", "list", "--project", "-work-gamma", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == []


def test_list_says_each_workflow_sessions_role_step_and_request(
    cli: Cli, seeded: dict[str, SessionKey], in_tmp: Path, store_url: str
) -> None:
    """Issue 29 item 9: the manifest of the run directory says who each session was;
    its title is the user's request (from the clarifier's first prompt, in whichever
    language that wake spoke), not flower's prompt. Other sessions stay as they were."""
    from flower.core.i18n import _, language
    from flower.workflow.prompts import CLARIFY_PROMPT

    request = "count the lines of notes.txt"
    with language("zh_CN"):  # the run that asked spoke Chinese
        prompt = _(CLARIFY_PROMPT).format(request=request)
    clarifier = SessionKey("-work-alpha", "c1")
    with open_session_store(store_url) as store:
        store.append(
            clarifier,
            [{"type": "user", "uuid": "c1u", "parentUuid": None, "sessionId": "c1",
              "message": {"role": "user", "content": prompt}}],
        )  # fmt: skip
    rows = [("确认需求", "c1"), ("干活", "s1"), ("干活·判定#1", "s2"), ("干活#round2", "s1")]
    (in_tmp / "runs").mkdir()
    (in_tmp / "runs" / "manifest.json").write_text(
        "".join(
            json.dumps({"step": step, "session_id": sid, "ok": True}, ensure_ascii=False) + "\n"
            for step, sid in rows
        ),
        encoding="utf-8",
    )
    table = cli("sessions", "list").stdout.splitlines()
    assert table[0].split() == ["SESSION", "MODIFIED", "(UTC)", "PROJECT", "ROLE", "STEP", "TITLE"]
    lines = {line.split()[0]: line for line in table[1:]}
    assert lines["c1"].endswith(f"clarifier  confirm the brief  {request}")
    assert lines["s1"].endswith(f"worker     work               {request}")
    assert lines["s2"].endswith(f"judge      work·judge#1       {request}")
    assert lines["s3"].endswith("-work-beta")  # not the manifest's: no role, no title
    listed = {r["session_id"]: r for r in json.loads(cli("sessions", "list", "--json").stdout)}
    assert {k: listed["s2"][k] for k in ("role", "step", "label", "title")} == {
        "role": "judge",
        "step": "干活",
        "label": "干活·判定#1",
        "title": request,
    }
    assert listed["s3"]["role"] is None and listed["s3"]["title"] is None


def test_list_says_roles_and_steps_in_chinese(
    cli: Cli, seeded: dict[str, SessionKey], in_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (in_tmp / "runs").mkdir()
    line = {"step": "干活·判定#1", "session_id": "s2", "ok": True}
    (in_tmp / "runs" / "manifest.json").write_text(json.dumps(line) + "\n", encoding="utf-8")
    monkeypatch.setenv("FLOWER_LANG", "zh_CN")
    table = cli("sessions", "list").stdout.splitlines()
    assert table[0].split()[-3:] == ["角色", "步骤", "标题"]
    [judged] = [line for line in table if line.startswith("s2")]
    assert judged.split()[-3:] == ["验收人", "干活·判定#1", "干活·判定#1"]  # no request: the step
