"""The built-in plugins (``flower db``), the pruning warnings and doctor's traces line
speak the chosen language; ``--json`` stays the same bytes."""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from flower.cli.main import build_app
from flower.core.i18n import language
from flower.core.records import SessionKey
from flower.stores.prune import PruneDetail, PruningWarning, prune_in_detail
from flower_plugins.sql.schema import HEAD_REVISION

EXPECTED = {
    "en": {
        "help": "Schema of the SQL session stores (SQLite, PostgreSQL).",
        "empty": ": empty, no schema yet (head {head})",
        "upgraded": ": upgraded empty -> {head}",
        "already": ": already at {head}",
        "current": ": {head} (up to date; head {head})",
        "removed": "pruning policy 'drop-all' removed every entry of session s1",
        "traces": "off (no OTEL_TRACES_EXPORTER or OTEL_EXPORTER_OTLP_ENDPOINT set)",
    },
    "zh_CN": {
        "help": "SQL 会话存储(SQLite、PostgreSQL)的表结构。",
        "empty": ":为空,尚无表结构(最新 {head})",
        "upgraded": ":已从空升级到 {head}",
        "already": ":已经是 {head}",
        "current": ":{head}(最新;最新 {head})",
        "removed": "修剪策略 'drop-all' 删除了会话 s1 的全部条目",
        "traces": "关闭(未设置 OTEL_TRACES_EXPORTER 或 OTEL_EXPORTER_OTLP_ENDPOINT)",
    },
}


@pytest.fixture(params=sorted(EXPECTED))
def lang(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("FLOWER_LANG", request.param)
    with language(request.param):
        yield request.param


def flower(*args: str) -> Any:
    return CliRunner().invoke(build_app(), list(args))


def test_db_help_and_output(lang: str, in_tmp: Path) -> None:
    url = f"sqlite:///{in_tmp}/s.db"
    want = {k: v.format(head=HEAD_REVISION) for k, v in EXPECTED[lang].items()}
    helped = flower("db", "--help")
    assert helped.exit_code == 0 and want["help"] in helped.stdout, helped.output
    for args, text in (
        (("db", "current", "--url", url), "empty"),
        (("db", "upgrade", "--url", url), "upgraded"),
        (("db", "upgrade", "--url", url), "already"),
        (("db", "current", "--url", url), "current"),
    ):
        done = flower(*args)
        assert done.exit_code == 0 and f"{url}{want[text]}\n" == done.stdout, done.output
    as_json = flower("db", "current", "--url", url, "--json").stdout
    assert json.loads(as_json)["status"] == "up to date"  # data: never translated


class DropAll:
    name = "drop-all"

    def prune(self, entries: list[dict[str, Any]], ctx: Any) -> list[dict[str, Any]]:
        return []


class Ctx:
    key = SessionKey("-p", "s1")


def test_a_pruning_warning(lang: str) -> None:
    entry = {"type": "user", "uuid": "u1", "parentUuid": None, "message": {"content": "hi"}}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        detail = prune_in_detail([entry], [DropAll()], Ctx())  # type: ignore[arg-type]
    assert isinstance(detail, PruneDetail)
    said = [str(w.message) for w in caught if issubclass(w.category, PruningWarning)]
    assert len(said) == 1 and said[0].startswith(EXPECTED[lang]["removed"]), said


def test_doctor_traces_line(lang: str, in_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [name for name in os.environ if name.startswith("OTEL_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("FLOWER_PROBE_STRATEGY", "none")
    shown = flower("doctor")
    lines = [line for line in shown.stdout.splitlines() if EXPECTED[lang]["traces"] in line]
    assert len(lines) == 1, shown.stdout
    as_json = json.loads(flower("doctor", "--json").stdout)
    traces = next(c for c in as_json["checks"] if c["name"] == "traces")
    assert traces["detail"] == EXPECTED["en"]["traces"]  # --json is English in every language
