"""What a system of the comparison raises when it cannot run here, and how to install one."""

from __future__ import annotations

BENCH_EXTRA = 'pip install -e ".[bench]"'


class Skipped(Exception):
    """This system cannot run on this machine; ``hint`` says how to make it run."""

    def __init__(self, reason: str, hint: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.hint = hint


__all__ = ["BENCH_EXTRA", "Skipped"]
