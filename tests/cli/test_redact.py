from __future__ import annotations

import pytest

from flower.core.redact import redact_text, redact_url, redact_value


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql+psycopg://user:pw@db:5432/x", "postgresql+psycopg://user:***@db:5432/x"),
        ("postgresql://u:p@ss@h/db?sslmode=require", "postgresql://u:***@h/db?sslmode=require"),
        ("postgresql://u@h/db", "postgresql://u@h/db"),
        ("postgresql://h/db?password=abc&x=1", "postgresql://h/db?password=***&x=1"),
        ("sqlite:///runs/sessions.db", "sqlite:///runs/sessions.db"),
        ("jsonfs:///tmp/x", "jsonfs:///tmp/x"),
        ("postgresql://u:pa/ss@h/db", "postgresql://u:***@h/db"),
        ("postgresql://u:pa?ss@h:5432/db", "postgresql://u:***@h:5432/db"),
        ("postgresql://u:pa#ss@h/db", "postgresql://u:***@h/db"),
    ],
)
def test_redact_url(url: str, shown: str) -> None:
    assert redact_url(url) == shown
    assert redact_text(f"cannot open {url}: refused") == f"cannot open {shown}: refused"


def test_redact_value_masks_secret_keys_and_urls() -> None:
    value = {"url": "postgresql://a:b@c/d", "options": {"password": "x", "pool": 5}, "l": ["s"]}
    assert redact_value(value) == {
        "url": "postgresql://a:***@c/d",
        "options": {"password": "***", "pool": 5},
        "l": ["s"],
    }
