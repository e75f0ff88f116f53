"""A seeded agent workload: turns of (assistant tool_use, user tool_result) entries.

Tool result sizes are heavy-tailed like a coding agent's: most are a screenful
(median about 1.5 KB), one in twenty is a whole file or a long log (about 40 KB).
"""

from __future__ import annotations

import itertools
import random
from typing import Any

from flower.core.ids import Uuid7

Entry = dict[str, Any]
SESSION_ID = "b3f5c2d0-0000-4000-8000-00000000be4c"
CWD = "/home/bench/proj"

_WORDS = [
    "def",
    "class",
    "return",
    "import",
    "self",
    "if",
    "else",
    "for",
    "while",
    "try",
    "except",
    "with",
    "yield",
    "async",
    "await",
    "None",
    "True",
    "False",
    "print",
    "len",
    "range",
    "dict",
    "list",
    "str",
    "int",
    "value",
    "key",
    "path",
    "file",
    "line",
    "error",
    "result",
    "request",
    "response",
    "status",
    "200",
    "404",
    "OK",
    "total",
    "count",
    "index",
    "offset",
    "buffer",
    "read",
    "write",
]


def _corpus(rng: random.Random, size: int = 256 * 1024) -> str:
    """Code-and-log-like text that tool results are sliced from."""
    lines: list[str] = []
    total = 0
    while total < size:
        indent = " " * (4 * rng.randint(0, 3))
        line = indent + " ".join(rng.choices(_WORDS, k=rng.randint(3, 12)))
        lines.append(line)
        total += len(line) + 1
    return "\n".join(lines)


def result_size(rng: random.Random) -> int:
    """Heavy-tailed: 95% lognormal around 1.5 KB, 5% lognormal around 40 KB."""
    if rng.random() < 0.05:
        return int(rng.lognormvariate(0, 0.25) * 40_000)
    return max(40, int(rng.lognormvariate(0, 0.7) * 1_500))


def make_turns(turns: int, seed: int = 7) -> list[list[Entry]]:
    """``turns`` batches of two entries each, chained by ``parentUuid``."""
    rng = random.Random(seed)
    corpus = _corpus(rng)
    clock = itertools.count(1_764_460_800_000, 1_500)  # a turn every 1.5 s
    new_uuid = Uuid7(now_ms=lambda: next(clock), random_bits=rng.getrandbits)
    parent: str | None = None
    batches: list[list[Entry]] = []
    for n in range(turns):
        # Time-ordered, as flower's engine writes them (flower.core.ids).
        a_uuid = new_uuid()
        u_uuid = new_uuid()
        tool_id = f"toolu_{n:06d}{rng.getrandbits(32):08x}"
        size = min(result_size(rng), len(corpus))
        start = rng.randrange(0, len(corpus) - size + 1)
        stamp = f"2026-11-30T{(n // 3600) % 24:02d}:{(n // 60) % 60:02d}:{n % 60:02d}.000Z"
        assistant: Entry = {
            "parentUuid": parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": CWD,
            "sessionId": SESSION_ID,
            "version": "0.1.0",
            "type": "assistant",
            "uuid": a_uuid,
            "timestamp": stamp,
            "requestId": f"req_{n:08d}",
            "message": {
                "id": f"msg_{n:012d}",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-6",
                "content": [
                    {"type": "text", "text": f"Step {n}: checking the next file."},
                    {
                        "type": "tool_use",
                        "id": tool_id,
                        "name": rng.choice(["Read", "Grep", "Bash", "Edit"]),
                        "input": {"file_path": f"{CWD}/src/mod_{n % 97}.py", "limit": 200},
                    },
                ],
                "stop_reason": "tool_use",
                "stop_sequence": None,
                "usage": {
                    "input_tokens": 3,
                    "cache_creation_input_tokens": rng.randint(0, 3000),
                    "cache_read_input_tokens": 20_000 + 40 * n,
                    "output_tokens": rng.randint(20, 400),
                },
            },
        }
        user: Entry = {
            "parentUuid": a_uuid,
            "isSidechain": False,
            "userType": "external",
            "cwd": CWD,
            "sessionId": SESSION_ID,
            "version": "0.1.0",
            "type": "user",
            "uuid": u_uuid,
            "timestamp": stamp,
            "sourceToolAssistantUUID": a_uuid,
            "message": {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": tool_id,
                        "content": corpus[start : start + size],
                        "is_error": False,
                    }
                ],
            },
            "toolUseResult": {"type": "text", "bytes": size},
        }
        batches.append([assistant, user])
        parent = u_uuid
    return batches
