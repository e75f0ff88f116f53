"""Common secret shapes: what the ``redact`` policy masks and ``sessions scan`` finds.

Each shape has a kind (``anthropic-key``, ``aws-access-key``...) and one regular
expression; all of them are matched in one pass by a combined pattern. A match is
reported by kind and position only: the secret itself never leaves this module.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

# Order matters: the first alternative that matches at a position wins, so the more
# specific shapes (sk-ant-) come before the general ones (sk-).
SHAPES: dict[str, str] = {
    "private-key": (
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?:[\s\S]*?-----END [A-Z0-9 ]*PRIVATE KEY-----"
        r"|[\s\S]*\Z)"
    ),
    "anthropic-key": r"\bsk-ant-[A-Za-z0-9_\-]{20,}",
    "openai-key": r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}",
    "aws-access-key": r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b",
    "aws-secret-key": (
        # also the JSON the AWS CLI prints ("SecretAccessKey": "..."); a key may end in / or +
        r"(?i:aws_?secret_?access_?key|aws_?secret|secretaccesskey)[\"']?\s*[:=]\s*[\"']?"
        r"[A-Za-z0-9/+=]{40}(?![A-Za-z0-9/+=])"
    ),
    "github-token": r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})",
    "slack-token": r"\bxox[abposre]-[A-Za-z0-9\-]{10,}",
    "bearer-token": r"(?i:\bbearer)\s+[A-Za-z0-9._~+/\-]{16,}=*",
    # the password runs to the last "@" before the host (it may hold "@"); the user may be
    # empty (redis://:pw@host); a password already masked (***, [REDACTED...], ${VAR}) is none
    "url-password": (
        r"\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/@]*:(?!\*+@|\[REDACTED|\$\{)[^\s/]+@(?=[^\s@/])"
    ),
}
_COMBINED = re.compile("|".join(f"(?P<{k.replace('-', '_')}>{v})" for k, v in SHAPES.items()))
_CHEAP_HINTS = (
    "-----BEGIN",
    "sk-",
    "AKIA",
    "ASIA",
    "ABIA",
    "ACCA",
    "aws",
    "AWS",
    "gh",
    "github_pat_",
    "xox",
    "earer",
    "EARER",
    "://",
)


def _kind(match: re.Match[str]) -> str:
    return (match.lastgroup or "secret").replace("_", "-")


def might_hold_secret(text: str) -> bool:
    """A cheap pre-check: False means :func:`find_secrets` would find nothing."""
    return any(hint in text for hint in _CHEAP_HINTS)


def find_secrets(text: str) -> Iterator[tuple[str, int, int]]:
    """``(kind, start, end)`` of every secret shape in ``text``."""
    if not might_hold_secret(text):
        return
    for match in _COMBINED.finditer(text):
        yield _kind(match), match.start(), match.end()


def _mask(match: re.Match[str]) -> str:
    kind = _kind(match)
    if kind == "url-password":
        # Keep scheme and user so the text still reads as a URL: scheme://user:***@
        text = match.group(0)
        head, _, _ = text[:-1].rpartition(":")
        return f"{head}:[REDACTED:{kind}]@"
    if kind == "bearer-token":
        return f"{match.group(0).split()[0]} [REDACTED:{kind}]"
    return f"[REDACTED:{kind}]"


def mask_secrets(text: str) -> str:
    """``text`` with every secret shape replaced by ``[REDACTED:<kind>]``."""
    if not might_hold_secret(text):
        return text
    return _COMBINED.sub(_mask, text)
