"""Who each session was, read from the manifest (issue 29 item 9): the role from the run
label's step and marks, the title from the user's request in the clarifier's prompt."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from flower.core.config import Settings, WorkflowConfig
from flower.core.fork import fork_back
from flower.core.i18n import _, language, translations
from flower.core.records import SessionKey
from flower.stores.open import open_session_store
from flower.workflow.clarify import request_in
from flower.workflow.prompts import CLARIFY_PROMPT, NO_REQUEST
from flower.workflow.roles import ListedSession, Titles, listed_sessions, session_roles


def rows(*lines: tuple[str, str], **extra: Any) -> list[dict[str, Any]]:
    return [{"step": step, "session_id": sid, "ok": True, **extra} for step, sid in lines]


def test_each_session_gets_the_role_of_its_first_run() -> None:
    manifest = [
        *rows(("确认需求", "c"), ("设定目标", "g"), ("干活", "w"), ("干活·判定#1", "j1")),
        {"step": "干活", "session_id": "w2", "ok": True, "retired": ["w"]},  # a relay
        *rows(("干活#round2", "w2"), ("干活·判定#2", "j2"), ("lint", "x"), ("干活#retry1", "w")),
        {"step": "干活", "ok": False},  # no session: nothing to say
    ]
    found = session_roles(manifest)
    assert {sid: (r.role, r.step, r.label) for sid, r in found.items()} == {
        "c": ("clarifier", "确认需求", "确认需求"),
        "g": ("goals", "设定目标", "设定目标"),
        "w": ("worker", "干活", "干活"),
        "j1": ("judge", "干活", "干活·判定#1"),
        "w2": ("relay", "干活", "干活"),  # resumed later under plain labels: still the relay
        "j2": ("judge", "干活", "干活·判定#2"),
        "x": ("", "lint", "lint"),  # a step of one's own workflow: no built-in role
    }
    assert {r.clarifier for r in found.values()} == {"c"}
    en = translations("en").gettext
    assert found["j2"].shown_role(en) == "judge" and found["j2"].shown_step(en) == "work·judge#2"
    assert found["x"].shown_role(en) == "" and found["x"].shown_step(en) == "lint"


def test_step_names_come_from_the_settings_or_any_languages_name() -> None:
    settings = Settings(workflow=WorkflowConfig(clarify_step="brief", work_step="build"))
    found = session_roles(rows(("brief", "c"), ("build·判定#1", "j"), ("build", "w")), settings)
    assert [found[s].role for s in "cjw"] == ["clarifier", "judge", "worker"]
    # a key written under the step's shown name (English) is the same step
    found = session_roles(rows(("confirm the brief", "c"), ("work", "w")))
    assert [found[s].role for s in "cw"] == ["clarifier", "worker"]


def test_the_request_is_read_from_a_clarifier_prompt_of_any_language() -> None:
    for lang in ("en", "zh_CN"):
        with language(lang):
            prompt = _(CLARIFY_PROMPT)
            assert request_in(prompt.format(request="count the lines")) == "count the lines"
            assert request_in(prompt.format(request=_(NO_REQUEST))) is None
    assert request_in("Check one by one whether the goals are met") is None


def test_a_title_is_the_request_else_the_step() -> None:
    with language("en"):
        prompt = _(CLARIFY_PROMPT).format(request="tidy   the\nnotes")
    transcripts = {"c": [{"type": "user", "message": {"role": "user", "content": prompt}}]}
    loaded: list[str] = []

    def load(project: str, sid: str) -> list[dict[str, Any]] | None:
        loaded.append(sid)
        return transcripts.get(sid)

    en = translations("en").gettext
    roles = session_roles(rows(("确认需求", "c"), ("干活", "w"), ("干活·判定#1", "j")))
    titles = Titles(roles, load, en)
    assert [titles("p", s) for s in ("c", "w", "j", "other")] == [
        "tidy the notes",
        "tidy the notes",
        "tidy the notes",
        None,  # not the manifest's: the caller keeps its own title
    ]
    assert loaded == ["c"]  # the clarifier read once
    without = Titles(session_roles(rows(("干活", "w"), ("干活·判定#1", "j"))), load, en)
    assert [without("p", s) for s in ("w", "j")] == ["work", "work·judge#1"]


def test_listed_sessions_are_flower_sessions_lists_rows(in_tmp: Path) -> None:
    settings = Settings()
    manifest = rows(("确认需求", "c"), ("干活", "w"))
    (in_tmp / "runs").mkdir()
    (in_tmp / "runs" / "manifest.json").write_text(
        "".join(json.dumps(row) + "\n" for row in manifest), encoding="utf-8"
    )
    with language("en"):
        prompt = _(CLARIFY_PROMPT).format(request="count the lines")
    turn = {"type": "user", "uuid": "u1", "parentUuid": None, "message": {"content": prompt}}
    with open_session_store(f"sqlite:///{in_tmp}/s.db", settings=settings) as store:
        for sid in ("c", "w", "other"):
            store.append(SessionKey("p", sid), [{**turn, "uuid": f"u-{sid}"}])
        fork, _at = fork_back(store, SessionKey("p", "other"))
        plain = listed_sessions(settings, store)
        found = listed_sessions(
            settings, store, "p", forks=True, gettext=translations("en").gettext
        )
    assert {r.row.session_id for r in plain} == {"c", "w", "other", fork.session_id}
    by_id = {r.row.session_id: r for r in found}
    assert by_id["c"].known is not None and by_id["c"].known.role == "clarifier"
    assert by_id["w"].title == "count the lines" and by_id["other"] == ListedSession(
        by_id["other"].row, None, None, None
    )
    origin = by_id[fork.session_id].forked_from
    assert origin is not None and origin.session_id == "other"
    shown = by_id["w"].as_json(forks=True)
    assert shown["role"] == "worker" and shown["step"] == shown["label"] == "干活"
    assert shown["title"] == "count the lines" and shown["forked_from"] is None
    assert "forked_from" not in by_id["w"].as_json()
