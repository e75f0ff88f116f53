"""The ``[tool.flower]`` table of the nearest pyproject.toml, read without msgspec.

:func:`find_pyproject` is where the settings come from (flower.core.config decodes the
table); :func:`configured_language` reads only the language from it, cheaply, so
``flower --help`` speaks it before any command module is loaded.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from flower.core.errors import ConfigError
from flower.core.i18n import _, checked_language, environment_language

LANGUAGE_VARIABLE = "FLOWER_LANGUAGE"
"""The ``language`` setting from the environment (``FLOWER_<KEY>``, like every key)."""


def find_pyproject(start: Path | None = None) -> tuple[Path, dict[str, Any]] | None:
    """The nearest pyproject.toml (walking up) that has a ``[tool.flower]`` table."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        candidate = folder / "pyproject.toml"
        if not candidate.is_file():
            continue
        import tomllib  # here: --help in a directory without one does not pay for it

        try:
            data = tomllib.loads(candidate.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(
                _("{file}: not valid TOML: {error}").format(file=candidate, error=exc)
            ) from exc
        table = data.get("tool", {}).get("flower")
        if table is not None:
            if not isinstance(table, dict):
                raise ConfigError(_("{file}: [tool.flower] must be a table").format(file=candidate))
            return candidate, table
    return None


def configured_language(environ: Mapping[str, str], start: Path | None = None) -> str:
    """The language the settings will choose, read before they are: ``FLOWER_LANGUAGE``
    or ``[tool.flower] language``, else the environment's (:func:`environment_language`).

    Nothing here raises: a settings file that cannot be read, or a language it names
    that flower does not speak, leaves the environment's language, and the command that
    loads the settings reports the mistake.
    """
    try:
        value: object = environ.get(LANGUAGE_VARIABLE)
        if not value:
            found = find_pyproject(start)
            value = found[1].get("language") if found is not None else None
        if isinstance(value, str) and value:
            return checked_language(value, LANGUAGE_VARIABLE)
    except (ConfigError, OSError):
        pass
    return environment_language(environ)


__all__ = ["LANGUAGE_VARIABLE", "configured_language", "find_pyproject"]
