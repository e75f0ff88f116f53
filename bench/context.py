"""Context economy: what a 500-round working session sends the model, per round.

No network. A seeded session of workflow *rounds*: a short user message, then the
agent's tool calls (1-3 per round: Read, Grep, Bash, Edit; results heavy-tailed as in
:mod:`bench.workload`), then its closing reply. Some Bash calls are ephemeral
(``git status``...), about 3% of calls are denied, about 2% of rounds carry a
synthetic API-error entry, so the default chain has its real work to do.

Tokens are estimated consistently as **bytes of the JSON of the Messages API
``messages`` / 4** (flower's :func:`flower.stores.prune.estimate_tokens`), plus a
fixed ``SYSTEM_TOKENS`` for the system prompt and tool definitions. A round's context
is that of its last request (what the last ``usage`` reports, what relay checks).

Modes: ``none`` (everything sent), ``default`` (the default pruning chain), ``trim``
(the chain plus trim, as the CLI runs), ``relay`` (the chain plus trim, and relay at
``[tool.flower.relay] threshold_tokens`` by the rule flower uses: every request of a
round is measured; after each turn, once its tool results are in, the run stops when
the last context plus twice the growth expected per turn (the largest seen in the
round, what was just appended, at least 1% of the threshold) would reach the
threshold, and between rounds the workflow relays first when the last context plus
twice the expected growth of the new prompt would. Either way the old session is
asked for a handoff document (one more request, on the old context) and a new session
starts seeded with it. In relay mode a round's context is that of its largest request.
"""

from __future__ import annotations

import random
import tempfile
import uuid
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from bench.workload import CWD, _corpus, result_size

SYSTEM_TOKENS = 24_000
"""System prompt + tool definitions: sent every request, never in the transcript."""
HANDOFF_DOC_CHARS = 6_000
"""A handoff document of about 1.5K tokens (what a real one runs to)."""
WINDOW_TOKENS = 1_000_000
SEED_BASELINE = {"slope_per_round": 2_200, "round_70": 185_900, "wall_round": 440}
MODES = ("none", "default", "trim", "relay")

_encode = msgspec.json.Encoder().encode
Entry = dict[str, Any]


class SessionWriter:
    """Builds one session's entries, chained by ``parentUuid``."""

    def __init__(self, rng: random.Random, session_id: str) -> None:
        self.rng = rng
        self.session_id = session_id
        self.entries: list[Entry] = []
        self.parent: str | None = None

    def add(self, kind: str, message: dict[str, Any], **extra: Any) -> Entry:
        uid = str(uuid.UUID(int=self.rng.getrandbits(128), version=4))
        entry: Entry = {
            "parentUuid": self.parent,
            "isSidechain": False,
            "type": kind,
            "uuid": uid,
            "sessionId": self.session_id,
            "cwd": CWD,
            "message": message,
            **extra,
        }
        self.entries.append(entry)
        self.parent = uid
        return entry


class Round:
    """One scripted round: the same for every mode (drawn once from the seed)."""

    def __init__(self, n: int, rng: random.Random, corpus: str) -> None:
        self.n = n
        self.prompt = f"Round {n}: continue with the plan; run the checks when done. " * 3
        self.api_error = rng.random() < 0.02
        self.calls: list[tuple[dict[str, Any], str, bool]] = []
        for k in range(rng.randint(1, 3)):
            tool = rng.choice(["Read", "Read", "Grep", "Bash", "Bash", "Edit"])
            tool_id = f"toolu_{n:04d}_{k}_{rng.getrandbits(32):08x}"
            if tool == "Bash":
                command = rng.choice(["git status", "git diff", "ls src", "pytest -q", "make"])
                tool_input: dict[str, Any] = {"command": command}
            elif tool == "Edit":
                start = rng.randrange(0, len(corpus) - 2000)
                tool_input = {
                    "file_path": f"{CWD}/src/mod_{n % 97}.py",
                    "old_string": corpus[start : start + 600],
                    "new_string": corpus[start + 600 : start + 1400],
                }
            else:
                tool_input = {"file_path": f"{CWD}/src/mod_{n % 97}.py"}
            size = 120 if tool == "Edit" else min(result_size(rng), len(corpus))
            start = rng.randrange(0, len(corpus) - size + 1)
            denied = rng.random() < 0.03
            body = (
                "Permission to use this tool was denied by the user."
                if denied
                else corpus[start : start + size]
            )
            block = {"type": "tool_use", "id": tool_id, "name": tool, "input": tool_input}
            self.calls.append((block, body, denied))
        self.closing = f"Done with round {n}. " + "Summary of what changed and why. " * 12


def _tokens(entries: list[Entry]) -> int:
    from flower.core.transcript.messages import to_messages

    return SYSTEM_TOKENS + round(len(_encode(to_messages(entries))) / 4)


class Simulation:
    """Plays the rounds in one mode and records the context of every request."""

    def __init__(
        self,
        mode: str,
        view: Callable[[list[Entry]], list[Entry]],
        threshold: int,
        every: int = 1,
        rounds: int = 500,
    ) -> None:
        self.mode = mode
        self.every = 1 if mode == "relay" else every
        self.last_round = rounds
        self.view = view
        self.threshold = threshold
        self.rng = random.Random(f"ids-{mode}")
        self.session = SessionWriter(self.rng, "s-0")
        self.sessions = 1
        self.per_round: list[int] = []
        self.measured: list[int] = []
        """Rounds whose context was computed (all of them, unless sampling)."""
        self.relays: list[int] = []
        self.last_context: int | None = None
        """Relay mode: the context of the last request (what the next check reads)."""
        self.seed = ""
        """The handoff seed that the next round's message starts with, after a relay."""

    def request(self) -> int:
        """Send what the model sees now; return the context size the API would report."""
        return _tokens(self.view(self.session.entries))

    def assistant(self, content: list[dict[str, Any]], context: int, **extra: Any) -> None:
        usage = {"input_tokens": 3, "cache_read_input_tokens": context - 3}
        message = {"role": "assistant", "model": "claude-sonnet-4-6", "content": content}
        self.session.add("assistant", {**message, "usage": usage}, **extra)

    def relay(self, n: int) -> int:
        """Ask the old session for a handoff, start a new one; the handoff's context."""
        from flower.core.i18n import _
        from flower.workflow.prompts import HANDOFF_PROMPT, RELAY_SEED

        self.session.add("user", {"role": "user", "content": _(HANDOFF_PROMPT)})
        context = self.request()
        doc = ("## Handoff\n" + "- done: step; next: step; pitfalls: noted.\n" * 200)[
            :HANDOFF_DOC_CHARS
        ]
        self.assistant([{"type": "text", "text": doc}], context)
        self.sessions += 1
        self.session = SessionWriter(self.rng, f"s-{self.sessions - 1}")
        self.seed = _(RELAY_SEED).format(path=f"notes/relay/round-{n}.md", doc=doc)
        self.relays.append(n)
        return context

    def play_relayed(self, rnd: Round) -> None:
        """One round with relay: every request measured, the engine's check after each
        turn, the workflow's check before the round (see the module docstring)."""
        from flower.core.i18n import _
        from flower.workflow.prompts import RELAY_CONTINUE
        from flower.workflow.relay import expected_growth

        limit = self.threshold
        peak = 0
        last = self.last_context
        if last is not None and last + 2 * expected_growth(rnd.prompt, limit) >= limit:
            peak = self.relay(rnd.n)
        self.open_round(rnd)
        context = self.request()
        growth = 0
        for block, body, denied in rnd.calls:
            peak = max(peak, context)
            self.assistant([{"type": "text", "text": "Checking."}, block], context)
            result = {"type": "tool_result", "tool_use_id": block["id"], "content": body}
            if denied:
                result["is_error"] = True
            marker = {"denied": True} if denied else {"type": "text"}
            self.session.add("user", {"role": "user", "content": [result]}, toolUseResult=marker)
            following = self.request()
            expected = max(growth, following - context, limit // 100)
            growth = max(growth, following - context)
            if context + 2 * expected >= limit:  # the run stops here and relays at once
                peak = max(peak, self.relay(rnd.n))
                seed, self.seed = self.seed, ""
                carry_on = seed + _(RELAY_CONTINUE).format(prompt=rnd.prompt.strip())
                self.session.add("user", {"role": "user", "content": carry_on})
                following, growth = self.request(), 0
            context = following
        peak = max(peak, context)
        self.assistant([{"type": "text", "text": rnd.closing}], context)
        self.last_context = context
        self.per_round.append(peak)
        self.measured.append(rnd.n)

    def open_round(self, rnd: Round) -> None:
        """The round's prompt (after any relay seed) and, in some rounds, an API error
        that the engine stored before retrying the same prompt."""
        seed, self.seed = self.seed, ""
        self.session.add("user", {"role": "user", "content": seed + rnd.prompt})
        if rnd.api_error:
            self.session.add(
                "assistant",
                {
                    "role": "assistant",
                    "model": "<synthetic>",
                    "content": [{"type": "text", "text": "API Error: 529 overloaded"}],
                },
                isApiErrorMessage=True,
            )
            self.session.add("user", {"role": "user", "content": rnd.prompt})

    def play(self, rnd: Round) -> None:
        self.open_round(rnd)
        # Only a round's last request is measured: it is the largest and the one relay
        # checks; the tool-call requests before it carry that round's usage too.
        previous = self.per_round[-1] if self.per_round else SYSTEM_TOKENS
        for block, body, denied in rnd.calls:
            self.assistant([{"type": "text", "text": "Checking."}, block], previous)
            result = {"type": "tool_result", "tool_use_id": block["id"], "content": body}
            if denied:
                result["is_error"] = True
            marker = {"denied": True} if denied else {"type": "text"}
            self.session.add("user", {"role": "user", "content": [result]}, toolUseResult=marker)
        if rnd.n % self.every and rnd.n not in (1, self.last_round):
            self.assistant([{"type": "text", "text": rnd.closing}], previous)
            return
        context = self.request()
        self.assistant([{"type": "text", "text": rnd.closing}], context)
        self.per_round.append(context)
        self.measured.append(rnd.n)


def _views(run_dir: Path) -> dict[str, Callable[[list[Entry]], list[Entry]]]:
    from flower.core.config import Settings
    from flower.core.protocols import PruneContext
    from flower.stores.prune import PruningWarning, build_policies, policy_names, prune

    settings = Settings()
    chain = build_policies(policy_names(settings, trim=False), settings)
    with_trim = build_policies(policy_names(settings, trim=True), settings)
    ctx = PruneContext(run_dir=run_dir)

    def pruned(policies: list[Any]) -> Callable[[list[Entry]], list[Entry]]:
        def view(entries: list[Entry]) -> list[Entry]:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", PruningWarning)
                return prune(entries, policies, ctx)

        return view

    return {
        "none": lambda entries: entries,
        "default": pruned(chain),
        "trim": pruned(with_trim),
        "relay": pruned(with_trim),
    }


def run(
    rounds: int = 500,
    seed: int = 7,
    every: int = 1,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Play ``rounds`` in each mode; ``every`` > 1 measures only every Nth round of the
    modes without relay (quick mode), relay is always measured every round."""
    from flower.core.config import Settings
    from flower.workflow.relay import threshold

    limit = threshold(Settings()) or 0
    rng = random.Random(seed)
    corpus = _corpus(rng)
    script = [Round(n, rng, corpus) for n in range(1, rounds + 1)]
    out: dict[str, Any] = {
        "rounds": rounds,
        "threshold_tokens": limit,
        "system_tokens": SYSTEM_TOKENS,
        "window_tokens": WINDOW_TOKENS,
        "token_estimate": "bytes of the Messages API JSON / 4, plus SYSTEM_TOKENS",
        "seed_baseline": SEED_BASELINE,
        "modes": {},
    }
    with tempfile.TemporaryDirectory(prefix="bench-context-") as tmp:
        views = _views(Path(tmp))
        for mode in MODES:
            sim = Simulation(mode, views[mode], limit, every, rounds)
            for rnd in script:
                if mode == "relay":
                    sim.play_relayed(rnd)
                else:
                    sim.play(rnd)
            per_round, measured = sim.per_round, sim.measured
            wall = next(
                (n for n, c in zip(measured, per_round, strict=True) if c >= WINDOW_TOKENS), None
            )
            at = dict(zip(measured, per_round, strict=True))
            out["modes"][mode] = {
                "rounds": measured,
                "per_round": per_round,
                "slope_per_round": (per_round[-1] - per_round[0]) / max(1, rounds - 1),
                "at_round_70": at.get(70),
                "max": max(per_round),
                "final": per_round[-1],
                "wall_round": wall,
                "relays": sim.relays,
                "rounds_over_threshold": sum(1 for c in per_round if limit and c >= limit),
            }
            if progress:
                progress(f"context: {mode} done (max {max(per_round):,} tokens)")
    return out
