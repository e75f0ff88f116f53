"""The redact policy, `sessions scan`, and gc / archive / import of archives."""

from __future__ import annotations

import gzip
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from flower.cli.main import build_app
from flower.core.config import Settings
from flower.core.plugins import get_registry
from flower.core.protocols import PruneContext
from flower.core.records import LineageRecord, SessionKey
from flower.stores.open import open_session_store
from flower_plugins.redact import Redact
from flower_plugins.secret_shapes import find_secrets, mask_secrets

pytestmark = pytest.mark.usefixtures("english")  # expects flower's English output

SECRETS = {
    "anthropic-key": "sk-ant-api03-" + "A1b2C3d4E5" * 4,
    "openai-key": "sk-proj-" + "Zz9Yy8Xx7W" * 3,
    "aws-access-key": "AKIAIOSFODNN7EXAMPLE",
    "aws-secret-key": "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "github-token": "ghp_" + "a" * 36,
    "slack-token": "xoxb-123456789012-abcdefghijkl",
    "bearer-token": "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload.sig",
    "private-key": "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----",
    "url-password": "postgresql://app:S3cretPw@db.internal:5432/prod",
}


@pytest.mark.parametrize("kind", sorted(SECRETS))
def test_each_secret_shape_is_found_and_masked(kind: str) -> None:
    text = f"before {SECRETS[kind]} after"
    assert [k for k, _, _ in find_secrets(text)] == [kind]
    masked = mask_secrets(text)
    assert f"[REDACTED:{kind}]" in masked
    assert masked.startswith("before ") and masked.endswith(" after")
    for piece in (
        "A1b2C3d4E5",
        "Zz9Yy8",
        "IOSFODNN7",
        "bPxRfiCY",
        "aaaaaaaa",
        "abcdefghijkl",
        "payload.sig",
        "MIIEow",
        "S3cretPw",
    ):
        assert piece not in masked


@pytest.mark.parametrize(
    ("url", "hidden"),
    [
        ("mongodb://admin:p@ssw0rd@mongo:27017/", "ssw0rd"),  # a password holding "@"
        ("redis://:s3cretRedisPass@cache:6379/0", "s3cretRedisPass"),  # no user
    ],
)
def test_a_url_password_is_masked_whole(url: str, hidden: str) -> None:
    masked = mask_secrets(f"connect to {url} now")
    assert hidden not in masked and "[REDACTED:url-password]" in masked


@pytest.mark.parametrize(
    "text",
    [
        '{"AccessKeyId": "ASIAEXAMPLE", '
        '"SecretAccessKey": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKE/"}',
        "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKE+",
    ],
)
def test_aws_secret_keys_as_the_cli_prints_them_are_found(text: str) -> None:
    assert "aws-secret-key" in [k for k, _, _ in find_secrets(text)]
    assert "bPxRfiCY" not in mask_secrets(text)


def test_a_password_already_masked_is_no_finding() -> None:
    for text in (
        "postgresql+psycopg://flower:***@db.internal/flower",
        "postgresql://app:[REDACTED:url-password]@db/prod",
        "postgresql://user:${DB_PASSWORD}@localhost/app",
    ):
        assert list(find_secrets(text)) == [], text


def test_ordinary_text_is_left_alone() -> None:
    text = "ask the key-value store; sk-short; https://example.com/a:b; ghp is a name"
    assert list(find_secrets(text)) == [] and mask_secrets(text) == text


def test_redact_policy_masks_what_the_model_sees_and_keeps_the_chain() -> None:
    key = SECRETS["anthropic-key"]
    entries: list[dict[str, Any]] = [
        {
            "type": "user",
            "uuid": "u1",
            "parentUuid": None,
            "message": {"role": "user", "content": f"use {key}"},
        },
        {
            "type": "assistant",
            "uuid": "a1",
            "parentUuid": "u1",
            "message": {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": f"saw {key}", "signature": "sig"},
                    {
                        "type": "tool_use",
                        "id": "toolu_1",
                        "name": "Bash",
                        "input": {"command": f"curl -H 'x-api-key: {key}'"},
                    },
                ],
            },
        },
        {
            "type": "user",
            "uuid": "u2",
            "parentUuid": "a1",
            "message": {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_1",
                        "content": [{"type": "text", "text": SECRETS["private-key"]}],
                    }
                ],
            },
        },
    ]
    original = json.loads(json.dumps(entries))
    out = Redact().prune(entries, PruneContext())
    assert entries == original  # the input (and so the store) is untouched
    dumped = json.dumps(out)
    assert "A1b2C3d4E5" not in dumped.replace(json.dumps(f"saw {key}"), "")
    assert out[1]["message"]["content"][0] == entries[1]["message"]["content"][0]  # signed
    assert out[1]["message"]["content"][1]["id"] == "toolu_1"
    assert out[2]["message"]["content"][0]["tool_use_id"] == "toolu_1"
    assert [e["uuid"] for e in out] == ["u1", "a1", "u2"]
    assert "redact" in get_registry().names("pruning_policies")


def entry(n: int, text: str = "hello", session: str = "s") -> dict[str, Any]:
    return {
        "type": "user",
        "uuid": f"{session}-{n}",
        "sessionId": session,
        "message": {"role": "user", "content": text},
    }


@pytest.fixture
def store_url(in_tmp: Path) -> str:
    (in_tmp / "pyproject.toml").write_text(
        '[tool.flower]\nrun_dir = "runs"\n[tool.flower.sessions]\nbackend = "jsonfs"\n',
        encoding="utf-8",
    )
    return f"jsonfs://{in_tmp}/runs/transcripts"


def run(*args: str, stdin: str | None = None) -> Any:
    return CliRunner().invoke(build_app(), list(args), input=stdin)


@pytest.mark.usefixtures("english")  # the expected text is flower's English output
def test_scan_reports_location_never_the_secret(store_url: str) -> None:
    with open_session_store(store_url, settings=Settings()) as store:
        store.append(SessionKey("-p", "clean"), [entry(1)])
        store.append(
            SessionKey("-p", "leaky"),
            [entry(1, session="leaky"), entry(2, f"key {SECRETS['github-token']}", "leaky")],
        )
        store.append(
            SessionKey("-p", "leaky", "subagents/a"), [entry(3, SECRETS["url-password"], "leaky")]
        )
    result = run("sessions", "scan", "--json")
    assert result.exit_code == 1, result.output
    found = json.loads(result.stdout)
    assert [(f["session_id"], f["subpath"], f["uuid"], f["kind"], f["field"]) for f in found] == [
        ("leaky", None, "leaky-2", "github-token", "message.content"),
        ("leaky", "subagents/a", "leaky-3", "url-password", "message.content"),
    ]
    assert "aaaaaaaa" not in result.output and "S3cretPw" not in result.output
    clean = run("sessions", "scan", "clean")
    assert clean.exit_code == 0 and "no secrets found in 1 session" in clean.output


def _age(root: Path, session: str, days: float) -> int:
    """Make ``session`` ``days`` old; returns its new modified time (epoch ms)."""
    path = next(root.rglob(f"{session}.jsonl"))
    old = time.time() - days * 86400
    os.utime(path, (old, old))
    return path.stat().st_mtime_ns // 1_000_000


def test_gc_lists_then_deletes_on_confirmation_never_lineage(store_url: str, in_tmp: Path) -> None:
    root = in_tmp / "runs" / "transcripts"
    with open_session_store(store_url, settings=Settings()) as store:
        for sid in ("old1", "old2", "in-lineage", "archived-lineage", "fresh"):
            store.append(SessionKey("-p", sid), [entry(1, session=sid)])
    for sid in ("old1", "old2", "in-lineage", "archived-lineage"):
        _age(root, sid, 40)
    (in_tmp / "runs" / "lineage.json").write_text(
        json.dumps(
            {"workspace": os.path.realpath(in_tmp), "_woke": 1, "steps": {"a": "in-lineage"}}
        )
    )
    (in_tmp / "runs" / "old").mkdir()
    (in_tmp / "runs" / "old" / "lineage.json").write_text(
        json.dumps({"workspace": "/elsewhere", "_woke": 1, "steps": {"a": "archived-lineage"}})
    )

    dry = run("sessions", "gc", "--older-than", "30d", "--dry-run")
    assert dry.exit_code == 0, dry.output
    assert "old1" in dry.stdout and "old2" in dry.stdout and "fresh" not in dry.stdout
    assert "kept in-lineage: lineage still points at it" in dry.output
    assert "kept archived-lineage" in dry.output
    assert len(list(root.rglob("*.jsonl"))) == 5

    refused = run("sessions", "gc", "--older-than", "30d", stdin="n\n")
    assert refused.exit_code != 0 and len(list(root.rglob("*.jsonl"))) == 5

    done = run("sessions", "gc", "--older-than", "30d", "--yes")
    assert done.exit_code == 0, done.output
    left = sorted(p.stem for p in root.rglob("*.jsonl"))
    assert left == ["archived-lineage", "fresh", "in-lineage"]
    assert run("sessions", "gc", "--older-than", "thirty").exit_code == 2


def test_archive_exports_then_deletes_and_import_restores(store_url: str, in_tmp: Path) -> None:
    root = in_tmp / "runs" / "transcripts"
    with open_session_store(store_url, settings=Settings()) as store:
        store.append(SessionKey("-p", "old"), [entry(1, session="old"), entry(2, session="old")])
        store.append(SessionKey("-p", "old", "subagents/x"), [entry(3, "quote \"' ok", "old")])
        store.append(SessionKey("-p", "new"), [entry(1, session="new")])
    aged_ms = _age(root, "old", 90)
    out = in_tmp / "old.jsonl.gz"
    result = run("sessions", "archive", "--older-than", "60d", "-o", str(out), "--yes")
    assert result.exit_code == 0, result.output
    lines = [json.loads(x) for x in gzip.decompress(out.read_bytes()).splitlines()]
    assert [(x["key"]["session_id"], x["key"]["subpath"], x["entry"]["uuid"]) for x in lines] == [
        ("old", None, "old-1"),
        ("old", None, "old-2"),
        ("old", "subagents/x", "old-3"),
    ]
    assert {x["modified_ms"] for x in lines} == {aged_ms}  # the session's time, kept
    assert oct(out.stat().st_mode & 0o777) == "0o600"
    assert sorted(p.stem for p in root.rglob("*.jsonl")) == ["new"]
    again = run("sessions", "archive", "-o", str(out), "--yes")
    assert again.exit_code == 2 and "exists" in again.output
    misnamed = run("sessions", "archive", "-o", str(in_tmp / "old.txt"), "--yes")
    assert misnamed.exit_code == 2 and "name it *.jsonl.gz" in misnamed.output

    renamed = out.rename(in_tmp / "old-archive.bin")  # an archive is known by its content
    restored = run("sessions", "import", str(renamed))
    assert restored.exit_code == 0, restored.output
    with open_session_store(store_url, settings=Settings()) as store:
        assert store.load(SessionKey("-p", "old")) == [
            entry(1, session="old"),
            entry(2, session="old"),
        ]
        assert store.load(SessionKey("-p", "old", "subagents/x")) == [
            entry(3, "quote \"' ok", "old")
        ]
        (restored_info,) = [i for i in store.list_sessions("-p") if i.session_id == "old"]
    # restored as old as it was archived: a later gc --older-than still picks it
    assert restored_info.mtime_ms == aged_ms
    assert "old" in run("sessions", "gc", "--older-than", "60d", "--dry-run").stdout


def test_a_truncated_archive_imports_nothing(store_url: str, in_tmp: Path) -> None:
    with open_session_store(store_url, settings=Settings()) as store:
        store.append(SessionKey("-p", "s"), [entry(n) for n in range(50)])
    out = in_tmp / "all.jsonl.gz"
    assert run("sessions", "archive", "-o", str(out), "--keep").exit_code == 0
    out.write_bytes(out.read_bytes()[:-20])
    run("sessions", "rm", "s", "--yes")
    result = run("sessions", "import", str(out))
    assert result.exit_code != 0 and "gzip" in result.output
    with open_session_store(store_url, settings=Settings()) as store:
        assert store.load(SessionKey("-p", "s")) is None


def test_a_session_written_to_while_the_question_is_on_screen_is_kept(
    store_url: str, in_tmp: Path
) -> None:
    import time

    from flower.stores.retention import delete_unchanged, select_old

    day = 86_400_000
    with open_session_store(store_url, settings=Settings()) as store:
        for sid in ("quiet", "busy"):
            store.append(SessionKey("-p", sid), [entry(1, session=sid)])
            store.set_modified(SessionKey("-p", sid), int(time.time() * 1000) - 40 * day)
        chosen, _ = select_old(store, 30 * 86_400, set(), time.time())
        assert sorted(c.key.session_id for c in chosen) == ["busy", "quiet"]
        store.append(SessionKey("-p", "busy"), [entry(2, session="busy")])  # meanwhile
        assert delete_unchanged(store, chosen) == 1
        assert store.load(SessionKey("-p", "quiet")) is None
        assert store.load(SessionKey("-p", "busy")) == [
            entry(1, session="busy"),
            entry(2, session="busy"),
        ]


def test_gc_keeps_what_new_archived_lineage_points_at_and_refuses_an_unreadable_one(
    store_url: str, in_tmp: Path
) -> None:
    root = in_tmp / "runs" / "transcripts"
    with open_session_store(store_url, settings=Settings()) as store:
        for sid in ("before-new", "plain-old"):
            store.append(SessionKey("-p", sid), [entry(1, session=sid)])
    for sid in ("before-new", "plain-old"):
        _age(root, sid, 40)
    archived = in_tmp / "notes" / "archive" / "20261130-010203"  # where --new moved it
    archived.mkdir(parents=True)
    (archived / "lineage.json").write_text(
        json.dumps({"workspace": os.path.realpath(in_tmp), "woke": 3, "steps": {"a": "before-new"}})
    )
    dry = run("sessions", "gc", "--older-than", "30d", "--dry-run")
    assert dry.exit_code == 0, dry.output
    assert "kept before-new: lineage still points at it" in dry.output
    assert "1 session to delete" in dry.output
    (in_tmp / "runs" / "lineage.json").write_text('{"workspace": "/x", "steps": {"a": "plain')
    refused = run("sessions", "gc", "--older-than", "30d", "--yes")
    assert refused.exit_code == 1
    assert "cannot be read" in refused.output and "sessions it points at are unknown" in (
        refused.output
    )
    with open_session_store(store_url, settings=Settings()) as store:
        assert store.load(SessionKey("-p", "plain-old")) is not None  # nothing deleted blind


def test_an_archive_imported_twice_restores_uuidless_entries_once(
    store_url: str, in_tmp: Path
) -> None:
    key = SessionKey("-p", "anon")
    snapshot = {"type": "file-history-snapshot", "messageId": "m1", "snapshot": {}}
    with open_session_store(store_url, settings=Settings()) as store:
        store.append(key, [snapshot, entry(1, session="anon")])
    out = in_tmp / "a.jsonl.gz"
    assert run("sessions", "archive", "-o", str(out), "--yes").exit_code == 0
    for _ in range(2):
        assert run("sessions", "import", str(out)).exit_code == 0
    with open_session_store(store_url, settings=Settings()) as store:
        assert store.load(key) == [snapshot, entry(1, session="anon")]


def test_retention_never_selects_the_encryption_key_check_record(
    store_url: str, in_tmp: Path
) -> None:
    import time

    from flower.stores.encrypt import CHECK_KEY
    from flower.stores.retention import KEY_CHECK_PROJECT, select_old

    assert CHECK_KEY.project_key == KEY_CHECK_PROJECT
    with open_session_store(store_url, settings=Settings()) as store:
        store.append(CHECK_KEY, [{"type": "flower-key-check", "uuid": "k1"}])
        store.append(SessionKey("-p", "old"), [entry(1, session="old")])
        for key in (CHECK_KEY, SessionKey("-p", "old")):
            store.set_modified(key, int(time.time() * 1000) - 40 * 86_400_000)
        chosen, _ = select_old(store, 30 * 86_400, set(), time.time())
    assert [c.key.session_id for c in chosen] == ["old"]


def test_archive_without_yes_and_no_terminal_writes_no_archive(
    store_url: str, in_tmp: Path
) -> None:
    with open_session_store(store_url, settings=Settings()) as store:
        store.append(SessionKey("-p", "s"), [entry(1)])
    out = in_tmp / "all.jsonl.gz"
    refused = run("sessions", "archive", "-o", str(out))  # CliRunner: no terminal
    assert refused.exit_code == 2 and "add --yes, or --keep" in refused.output
    assert not out.exists()  # so the same name works on the next try
    assert run("sessions", "archive", "-o", str(out), "--yes").exit_code == 0
    assert out.exists()


def test_gc_keeps_what_the_lineage_of_another_workspace_points_at(in_tmp: Path) -> None:
    """A SQL lineage store is shared: gc from one workspace must not delete the session
    another workspace resumes next."""
    from flower.core.config import LineageConfig, SessionsConfig
    from flower.stores.open import open_lineage_store

    (in_tmp / "pyproject.toml").write_text(
        '[tool.flower.sessions]\nbackend = "sqlite"\n[tool.flower.lineage]\nbackend = "sqlite"\n',
        encoding="utf-8",
    )
    settings = Settings(
        sessions=SessionsConfig(backend="sqlite"), lineage=LineageConfig(backend="sqlite")
    )
    old_ms = int((time.time() - 40 * 86400) * 1000)
    with open_session_store(settings=settings) as store:
        for project, sid in (("-here", "idle-here"), ("-elsewhere", "elsewhere-resumes")):
            store.append(SessionKey(project, sid), [entry(1, session=sid)])
            store.set_modified(SessionKey(project, sid), old_ms)
    lineage = open_lineage_store(settings=settings)
    try:
        lineage.save(LineageRecord("/srv/elsewhere", 4, {"干活": "elsewhere-resumes"}))
    finally:
        lineage.close()  # type: ignore[attr-defined]

    done = run("sessions", "gc", "--older-than", "30d", "--yes")
    assert done.exit_code == 0, done.output
    assert "kept elsewhere-resumes: lineage still points at it" in done.output
    with open_session_store(settings=settings) as store:
        assert store.load(SessionKey("-elsewhere", "elsewhere-resumes")) is not None
        assert store.load(SessionKey("-here", "idle-here")) is None


def test_a_retention_selection_from_python_keeps_what_lineage_points_at(
    store_url: str, in_tmp: Path
) -> None:
    from flower.stores.retention import selection

    day = 86_400_000
    now = time.time()
    with open_session_store(store_url, settings=Settings()) as store:
        for sid, days in (("pointed", 40), ("old", 50), ("young", 1)):
            store.append(SessionKey("-p", sid), [entry(1, session=sid)])
            store.set_modified(SessionKey("-p", sid), int(now * 1000) - days * day)
        (in_tmp / "runs" / "lineage.json").write_text(
            json.dumps({"workspace": os.path.realpath(in_tmp), "steps": {"a": "pointed"}})
        )
        chosen, kept = selection(store, Settings(), in_tmp, "30d", now)
        assert [c.key.session_id for c in chosen] == ["old"]
        assert [c.key.session_id for c in kept] == ["pointed"]
        everything, _ = selection(store, Settings(), in_tmp, None, now)
        assert [c.key.session_id for c in everything] == ["old", "young"]
