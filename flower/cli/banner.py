"""What ``flower`` asks on a terminal: the wake prompt, the new-task prompt, and the
questions a step may put to the user (the clarifier's answer, the request as the brief,
the goals). What a wake says about itself is :mod:`flower.workflow.banner`'s.
"""

from __future__ import annotations

from flower.core.i18n import _


def wake_prompt_text() -> str:
    """What a bare ``flower`` asks in a used directory."""
    return _(
        "Carry on? Enter = carry on; or say something new; /new = start something else"
        " (Ctrl-C quits)"
    )


def new_task_prompt_text() -> str:
    """What ``/new`` and a first run on a terminal ask."""
    return _("What should I do? One sentence is enough, Enter starts (Ctrl-C quits)")


def answer_hint() -> str:
    """Under the clarifier's questions on a terminal."""
    return _("(answer, then Enter; Enter alone = let it write the brief on its best assumptions)")


def request_as_brief_question() -> str:
    """Asked once on a terminal when the clarifier's exchanges ran out without a brief."""
    return _(
        "The brief is still not confirmed. Go on with your request itself as the brief?"
        " Enter = yes, n = stop here"
    )


def goals_question(goals_file: str, goals: list[str]) -> str:
    """Asked once on a terminal when the goal setter gave no numbered goals: the goals
    flower would go on with, and how to give others."""
    listed = "".join(f"   {n}. {goal}\n" for n, goal in enumerate(goals, 1))
    head = _("The model gave no numbered goals. {file} can go on with these:").format(
        file=goals_file
    )
    tail = _("Type your own goals, one a line (an empty line ends), or Enter alone to use these")
    return f"{head}\n{listed}{tail}"
