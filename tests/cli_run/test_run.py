"""``flower "..."``, ``once`` and ``status`` through the real console script, and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_run_helpers import REQUEST, Flower, ScriptedModel, lineage

from flower.core.manifest import read_manifest
from flower.testing.fake_api import RecordedRequest, Reply, reply
from flower.workflow.banner import step_header
from flower.workflow.builtin import worker_agent
from flower.workflow.goal import judge_agent
from tests.unprivileged import cannot_write_prefix


def test_first_run_json_on_stdout_banner_and_headers_on_stderr(flower: Flower, ws: Path) -> None:
    done = flower("--yes", "--json", REQUEST, "--new")  # --new in a fresh dir: a first run
    assert done.returncode == 0, done.stderr
    assert not (ws / "notes").exists()  # nothing to archive, no empty archive folder
    out = json.loads(done.stdout)  # stdout holds the JSON and nothing else
    assert out["ok"] is True and out["woke"] == 1 and out["goal_met"] is True
    assert [r["step"] for r in out["results"]] == ["确认需求", "设定目标", "干活", "干活·判定#1"]
    assert all(r["ok"] and r["duration_s"] >= 0 for r in out["results"])
    assert out["sessions"] == lineage(ws)["steps"]
    lines = done.stderr.splitlines()
    assert lines[0] == f"-> 在 {ws} 开始新的一件事"
    assert lines[1] == step_header("确认需求", 1, 1, resumed=False, woke=1)
    assert step_header("干活", 1, 3, resumed=False, woke=1) in lines
    assert "  -> Write: md2html.py (1658 个字符)" in lines  # the live lines speak it too
    summary = next(line for line in lines if line.startswith("== 4 次运行"))
    assert " 轮 · $" in summary and summary.endswith(" s")
    assert f"flower sessions show {out['sessions']['干活']}" in done.stderr
    assert (ws / "sample.html").is_file()

    status = flower("status", "--json")
    state = json.loads(status.stdout)
    assert state["waking"] is True and state["woke"] == 1
    assert state["checks"]["brief"] is True and state["checks"]["goals"] == 3
    words = flower("status").stdout
    assert "需求        需求.md 已确认" in words
    assert "下一步      `flower` 接着做 干活(第 2 次唤醒)" in words  # brief and goals are kept


PASS = "1. 达成\n2. 达成\n3. 达成"


def test_run_dir_on_the_root_and_on_run_and_rounds(
    flower: Flower, model: ScriptedModel, ws: Path
) -> None:
    verdicts = ["1. 达成\n2. 未达成 — 没跑\n3. 达成"]
    judge = judge_agent().instructions
    model.override(judge, lambda req: reply(verdicts.pop() if verdicts else PASS))
    done = flower("-r", "elsewhere", "--yes", "--rounds", "2", REQUEST)
    assert done.returncode == 0, done.stderr
    assert not (ws / "runs").exists() and (ws / "elsewhere" / "lineage.json").is_file()
    steps = [r["step"] for r in read_manifest(ws / "elsewhere")]
    assert steps[2:] == ["干活", "干活·判定#1", "干活#round2", "干活·判定#2"]
    assert step_header("干活", 2, 2, resumed=False, woke=1) in done.stdout.splitlines()

    again = flower("run", "-r", "elsewhere", "--yes", "--json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["woke"] == 2


def test_once_runs_one_agent_without_lineage_and_resumes_by_hand(
    flower: Flower, model: ScriptedModel, ws: Path
) -> None:
    said: list[RecordedRequest] = []

    def answer(req: RecordedRequest) -> Reply:
        said.append(req)
        return reply(f"第 {len(said)} 句")

    model.override(worker_agent().instructions, answer)
    done = flower("once", "--json", "说一句")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)["results"][0]
    assert result["step"] == "once" and result["text"] == "第 1 句"
    assert not (ws / "runs" / "lineage.json").exists()
    sid = result["session_id"]
    assert f"flower once --resume {sid}" in done.stderr

    more = flower("once", "--resume", sid, "--json", "再说一句")
    assert more.returncode == 0, more.stderr
    again = json.loads(more.stdout)["results"][0]
    assert again["session_id"] == sid and again["resumed"] is True
    assert said[1].texts()[-3:] == ["说一句", "第 1 句", "再说一句"]
    header = next(line for line in more.stderr.splitlines() if line.startswith("== once"))
    assert header.endswith("1/1  <- 接上次")  # `once` has no wakes to count

    unknown = flower("once", "--resume", "nope", "hi")
    assert unknown.returncode == 1 and "的会话 'nope'" in unknown.stderr  # zh_CN, as pinned


def test_once_resumes_by_a_prefix_and_from_another_project_with_project(
    flower: Flower, model: ScriptedModel, ws: Path
) -> None:
    from flower.core.keys import project_key

    model.override(worker_agent().instructions, lambda req: reply(f"第 {len(req.texts())} 句"))
    env = {**flower.env, "FLOWER_SESSIONS_URL": f"sqlite:///{ws / 'shared.db'}"}
    first = flower("once", "--json", "说一句", env=env)
    assert first.returncode == 0, first.stderr
    sid = json.loads(first.stdout)["results"][0]["session_id"]
    more = flower("once", "--resume", sid[:8], "--json", "再说一句", env=env)
    assert more.returncode == 0, more.stderr
    assert json.loads(more.stdout)["results"][0]["session_id"] == sid

    elsewhere = Flower(ws / "elsewhere", env)
    elsewhere.cwd.mkdir()
    refused = elsewhere("once", "--resume", sid[:8], "hi")
    assert refused.returncode == 1
    home = project_key(ws)
    assert f"它在项目 {home} 里;`flower once --resume {sid} --project {home}" in refused.stderr
    there = elsewhere("once", "--resume", sid[:8], "--project", home, "--json", "接着说")
    assert there.returncode == 0, there.stderr
    assert json.loads(there.stdout)["results"][0]["session_id"] == sid
    assert f"flower once --resume {sid} --project {home}" in there.stderr
    alone = elsewhere("once", "--project", home, "hi")
    assert alone.returncode == 2 and "请加上 --resume" in alone.stderr


# -- bad input: clear errors before anything is written ---------------------------------


def without_key(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if not k.startswith("ANTHROPIC_")}


@pytest.mark.parametrize("argv", [[REQUEST], ["--new", "x"], ["once", "hi"]])
def test_no_api_key_is_a_clear_message_and_writes_nothing(
    flower: Flower, ws: Path, argv: list[str]
) -> None:
    done = flower(*argv, env=without_key(flower.env))
    assert done.returncode == 1
    assert "ANTHROPIC_API_KEY" in done.stderr and "flower demo" in done.stderr
    assert done.stdout == "" and list(ws.iterdir()) == []


@pytest.mark.parametrize(("argv", "message"), [([], "没有可接着做的"), (["--new"], "--new")])
def test_nothing_to_do_is_said_before_a_missing_key(
    flower: Flower, ws: Path, argv: list[str], message: str
) -> None:
    # a usage error: however the key is set, this command could not run
    done = flower(*argv, env=without_key(flower.env))
    assert done.returncode == 2 and message in done.stderr
    assert "ANTHROPIC_API_KEY" not in done.stderr and list(ws.iterdir()) == []


def test_a_used_directory_with_nothing_said_still_needs_a_key(flower: Flower, ws: Path) -> None:
    assert flower("--yes", REQUEST).returncode == 0
    done = flower(env=without_key(flower.env))
    assert done.returncode == 1 and "ANTHROPIC_API_KEY" in done.stderr


def test_a_blank_key_is_no_key(flower: Flower, ws: Path) -> None:
    done = flower(REQUEST, env=without_key(flower.env) | {"ANTHROPIC_API_KEY": "  "})
    assert done.returncode == 1 and "ANTHROPIC_API_KEY" in done.stderr
    assert list(ws.iterdir()) == []


def test_auth_token_counts_as_a_key(flower: Flower, ws: Path) -> None:
    env = without_key(flower.env) | {"ANTHROPIC_AUTH_TOKEN": "t"}
    done = flower(env=env)  # gets past the key check to the fresh-directory message
    assert done.returncode == 2 and "ANTHROPIC_API_KEY" not in done.stderr


def test_run_dir_that_cannot_be_written_is_refused_before_anything(
    english: None, flower: Flower, ws: Path
) -> None:
    (ws / "plain-file").write_text("x")
    done = flower("-r", "plain-file/runs", "--yes", REQUEST)
    assert done.returncode == 1
    assert "run directory 'plain-file/runs' cannot be created" in done.stderr
    assert sorted(p.name for p in ws.iterdir()) == ["plain-file"]


def test_read_only_run_dir_is_refused(english: None, flower: Flower, ws: Path) -> None:
    (ws / "runs").mkdir(mode=0o555)
    done = flower("--yes", REQUEST, prefix=cannot_write_prefix())
    assert done.returncode == 1 and "is not writable" in done.stderr


def test_a_manifest_line_that_is_not_utf8_stops_no_run(flower: Flower, ws: Path) -> None:
    assert flower("--yes", REQUEST).returncode == 0
    manifest = ws / "runs" / "manifest.json"
    with manifest.open("ab") as out:
        out.write(b"\xff\n")  # `printf '\xff\n' >> runs/manifest.json`
    again = flower("--yes", "--json", "再来一次")
    assert again.returncode == 0, again.stderr
    assert "Traceback" not in again.stderr
    assert b"\n\xff\n" in manifest.read_bytes()  # kept as it was
    assert json.loads(again.stdout)["woke"] == 2


def test_fresh_directory_with_nothing_said_and_no_terminal(flower: Flower, ws: Path) -> None:
    done = flower()
    assert done.returncode == 2
    assert "没有可接着做的" in done.stderr and 'flower "' in done.stderr
    assert list(ws.iterdir()) == []


@pytest.mark.parametrize(
    ("argv", "hint"),
    [
        (["statsu"], "Did you mean 'status'?"),
        (["--no-trimm", "x"], "(Possible options: --no-trim)"),
        (["run", "--jsn"], "Possible options: --json"),
        (["once", "--resum", "x"], "(Possible options: --resume)"),
    ],
)
def test_unknown_flag_or_subcommand_is_exit_2_with_a_suggestion(
    english: None, flower: Flower, ws: Path, argv: list[str], hint: str
) -> None:
    done = flower(*argv)
    assert done.returncode == 2
    assert hint in done.stderr
    assert list(ws.iterdir()) == []


def test_output_piped_into_a_reader_that_stops_does_not_stop_the_work(
    flower: Flower, ws: Path
) -> None:
    child = flower.spawn("--yes", REQUEST)
    assert child.stdout is not None and child.stderr is not None
    child.stdout.readline()  # `| head -1`: one line, then the reader is gone
    child.stdout.close()
    stderr = child.stderr.read()
    child.stderr.close()
    assert child.wait(90) == 0, stderr
    assert "BrokenPipe" not in stderr and "Traceback" not in stderr
    assert "on_event failed" not in stderr
    records = [
        json.loads(line) for line in (ws / "runs" / "manifest.json").read_text().splitlines()
    ]
    assert [r["step"] for r in records] == ["确认需求", "设定目标", "干活", "干活·判定#1"]
