"""``flower sessions fork``'s choice of where to fork, and what a plugin registered, from Python."""

from __future__ import annotations

from pathlib import Path

from flower.core.config import Settings
from flower.core.fork import ForkMarks, fork_back, fork_marks, forked_from
from flower.core.i18n import language
from flower.core.plugins import get_registry
from flower.core.protocols import SessionStoreBase
from flower.core.records import SessionKey
from flower.stores.open import open_session_store


def _turn(n: int, parent: str | None) -> list[dict[str, object]]:
    return [
        {"type": "user", "uuid": f"u{n}", "parentUuid": parent, "message": {"content": f"q{n}"}},
        {
            "type": "assistant",
            "uuid": f"a{n}",
            "parentUuid": f"u{n}",
            "message": {"role": "assistant", "content": [{"type": "text", "text": f"r{n}"}]},
        },
    ]


def _said(store: SessionStoreBase, key: SessionKey) -> list[str]:
    """What the forked conversation holds (a fork adds a title entry of its own)."""
    texts = [e["message"]["content"] for e in store.load(key) or [] if e["type"] == "user"]
    return [t for t in texts if isinstance(t, str)]


def test_fork_back_forks_at_the_leaf_an_entry_or_turns_back(tmp_path: Path) -> None:
    key = SessionKey("p", "s")
    with open_session_store(f"sqlite:///{tmp_path}/s.db", settings=Settings()) as store:
        store.append(key, [*_turn(1, None), *_turn(2, "a1"), *_turn(3, "a2")])
        leaf, at = fork_back(store, key)
        assert at == "a3" and _said(store, leaf) == ["q1", "q2", "q3"]
        back, at = fork_back(store, key, turns_back=2)
        assert at == "a1" and _said(store, back) == ["q1"]
        there, at = fork_back(store, key, at="u2")
        assert at == "u2" and _said(store, there) == ["q1", "q2"]
        origin = forked_from(store.load(back) or [])
        assert origin is not None and origin.session_id == "s"


def test_fork_marks_say_where_a_session_came_from_and_where_others_left_it(
    tmp_path: Path,
) -> None:
    key = SessionKey("p", "s")
    with open_session_store(f"sqlite:///{tmp_path}/s.db", settings=Settings()) as store:
        store.append(key, [*_turn(1, None), *_turn(2, "a1")])
        back, _at = fork_back(store, key, turns_back=1)
        with language("en"):
            source, fork = fork_marks(store, key), fork_marks(store, back)
    assert source == ForkMarks("", {"a1": [f"session {back.session_id} was forked here"]})
    assert fork.title == ", forked from s at a1" and fork.notes == {}


def test_registered_by_names_what_each_plugin_registered() -> None:
    registry = get_registry()
    assert registry.registered_by("sql")["session_stores"] == sorted(
        n
        for n in registry.names("session_stores")
        if registry.get("session_stores", n).plugin == "sql"
    )
    assert "postgres" in registry.registered_by("sql")["session_stores"]
    assert registry.registered_by("no-such-plugin") == {}
