"""The pieces of live output and the wake prompt, in-process."""

from __future__ import annotations

import io
from collections.abc import Iterator

import pytest
from seed_strings import NEW_TASK_PROMPT, WAKE_PROMPT

from flower.cli.wake import WakeChoice, wake_prompt
from flower.core.labels import parse_label, shown_label
from flower.runtime.events import SessionStarted, TextDelta, ToolCall, ToolResult, Waiting
from flower.runtime.spec import StepResult
from flower.runtime.summary import describe_call, format_totals, summarize_result, totals
from flower.workflow.banner import lost_sessions_line, step_header
from flower.workflow.live import Live


def test_describe_call_shows_the_argument_that_matters(english: None) -> None:
    assert describe_call("Bash", {"command": "ls  -la\n  | wc"}) == "Bash: ls -la | wc"
    assert describe_call("Write", {"file_path": "a.py", "content": "x" * 10}) == (
        "Write: a.py (10 chars)"
    )
    assert describe_call("Other", {"a": 1}) == 'Other {"a":1}'
    long = describe_call("Bash", {"command": "echo " + "y" * 200})
    assert len(long) == len("Bash: ") + 80 and long.endswith("…")
    assert describe_call("Bash", "{not json") == "Bash {not json"


def test_summarize_result(english: None) -> None:
    assert summarize_result("one\ntwo\nthree", is_error=False, denied=False) == "3 lines: one"
    assert summarize_result("", is_error=False, denied=False) == "(no output)"
    assert summarize_result("nope", is_error=True, denied=True) == "denied: nope"
    assert summarize_result("boom\nmore", is_error=True, denied=False) == "error: boom more"


@pytest.mark.parametrize(
    ("label", "step", "kind", "n"),
    [
        ("干活", "干活", "first", 1),
        ("干活#round3", "干活", "round", 3),
        ("干活·判定#2", "干活", "judge", 2),
        ("work·judge#2", "work", "judge", 2),
        ("干活·judge#1", "干活", "judge", 1),
        ("确认需求#retry1", "确认需求", "retry", 1),
        ("set goals#retry2", "set goals", "retry", 2),
        ("fetch#3", "fetch", "first", 3),
    ],
)
def test_parse_label(label: str, step: str, kind: str, n: int) -> None:
    parsed = parse_label(label)
    assert (parsed.step, parsed.kind, parsed.n) == (step, kind, n)


def test_a_label_is_shown_in_the_language_whatever_language_wrote_it(english: None) -> None:
    assert shown_label("干活·判定#2") == shown_label("work·judge#2") == "work·judge#2"
    assert shown_label("设定目标#retry1") == "set goals#retry1"
    assert shown_label("fetch#round2") == "fetch#round2"


def test_totals_and_their_line(english: None) -> None:
    results = [StepResult("a", num_turns=2, cost_usd=0.5), StepResult("b", num_turns=1)]
    assert format_totals(totals(results, 3.25)) == "2 runs · 3 turns · $0.5000 · 3.2 s"
    assert format_totals(totals([StepResult("c")], 1)).endswith("cost unknown · 1.0 s")


def test_plain_live_output_and_headers(english: None) -> None:
    out = io.StringIO()
    live = Live(out, rich=False, rounds=3)
    live.woke = 2
    live.step_started("干活", resume="old-session")
    live.on_event(SessionStarted("old-session", resumed=True))
    live.on_event(TextDelta("hel"))
    live.on_event(TextDelta("lo"))
    live.on_event(ToolCall("t1", "Read", {"file_path": "a.md"}))
    live.on_event(ToolResult("t1", "Read", "x\ny", is_error=False, denied=False))
    live.on_event(Waiting("offline: waiting for api.anthropic.com:443"))
    live.step_started("干活", resume="old-session")  # same label: no second header
    live.on_event(SessionStarted("new-session", resumed=False))
    live.step_started("干活#round2", resume="new-session")  # born here: not a wake
    live.step_started("干活·判定#1", resume=None)
    assert out.getvalue().splitlines() == [
        step_header("干活", 1, 3, resumed=True, woke=2),
        "hello",
        "  -> Read: a.md",
        "  <- 2 lines: x",
        "  ... offline: waiting for api.anthropic.com:443",
        step_header("干活", 2, 3, resumed=False, woke=2),
        step_header("干活·判定", 1, 3, resumed=False, woke=2),
    ]


def test_a_warning_while_text_streams_starts_on_its_own_line(
    english: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from flower.cli.errors import warn
    from flower.cli.main import _show_flower_warning

    terminal = io.StringIO()  # stdout and stderr on one terminal
    monkeypatch.setattr("sys.stderr", terminal)
    monkeypatch.setattr(  # Python's own display (pytest records warnings instead)
        "flower.cli.main._default_showwarning",
        lambda message, category, filename, lineno, file, line: terminal.write(
            f"{filename}:{lineno}: {category.__name__}: {message}\n"
        ),
    )
    live = Live(terminal, rich=False, rounds=1)
    live.on_event(TextDelta("OK"))
    warn("a line was skipped")  # what flower's log records and warnings become
    live.on_event(TextDelta(" and more"))
    _show_flower_warning(UserWarning("an old id"), UserWarning, "lib.py", 7)  # not flower's
    live.on_event(TextDelta("."))
    live.on_event(ToolCall("t1", "Read", {"file_path": "a.md"}))
    lines = terminal.getvalue().splitlines()
    assert lines[:3] == ["OK", "flower: warning: a line was skipped", " and more"]
    assert lines[3] == "lib.py:7: UserWarning: an old id"
    assert lines[-2:] == [".", "  -> Read: a.md"]


def test_a_step_that_starts_by_finishing_a_killed_relay_says_it_goes_on(english: None) -> None:
    out = io.StringIO()
    live = Live(out, rich=False, rounds=3)
    live.woke = 3
    # the old session answered its handoff; the run was killed before the new one began
    live.step_started("干活", resume=None, relay_from="old-session")
    assert out.getvalue().splitlines() == [
        step_header("干活", 1, 3, resumed=True, woke=3),
        "  ... work: a killed run was handing over to a new session; it goes on from that "
        "handoff (notes/relay/)",
    ]


def test_lost_sessions_line() -> None:
    assert lost_sessions_line(["干活"]) == "   !! 谱系里的会话已不在存储里:干活 —— 这些步骤从头开始"


def answers(*lines: str | type[BaseException]) -> Iterator[str]:
    for line in lines:
        if isinstance(line, type):
            raise line
        yield line


@pytest.mark.parametrize(
    ("typed", "choice"),
    [
        (
            [
                "",
            ],
            WakeChoice("continue"),
        ),
        (["  also this  "], WakeChoice("say", "also this")),
        (["/new", "", "other thing"], WakeChoice("new", "other thing")),
        (["/new", EOFError], WakeChoice("leave")),
        ([KeyboardInterrupt], WakeChoice("interrupted")),  # the caller exits 130
        ([EOFError], WakeChoice("leave")),
    ],
)
def test_wake_prompt_choices(typed: list[str | type[BaseException]], choice: WakeChoice) -> None:
    out = io.StringIO()
    lines = answers(*typed)
    assert wake_prompt(lambda: next(lines), out) == choice
    shown = out.getvalue().splitlines()
    assert shown[0] == WAKE_PROMPT
    assert (NEW_TASK_PROMPT in shown) == (typed[0] == "/new")


class InterruptedOutput(io.StringIO):
    """Ctrl-C landing while the prompt is still being written (after ``skip`` flushes)."""

    def __init__(self, skip: int) -> None:
        super().__init__()
        self.skip = skip

    def flush(self) -> None:
        if self.skip == 0:
            raise KeyboardInterrupt
        self.skip -= 1


def test_ctrl_c_while_a_prompt_is_written_still_just_leaves() -> None:
    lines = answers()
    assert wake_prompt(lambda: next(lines), InterruptedOutput(0)) == WakeChoice("interrupted")


def test_ctrl_c_at_the_new_task_prompt_reaches_the_caller() -> None:
    for typed, output in (
        (["/new", KeyboardInterrupt], io.StringIO()),
        (["/new"], InterruptedOutput(1)),
    ):
        lines = answers(*typed)
        with pytest.raises(KeyboardInterrupt):
            wake_prompt(lambda: next(lines), output)  # noqa: B023


def test_a_run_stopped_for_a_relay_is_no_failure_and_a_failure_is_said_once(english: None) -> None:
    from flower.runtime.events import StepDone
    from flower.runtime.spec import STOP_CONTEXT_LIMIT

    out = io.StringIO()
    live = Live(out, rich=False)
    full = StepResult(
        "干活", ok=False, error="stopped before the context passed", stop=STOP_CONTEXT_LIMIT
    )
    live.on_event(StepDone(full))
    broken = StepResult("干活", ok=False, error="the API rejected the credentials")
    live.on_event(StepDone(broken))
    live.failure(broken)  # the command's closing report: not a second time
    lines = out.getvalue().splitlines()
    assert lines == [
        "  ... work: the context is near its limit; handing over to a new session (notes/relay/)",
        "  !! work failed: the API rejected the credentials",
    ]
