"""Run a command without the power to write anywhere, even when the tests run as root."""

from __future__ import annotations

import os
import shutil

import pytest


def cannot_write_prefix() -> list[str]:
    """The command prefix that runs a process which file modes bind: nothing for an
    ordinary user; for root (CI runs as root), ``setpriv`` without the capabilities that
    bypass file modes. Root without ``setpriv`` fails the test: a skip would hide the path."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.fail("running as root and no setpriv (util-linux) to drop the power to write")
    return [setpriv, "--bounding-set=-dac_override,-dac_read_search,-fowner"]
