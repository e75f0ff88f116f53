"""The sessions listing, a copy report as data and a dry-run pruned view, from Python."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flower.core.config import Settings
from flower.core.fork import fork
from flower.core.i18n import language
from flower.core.keys import project_key
from flower.core.records import SessionKey
from flower.stores.copy import copy_sessions, select_sessions
from flower.stores.listing import listed_origin, listing
from flower.stores.open import open_session_store
from flower.stores.prune import PruningSessionStore
from flower.workflow.roles import known_sessions, run_roles


def _entry(uuid: str, parent: str | None, text: str) -> dict[str, object]:
    return {
        "type": "user",
        "uuid": uuid,
        "parentUuid": parent,
        "message": {"role": "user", "content": text},
    }


class NoProjects:
    """A store that cannot list its projects, only one project's sessions."""

    def __init__(self, inner: object) -> None:
        self.inner = inner

    def list_projects(self) -> list[str]:
        raise NotImplementedError

    def list_sessions(self, project: str) -> object:
        return self.inner.list_sessions(project)  # type: ignore[attr-defined]


def test_listing_is_newest_first_per_project_and_falls_back_to_the_workspace(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "ws"
    here = project_key(workspace)
    with open_session_store(f"sqlite:///{tmp_path}/s.db", settings=Settings()) as store:
        for project, session, mtime in ((here, "old", 1000), ("other", "mid", 2000)):
            store.append(SessionKey(project, session), [_entry(session, None, "hi")])
            store.set_modified(SessionKey(project, session), mtime)
        new = fork(store, SessionKey(here, "old"), session_id="new")
        assert [(r.session_id, r.project_key) for r in listing(store)] == [
            ("new", here),
            ("mid", "other"),
            ("old", here),
        ]
        assert [r.session_id for r in listing(store, "other")] == ["mid"]
        assert [r.session_id for r in listing(NoProjects(store), workspace=workspace)] == [  # type: ignore[arg-type]
            "new",
            "old",
        ]
        with pytest.raises(NotImplementedError):
            listing(NoProjects(store))  # type: ignore[arg-type]
        origin = listed_origin(store, new)
        assert origin is not None and origin.session_id == "old"
        assert listed_origin(store, SessionKey(here, "old")) is None


def test_known_sessions_come_from_the_manifest_and_nothing_when_it_is_unreadable(
    tmp_path: Path,
) -> None:
    settings = Settings(run_dir=str(tmp_path / "runs"))
    (tmp_path / "runs").mkdir()
    rows = [{"step": "干活", "session_id": "w", "ok": True}]
    (tmp_path / "runs" / "manifest.json").write_text(
        "".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8"
    )
    assert set(run_roles(settings)) == {"w"}
    with open_session_store(f"sqlite:///{tmp_path}/s.db", settings=Settings()) as store:
        roles, titles = known_sessions(settings, store, [("p", "w"), ("p", "x")], str)
    assert set(roles) == {"w"} and roles["w"].role == "worker"
    assert set(titles) == {"w"} and titles["w"]
    assert run_roles(Settings(run_dir=str(tmp_path / "none"))) == {}


def test_a_copy_report_as_data_names_each_conflict(tmp_path: Path) -> None:
    key = SessionKey("p", "s")
    with (
        open_session_store(f"sqlite:///{tmp_path}/a.db", settings=Settings()) as source,
        open_session_store(f"sqlite:///{tmp_path}/b.db", settings=Settings()) as target,
    ):
        source.append(key, [_entry("u1", None, "one")])
        target.append(key, [_entry("u1", None, "not one")])
        report = copy_sessions(source, target, select_sessions(source), verify=False)
    data = report.as_dict()
    assert data["conflicts"] == [
        {"project_key": "p", "session_id": "s", "subpath": None, "uuid": "u1"}
    ]
    assert data["verified"] is None and data["entries_read"] == 1


def test_a_copy_report_in_words_says_the_figures_the_conflicts_and_the_check(
    tmp_path: Path,
) -> None:
    key = SessionKey("p", "s")
    with (
        open_session_store(f"sqlite:///{tmp_path}/a.db", settings=Settings()) as source,
        open_session_store(f"sqlite:///{tmp_path}/b.db", settings=Settings()) as target,
    ):
        source.append(key, [_entry("u1", None, "one"), _entry("u2", "u1", "two")])
        target.append(key, [_entry("u1", None, "not one")])
        report = copy_sessions(source, target, select_sessions(source), verify=True)
        again = copy_sessions(source, target, [], verify=True)
        unverified = copy_sessions(source, target, [], verify=False)
    with language("en"):
        said, nothing = report.said("a.db", "b.db"), again.said("a.db", "b.db")
    assert said.summary == (
        "copied 1 session (1 transcript) from a.db to b.db: 2 entries read, 1 written, "
        "0 already there, 1 conflict"
    )
    assert said.conflicts == ["conflict: s already holds a different entry u1 (kept)"]
    assert said.verified == "verify: 1 transcript differs"
    assert len(said.differences) == 1 and said.differences[0].startswith("differs: s at entry 0: ")
    assert nothing.verified == "verify: both sides equal" and nothing.conflicts == []
    assert unverified.said("a.db", "b.db").verified is None


def test_a_dry_run_view_says_so_to_its_policies(tmp_path: Path) -> None:
    with open_session_store(f"sqlite:///{tmp_path}/s.db", settings=Settings()) as store:
        view = PruningSessionStore.from_settings(store, Settings(), dry_run=True)
        assert view.context(None).options == {"dry_run": True}
        assert PruningSessionStore.from_settings(store, Settings()).options == {}
