"""pytest fixtures for flower users and for flower's own tests.

Enable with ``pytest_plugins = ["flower.testing.pytest_plugin"]`` in a conftest.py.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from flower.testing.fake_api import FakeMessagesAPI


@pytest.fixture
def fake_api(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeMessagesAPI]:
    """A running :class:`FakeMessagesAPI` with an empty script, and the environment
    (``ANTHROPIC_BASE_URL``, ``ANTHROPIC_API_KEY``) pointing at it for the test.

    Give it replies with ``fake_api.add(...)`` or ``fake_api.set_script(...)``.
    """
    with FakeMessagesAPI() as fake:
        monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
        for name, value in fake.env().items():
            monkeypatch.setenv(name, value)
        yield fake
