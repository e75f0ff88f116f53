"""Masking secrets before anything is shown: passwords in URLs, secret-looking options.

Used by every CLI output and error message that may carry a store URL, so a
``postgresql+psycopg://user:secret@host/db`` never reaches a terminal or a log.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from urllib.parse import urlsplit, urlunsplit

MASK = "***"

# scheme://user:password@  -- the password may hold anything but whitespace; the
# greedy class backtracks to the last '@' before the host, as URL parsers do.
_URL_PASSWORD = re.compile(
    r"(?P<head>\b[A-Za-z][A-Za-z0-9+.-]*://[^\s:/@]*:)(?P<pw>[^\s]*?)(?=@[^\s@]*(?:[/\s?#]|$))"
)
_QUERY_SECRET = re.compile(
    r"(?P<head>[?&](?:password|sslpassword|passwd|pwd|token|secret|api_key)=)(?P<pw>[^&\s#]*)", re.I
)
_SECRET_KEY = re.compile(r"pass(word|wd)?|secret|token|api[_-]?key|credential", re.I)


def redact_url(url: str) -> str:
    """``url`` with the password part of its user info (and secret query values) masked."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return redact_text(url)
    if not parts.scheme or "@" not in parts.netloc:
        # also a password holding an unencoded "/", "?" or "#", which ends the netloc
        # early for urlsplit: the text scan still finds it before the host's "@"
        return redact_text(url)
    userinfo, _, host = parts.netloc.rpartition("@")
    if ":" in userinfo:
        user = userinfo.split(":", 1)[0]
        netloc = f"{user}:{MASK}@{host}"
        url = urlunsplit(parts._replace(netloc=netloc))
    return _QUERY_SECRET.sub(lambda m: m["head"] + MASK, url)


def redact_text(text: str) -> str:
    """Mask every URL password found anywhere in ``text`` (error messages, logs)."""
    text = _URL_PASSWORD.sub(lambda m: m["head"] + MASK, text)
    return _QUERY_SECRET.sub(lambda m: m["head"] + MASK, text)


def redact_value(value: object, key: str = "") -> object:
    """Recursively mask URL passwords and values stored under secret-looking keys."""
    if isinstance(value, str):
        if key and _SECRET_KEY.search(key) and value:
            return MASK
        return redact_text(value)
    if isinstance(value, Mapping):
        return {k: redact_value(v, str(k)) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_value(v, key) for v in value]
    return value
