"""load_lineage opens the configured lineage store; one that cannot be opened remembers
nothing and the work goes on, a mistake in its configuration is an error."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from flower.core.config import LineageConfig, Settings
from flower.core.errors import ConfigError
from flower.core.lineage import Lineage, NoLineageStore
from flower.stores.lineage import configured_lineage_store, load_lineage


def sqlite_lineage(url: str, run_dir: Path) -> Settings:
    return Settings(run_dir=str(run_dir), lineage=LineageConfig(backend="sqlite", url=url))


@pytest.mark.usefixtures("english")  # the warning is read in English
def test_a_store_that_cannot_be_opened_remembers_nothing(
    in_tmp: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (in_tmp / "a-file").write_text("not a folder")
    settings = sqlite_lineage(f"sqlite:///{in_tmp / 'a-file' / 'lineage.db'}", in_tmp / "runs")
    with caplog.at_level(logging.WARNING, "flower"):
        lineage = load_lineage(in_tmp, settings=settings)
    assert isinstance(lineage.store, NoLineageStore) and not lineage.durable
    assert "continuing without continuity" in caplog.text
    lineage.record_session("干活", "s1")  # the work goes on
    assert load_lineage(in_tmp, settings=settings).steps == {}


def test_a_mistake_in_its_configuration_is_an_error(in_tmp: Path) -> None:
    settings = Settings(lineage=LineageConfig(backend="no-such-backend"))
    with pytest.raises(ConfigError, match="no-such-backend"):
        load_lineage(in_tmp, settings=settings)


def test_to_read_only_a_missing_store_is_none_and_not_created(
    in_tmp: Path, caplog: pytest.LogCaptureFixture
) -> None:
    db = in_tmp / "runs" / "lineage.db"
    settings = sqlite_lineage(f"sqlite:///{db}", in_tmp / "runs")
    with caplog.at_level(logging.WARNING, "flower"):
        store = configured_lineage_store(settings, read_only=True)
    assert isinstance(store, NoLineageStore)
    assert caplog.text == "" and not db.exists()


def test_the_core_lineage_works_on_the_store_it_is_given(in_tmp: Path) -> None:
    settings = Settings(run_dir=str(in_tmp / "runs"))
    store = configured_lineage_store(settings)
    Lineage.load(in_tmp, store=store, settings=settings).record_session("干活", "s1")
    assert load_lineage(in_tmp, settings=settings).steps == {"干活": "s1"}


MOVED = b'{"workspace": "/moved/from/here", "woke": 3, "steps": {"work": "s-old"}}\n'
CUT_OFF = b'{"workspace": "/x", "woke": "three"'


@pytest.mark.parametrize(
    ("backend", "old"),
    [("json", MOVED), ("json", CUT_OFF), ("sqlite", MOVED)],
    ids=["json-moved", "json-unreadable", "sqlite-moved"],
)
def test_record_session_sets_the_old_lineage_aside_first_as_a_wake_does(
    in_tmp: Path, backend: str, old: bytes
) -> None:
    runs = in_tmp / "runs"
    runs.mkdir()
    if backend == "json":
        settings = Settings(run_dir=str(runs))
        (runs / "lineage.json").write_bytes(old)
    else:
        settings = sqlite_lineage(f"sqlite:///{runs / 'lineage.db'}", runs)
        Lineage.load("/moved/from/here", store=configured_lineage_store(settings)).record_session(
            "work", "s-old"
        )
    lineage = load_lineage(in_tmp, settings=settings)
    lineage.record_session("work", "s-new")
    archives = list((in_tmp / "notes" / "archive").glob("*/lineage.json"))
    assert len(archives) == 1, "the old record was not set aside"
    kept = archives[0].read_bytes()
    assert kept == old if backend == "json" else b"s-old" in kept
    assert lineage.fresh is not None and lineage.fresh.archived == str(archives[0].parent)
    assert load_lineage(in_tmp, settings=settings).steps == {"work": "s-new"}


def test_a_sealed_lineage_store_keeps_update_and_mismatch_and_passes_the_contract(
    tmp_path: Path,
) -> None:
    """Encryption wraps the lineage store without losing its optional capabilities: the
    multi-process merge and the moved-record probe pass their contract cases (none
    skipped) through SealedLineageStore; and a bad record is refused with flower's
    error before the sealer sees it (it raised TypeError for an unencodable extra)."""
    import itertools

    from flower.core.protocols import MergingLineageStore, MismatchLineageStore
    from flower.stores.encrypt import FileSealer
    from flower.stores.keyring import Keyring
    from flower.stores.lineage import SealedLineageStore
    from flower.testing.contract import check_lineage_store, lineage_case_names
    from flower_plugins.jsonfs import JsonLineageStore

    sealer = FileSealer(Keyring((bytes(range(32)),), "test"))
    counter = itertools.count()

    def factory() -> SealedLineageStore:
        return SealedLineageStore(
            JsonLineageStore(tmp_path / f"l{next(counter)}" / "lineage.json"), sealer
        )

    assert isinstance(factory(), MergingLineageStore)
    assert isinstance(factory(), MismatchLineageStore)
    report = check_lineage_store(factory)
    assert report.skipped == [] and sorted(report.passed) == sorted(lineage_case_names())
