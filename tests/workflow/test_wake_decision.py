"""flower.workflow.wake: what a wake of the built-in workflow does, without the CLI."""

from __future__ import annotations

from typing import Any

import msgspec

from flower.core.config import Settings
from flower.workflow.state import WakeState
from flower.workflow.wake import builtin_view, is_used, needs_words, verdict, words_to_pass_on

SETTINGS = Settings()


def state(**checks: Any) -> WakeState:
    base: dict[str, Any] = {
        "lineage": "none",
        "fresh": None,
        "recorded": {},
        "alive": {},
        "context": {},
        "brief": False,
        "goals": 0,
        "store": None,
        "request": None,
        "unrecorded": [],
        "goals_stale": False,
        "rewound": None,
    }
    base.update(checks)
    steps = {k: v for k, v in base["recorded"].items() if base["alive"].get(k)}
    whole = {"waking": bool(steps), "checks": base, "woke": 1, "steps": steps}
    return msgspec.convert(whole, WakeState)


def test_verdict_wakes_only_with_something_to_carry_on() -> None:
    assert verdict(state(), SETTINGS) == "nothing"
    assert verdict(state(brief=True), SETTINGS) == "wakes"
    assert verdict(state(unrecorded=["标题加上锚点"]), SETTINGS) == "wakes"
    assert verdict(state(brief=True, store="not a database"), SETTINGS) == "stops"
    # another workflow's steps are no wake for `flower`
    other = state(recorded={"取词": "s-1"}, alive={"取词": True})
    assert verdict(other, SETTINGS) == "nothing"
    assert verdict(state(recorded={"干活": "s-1"}, alive={"干活": True}), SETTINGS) == "wakes"


def test_a_fresh_directory_needs_words_unless_a_terminal_can_ask() -> None:
    fresh = builtin_view(state(), SETTINGS)
    assert needs_words(fresh, None, interactive=False)
    assert not needs_words(fresh, None, interactive=True)
    assert not needs_words(fresh, "写个脚本", interactive=False)
    assert not is_used(fresh)


def test_words_a_killed_run_left_are_passed_on_unless_a_first_run_replaces_them() -> None:
    left = ["写个 md 转 html 的脚本"]
    first = state(unrecorded=left)
    assert words_to_pass_on(first, None, SETTINGS) == left
    assert words_to_pass_on(first, "另一件事", SETTINGS) == []  # replaces the first request
    used = state(unrecorded=left, brief=True)
    assert words_to_pass_on(used, "顺便支持代码块高亮", SETTINGS) == left


def test_the_builtin_view_keeps_only_its_own_gone_steps() -> None:
    gone = {"reason": "gone", "moved_from": None, "steps": ["取词", "干活"]}
    view = builtin_view(state(fresh=gone), SETTINGS)
    assert view["checks"]["fresh"]["steps"] == ["干活"]
    only_other = {**gone, "steps": ["取词"]}
    assert builtin_view(state(fresh=only_other), SETTINGS)["checks"]["fresh"] is None


def test_wake_state_reads_by_the_seed_pages_keys_and_no_others() -> None:
    st = state(recorded={"取词": "s-1"}, alive={"取词": True}, goals=2)
    # the product page's example: print(st["waking"], st["checks"], st["woke"], st["steps"])
    assert (st["waking"], st["woke"], st["steps"]) == (True, 1, {"取词": "s-1"})
    assert st["checks"] is st.checks and st["checks"]["goals"] == 2
    for unknown in ("_woke", "get", "__class__", "missing"):
        try:
            st[unknown]
        except KeyError:
            continue
        raise AssertionError(f"{unknown!r} read as a key")
    # flower status --json prints the same shape the dict had
    assert set(msgspec.to_builtins(st)) == {"waking", "checks", "woke", "steps"}
