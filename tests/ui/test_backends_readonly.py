"""The viewer over every built-in backend, and it never writes to any of them."""

from __future__ import annotations

import hashlib
import urllib.request
from pathlib import Path

import pytest
from ui_helpers import PROJECT, WORKING, Transcript, serve, working_session

from flower.core.config import SessionsConfig, Settings
from flower.core.records import SessionKey
from flower.stores.keyring import generate_key
from flower.stores.open import open_session_store
from flower.ui.readonly import ReadOnlyError, ReadOnlyStore
from flower_plugins.pruning.policies import trim_mark

PAGES = ("", f"s/{PROJECT}/{WORKING}", f"s/{PROJECT}/{WORKING}?view=pruned", "run")


def snapshot(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` with its content's hash (SQLite's -wal and -shm,
    which any reader of a WAL database may create, aside)."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.name.endswith(("-wal", "-shm"))
    }


def browse(settings: Settings) -> list[str]:
    served = serve(settings)
    try:
        pages = []
        for page in PAGES:
            with urllib.request.urlopen(served.url + page, timeout=20) as response:
                pages.append(response.read().decode())
        events = f"{served.url}s/{PROJECT}/{WORKING}/events?after=0"
        with urllib.request.urlopen(events, timeout=20) as stream:
            while not stream.readline().startswith(b"data: "):
                pass
        return pages
    finally:
        served.stop()
        served.viewer.close()  # type: ignore[attr-defined]


def seed(settings: Settings) -> None:
    entries = working_session(WORKING)
    # a tool result big enough for trim, so the pruned page would write its file if it could
    big = Transcript(WORKING)
    for n in range(8):
        big.tool_round(f"toolu_big{n}", "x" * 6000, 50_000 + n, "Read", file_path=f"/w/f{n}.py")
    big.entries[0]["parentUuid"] = entries[-1]["uuid"]
    with open_session_store(settings=settings) as store:
        store.append(SessionKey(PROJECT, WORKING), [*entries, *big.entries])


@pytest.mark.slow  # serves and browses every page
@pytest.mark.parametrize("backend", ["sqlite", "jsonfs", "sqlite-encrypted"])
def test_browsing_every_page_leaves_the_store_as_it_was(
    tmp_path: Path, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_dir = tmp_path / "runs"
    if backend == "jsonfs":
        url = f"jsonfs://{run_dir / 'transcripts'}"
    else:
        url = f"sqlite:///{run_dir / 'sessions.db'}"
    encrypt = backend.endswith("encrypted")
    if encrypt:
        monkeypatch.setenv("FLOWER_ENCRYPTION_KEY", generate_key())
    settings = Settings(
        run_dir=str(run_dir),
        sessions=SessionsConfig(backend=backend.split("-")[0], url=url, encrypt=encrypt),
    )
    seed(settings)
    before = snapshot(tmp_path)
    pages = browse(settings)
    assert "List the files of the demo project" in pages[0]
    assert "Bash" in pages[1]
    # with encryption on trim is off (its files would hold tool output in the clear)
    assert ("trimmed by trim" in pages[2]) is not encrypt
    assert snapshot(tmp_path) == before
    assert not (run_dir / "trimmed").exists()


@pytest.mark.postgres
def test_the_viewer_reads_postgres_and_writes_nothing(pg_url: str, tmp_path: Path) -> None:
    settings = Settings(
        run_dir=str(tmp_path / "runs"),
        sessions=SessionsConfig(backend="postgres", url=pg_url, auto_migrate=True),
    )
    seed(settings)
    with open_session_store(settings=settings) as store:
        listed_before = store.list_sessions(PROJECT)
        entries_before = store.load(SessionKey(PROJECT, WORKING))
    pages = browse(settings)
    assert WORKING in pages[0] and "Bash" in pages[1]
    with open_session_store(settings=settings) as store:
        assert store.list_sessions(PROJECT) == listed_before  # mtime untouched
        assert store.load(SessionKey(PROJECT, WORKING)) == entries_before


def test_the_viewers_store_refuses_every_write(tmp_path: Path) -> None:
    settings = Settings(sessions=SessionsConfig(url=f"sqlite:///{tmp_path / 's.db'}"))
    key = SessionKey(PROJECT, WORKING)
    with ReadOnlyStore(open_session_store(settings=settings)) as store:
        for write in (
            lambda: store.append(key, working_session(WORKING)),
            lambda: store.delete(key),
            lambda: store.set_modified(key, 0),
        ):
            with pytest.raises(ReadOnlyError, match="read-only"):
                write()
        assert store.load(key) is None


def test_a_trimmed_result_is_marked_inside_its_call(tmp_path: Path) -> None:
    settings = Settings(
        run_dir=str(tmp_path / "runs"),
        sessions=SessionsConfig(url=f"sqlite:///{tmp_path / 'runs' / 'sessions.db'}"),
    )
    seed(settings)
    html = browse(settings)[2]
    call = html[html.index('data-tool-id="toolu_big0"') :]
    call = call[: call.index("</article>")]
    assert '<span class="mark trimmed">trimmed by trim</span>' in call
    assert trim_mark() in call  # the pointer, made in the language flower speaks
