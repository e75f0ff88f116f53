"""The ``flower`` console script, with a cache for ``--help`` in front of typer.

Importing typer alone costs about six times a bare interpreter start, so a help
screen that typer has already rendered once is kept on disk and printed again
without importing it. The cache is exact, not approximate: an entry is used only
when everything the text depends on is unchanged, namely flower's version and
source files, the interpreter, the arguments, the terminal width, every ``FLOWER_*``
variable and the folders on ``sys.path`` (installing, upgrading or removing any
distribution, a plugin included, changes their modification time). A help screen
that printed anything on stderr (a broken plugin's warning) or did not exit 0 is
never cached. ``FLOWER_NO_HELP_CACHE=1`` turns the cache off.

This module runs before anything else: it imports only the standard library's
cheapest modules, and ``flower.cli.main`` (typer) on every other path.
"""

from __future__ import annotations

import io
import os
import sys
import zlib

import flower  # already loaded: it is this module's parent package

HELP_OPTIONS = frozenset(("--help", "-h"))
CACHE_FORMAT = "1"
"""Bumped when what a cache file holds changes."""
_ENV_PASSED = ("NO_COLOR", "FORCE_COLOR", "TERM")


def main() -> None:
    """Console-script entry point."""
    argv = sys.argv[1:]
    if argv == ["--version"]:
        sys.stdout.write(f"flower {flower.__version__}\n")  # what typer's --version prints
        return
    if is_help_request(argv) and os.environ.get("FLOWER_NO_HELP_CACHE") != "1":
        key = cache_key(argv)
        path = cache_path(key)
        cached = read_cached(path, key)
        if cached is not None:
            sys.stdout.write(cached)
            sys.stdout.flush()
            return
        render_and_cache(argv, path, key)
        return
    from flower.cli.main import main as run_cli

    run_cli(argv)


def is_help_request(argv: list[str]) -> bool:
    """``--help``/``-h`` after nothing but command words: ``flower sessions show -h``."""
    if not argv or argv[-1] not in HELP_OPTIONS:
        return False
    return all(word.isascii() and word.replace("-", "").isalnum() for word in argv[:-1])


def terminal_columns() -> int:
    """The width click formats help for, found as ``shutil.get_terminal_size`` does."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 80
    return columns


def _source_stamp() -> str:
    """Newest modification time and count of flower's own source files (editable installs)."""
    newest = count = 0
    packages = os.path.dirname(os.path.dirname(flower.__file__ or ""))
    stack = [os.path.join(packages, "flower"), os.path.join(packages, "flower_plugins")]
    while stack:
        try:
            scan = os.scandir(stack.pop())
        except OSError:
            continue
        with scan:
            for item in scan:
                if item.name.endswith(".py"):
                    count += 1
                    newest = max(newest, item.stat().st_mtime_ns)
                elif item.name != "__pycache__" and item.is_dir(follow_symlinks=False):
                    stack.append(item.path)
    return f"{newest}:{count}"


def _folder_stamp(folder: str) -> str:
    try:
        return str(os.stat(folder or ".").st_mtime_ns)
    except OSError:
        return "-"


def cache_key(argv: list[str]) -> str:
    """Everything the help text depends on, as one line."""
    parts = [
        CACHE_FORMAT,
        flower.__version__,
        sys.executable,
        sys.version,
        "\x1f".join(argv),
        str(terminal_columns()),
        _source_stamp(),
        *(f"{name}={os.environ.get(name, '')}" for name in _ENV_PASSED),
        *sorted(f"{k}={v}" for k, v in os.environ.items() if k.startswith("FLOWER_")),
        *(f"{folder}@{_folder_stamp(folder)}" for folder in sys.path),
    ]
    return "\x1e".join(parts).replace("\n", " ")


def cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "flower", "help")


def cache_path(key: str) -> str:
    return os.path.join(cache_dir(), f"{zlib.crc32(key.encode()):08x}.txt")


def read_cached(path: str, key: str) -> str | None:
    """The cached text for ``key``; ``None`` when missing, stale, foreign or unreadable."""
    try:
        with open(path, encoding="utf-8") as handle:
            stored_key = handle.readline().rstrip("\n")
            text = handle.read()
    except (OSError, UnicodeDecodeError):
        return None
    return text if stored_key == key else None


def write_cached(path: str, key: str, text: str) -> None:
    """Best effort, atomic, private: a failure only means the next help is slow too."""
    from flower.core.fileperms import replaced_atomically  # typer is loaded by now anyway

    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        with replaced_atomically(path, durable=False) as handle:
            handle.write(f"{key}\n{text}".encode())
    except OSError:
        pass


def render_and_cache(argv: list[str], path: str, key: str) -> None:
    """Run the real CLI with its output captured; replay it, and keep it if it is clean."""
    from flower.cli.main import main as run_cli

    out, err = io.StringIO(), io.StringIO()
    real_out, real_err = sys.stdout, sys.stderr
    code: int | str | None = 0
    sys.stdout, sys.stderr = out, err
    try:
        run_cli(argv)
    except SystemExit as exc:
        code = exc.code
    finally:
        sys.stdout, sys.stderr = real_out, real_err
        real_err.write(err.getvalue())
        real_out.write(out.getvalue())
        real_out.flush()
    if code in (0, None) and not err.getvalue() and out.getvalue():
        write_cached(path, key, out.getvalue())
    if code not in (0, None):
        raise SystemExit(code)


if __name__ == "__main__":  # python -m flower.cli.launch
    main()
