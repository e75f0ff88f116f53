"""The documentation site builds with ``mkdocs build --strict``: a broken link fails."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def _build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_site_builds_strict(tmp_path: Path) -> None:
    done = _build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert done.returncode == 0, done.stderr
    site = tmp_path / "site"
    for page in ("getting-started", "context-economy", "claude", "cli-reference", "api"):
        assert (site / page / "index.html").is_file(), page
    api = (site / "api" / "index.html").read_text(encoding="utf-8")
    # mkdocstrings rendered the docstrings, not the bare ::: directives
    assert "as_claude_session_store" in api and ":::" not in api


def test_every_page_is_in_the_nav() -> None:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))

    def pages(items: list) -> set[str]:
        found: set[str] = set()
        for item in items:
            for value in item.values():
                found |= pages(value) if isinstance(value, list) else {value}
        return found

    in_nav = pages(config["nav"])
    on_disk = {p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md")}
    assert on_disk - in_nav == set(), "add these pages to the nav in mkdocs.yml"
    assert in_nav - on_disk == set(), "the nav names pages that do not exist"


def test_a_broken_link_fails_the_build(tmp_path: Path) -> None:
    """Our configuration really is strict about links and anchors."""
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# Home\n\n[gone](missing.md)\n", encoding="utf-8")
    config.update(docs_dir=str(docs), nav=[{"Home": "index.md"}])
    config["plugins"] = ["search"]
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump(config), encoding="utf-8")
    done = _build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert done.returncode != 0
    assert "missing.md" in done.stderr

    (docs / "index.md").write_text("# Home\n\n[nowhere](#no-such-heading)\n", encoding="utf-8")
    done = _build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert done.returncode != 0
    assert "no-such-heading" in done.stderr
