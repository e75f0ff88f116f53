"""The wheel ships the Alembic migrations as package data and no top-level ``alembic``."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "build",
            "--wheel",
            "--no-isolation",
            "--outdir",
            str(out),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
    )
    (built,) = out.glob("flower-*.whl")
    return built


def test_wheel_contains_migrations_under_the_flower_package(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert "flower/_migrations/env.py" in names
    assert any(n.startswith("flower/_migrations/versions/") and n.endswith(".py") for n in names)


def test_wheel_marks_both_packages_typed(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert {"flower/py.typed", "flower_plugins/py.typed"} <= set(names)


def test_wheel_has_no_importable_alembic_package(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert not [n for n in names if n.startswith("alembic/")]
    assert not [n for n in names if n.endswith("_migrations/__init__.py")]


def test_wheel_declares_console_script_and_plugin_entry_points(wheel: Path) -> None:
    zf = zipfile.ZipFile(wheel)
    (ep,) = [n for n in zf.namelist() if n.endswith("entry_points.txt")]
    text = zf.read(ep).decode()
    assert "flower = flower.cli.main:main" in text
    for builtin in ("sql", "jsonfs", "pruning", "probes", "redact"):
        assert f"{builtin} = flower_plugins.{builtin}" in text


def test_import_alembic_is_the_real_library() -> None:
    out = subprocess.run(
        [sys.executable, "-c", "import alembic, alembic.command; print(alembic.__file__)"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    assert "site-packages" in out
    assert not out.startswith(str(ROOT / "alembic"))


def test_the_runtime_errors_a_caller_catches_are_exported_and_are_flower_errors() -> None:
    import flower

    for name in ("MissingAPIKeyError", "InvalidRunOptionError", "UnknownToolError"):
        assert name in flower.__all__
        assert issubclass(getattr(flower, name), flower.FlowerError)


def test_wheel_ships_the_viewers_templates_and_assets(wheel: Path) -> None:
    """``flower ui`` works offline from the wheel: every page and asset is inside it."""
    names = zipfile.ZipFile(wheel).namelist()
    ui = ROOT / "flower" / "ui"
    shipped = [p for p in (*ui.glob("templates/*.html"), *ui.glob("static/*")) if p.is_file()]
    assert {"templates/session.html", "static/viewer.js", "static/viewer.css"} <= {
        p.relative_to(ui).as_posix() for p in shipped
    }
    for path in shipped:
        assert f"flower/ui/{path.relative_to(ui).as_posix()}" in names
        text = path.read_text(encoding="utf-8")
        for remote in ('src="http', 'href="http', 'src="//', 'href="//', "url(http", "@import"):
            assert remote not in text, f"{path.name} loads {remote}... from the network"


def test_wheel_declares_the_ui_extra(wheel: Path) -> None:
    zf = zipfile.ZipFile(wheel)
    (metadata,) = [n for n in zf.namelist() if n.endswith(".dist-info/METADATA")]
    text = zf.read(metadata).decode()
    assert "Provides-Extra: ui" in text
    for package in ("starlette", "uvicorn", "jinja2"):
        assert any(
            line.startswith(f"Requires-Dist: {package}") and "extra == 'ui'" in line
            for line in text.splitlines()
        ), package


def test_wheel_ships_the_message_catalogs(wheel: Path) -> None:
    """A plain ``pip install`` speaks Chinese without Babel: the compiled .mo is inside."""
    names = zipfile.ZipFile(wheel).namelist()
    assert "flower/locale/zh_CN/LC_MESSAGES/flower.mo" in names
