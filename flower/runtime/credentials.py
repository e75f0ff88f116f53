"""The missing-API-key rule, in one place: which variables hold credentials for the
Messages API, the error (exit 1, as docs/cli.md says) and its words. The engine checks
before its first call; ``flower "..."`` before any prompt, lock or file; ``flower
doctor`` reports the same variables."""

from __future__ import annotations

import os

from flower.core.errors import FlowerError
from flower.core.i18n import N_, _

KEY_VARIABLES = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")
"""The environment variables the ``anthropic`` SDK takes credentials from."""

NO_API_KEY = N_(
    "no API key: set ANTHROPIC_API_KEY (for example `export ANTHROPIC_API_KEY=sk-ant-...`, "
    "from https://console.anthropic.com/settings/keys) or ANTHROPIC_AUTH_TOKEN. "
    "`flower demo` runs without one."
)
"""An English msgid: ``_(NO_API_KEY)`` where it is raised, in the language of the run."""


class MissingAPIKeyError(FlowerError):
    """No credentials for the Messages API: none of :data:`KEY_VARIABLES` is set."""

    exit_code = 1


def keys_present() -> list[str]:
    """The names of :data:`KEY_VARIABLES` set to something other than blanks."""
    return [name for name in KEY_VARIABLES if os.environ.get(name, "").strip()]


def require_api_key() -> None:
    """Raise :class:`MissingAPIKeyError` (in the active language) when no key is set."""
    if not keys_present():
        raise MissingAPIKeyError(_(NO_API_KEY))
