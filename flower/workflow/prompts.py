"""Every prompt and instruction the built-in workflow sends the model, by one plain name.

Each name holds the English msgid (the source text of the gettext catalogs, see
docs/languages.md), so it is defined here once and read anywhere with ``grep``. What the
model is sent is the message in the wake's language: ``_(WORK_SAID)`` where it is sent,
never the bare constant. :func:`~flower.core.i18n.every_translation` of a name finds a
prompt an earlier wake sent in whichever language it spoke.

A failed step retried in a session that already exists is sent the engine's resume
prompt after an interruption, :data:`flower.core.resilience.RESUME_PROMPT` (one text
for the engine's retries and the workflow's; imported where it is sent, since
``flower.core.resilience`` brings asyncio with it and ``flower status`` reads this
module).

The agents themselves are built where they are used, their instructions in the wake's
language: :func:`~flower.workflow.clarify.clarifier`,
:func:`~flower.workflow.clarify.goal_setter`, :func:`~flower.workflow.builtin.worker_agent`
and :func:`~flower.workflow.goal.judge_agent`.
"""

from __future__ import annotations

from flower.core.i18n import N_

# -- the clarifier (confirm the brief) --------------------------------------------------

CLARIFIER_INSTRUCTIONS = N_(
    "You make the brief clear, by asking and writing, before anything is done. You write no code."
)
CLARIFY_PROMPT = N_(
    "What the user wants done:\n"
    "\n"
    "{request}\n"
    "\n"
    "First read the workspace and understand the task. If information is missing, ask"
    " (all at once, few and precise questions);\n"
    "once it is enough, write the brief with exactly these four second-level headings,"
    " each with content:\n"
    "\n"
    "## Background\n"
    "## What to do\n"
    "## What not to do\n"
    "## When it is done\n"
)
"""The clarifier's first prompt; ``{request}`` is the user's words or :data:`NO_REQUEST`."""
CLARIFY_RESUME = N_(
    "Carry on with the brief confirmation that was not finished; do not start over."
    " Do not ask again what was asked and answered already; ask what is still missing,"
    " and once everything is there, write the complete brief."
)
"""Sent to a clarifier whose session died mid-confirmation (the seed's resume prompt)."""
USER_ADDS = N_("The user adds: {said}")
"""After :data:`CLARIFY_RESUME`, what the user said on this wake."""
NO_ANSWER = N_(
    "No one can answer questions now. On your most reasonable assumptions, write the"
    " complete brief directly (four second-level headings, each with content)."
)
NO_REQUEST = N_("(the user did not say; look at the workspace first)")
NOT_SAID = N_("(not said)")
"""A section of a brief made of the request alone that the request does not fill."""
DONE_WHEN = N_("What was asked is done and can be seen in the workspace: {request}")
"""The "when it is done" section of a brief made of the request alone."""

# -- the goal setter (set goals) --------------------------------------------------------

GOAL_SETTER_INSTRUCTIONS = N_(
    "You turn the brief into acceptance goals that can be checked one by one. You list"
    " goals only and implement nothing."
)
GOALS_PROMPT = N_(
    "Below is the confirmed brief. Turn it into a list of goals that can be checked one"
    ' by one: one per line, numbered like "1. ",\n'
    "each one verifiable by reading files or running commands. Reply with the list"
    " only.\n"
    "\n"
    "{brief}\n"
)
GOALS_RETRY = N_(
    "I see no numbered list. Reply with the list only, one per line, starting with a"
    ' number like "1. ".'
)

# -- the worker (work) ------------------------------------------------------------------

WORKER_INSTRUCTIONS = N_(
    "You are the one who does the work. Really get it done as the brief says: write the"
    " code, run it, verify it. Decisions and conclusions go into the workspace, not only"
    " into the conversation."
)
WORK_PROMPT = N_(
    "Get this done as confirmed in {brief_file}; {goals_file} holds the acceptance goals,"
    " and someone will check them one by one when you are done.\n"
    "Read these two files and the state of the workspace first, then start.\n"
)
WORK_RESUME = N_("Carry on from where the work stopped last time.")
WORK_SAID = N_(
    "The user says more:\n"
    "\n"
    "{said}\n"
    "\n"
    "(This has been appended to {brief_file}, and {goals_file} was derived again from"
    " it.) Carry on.\n"
)
"""The working step's next message on a wake where the user said something."""

# -- the judge (the goal gate) ----------------------------------------------------------

JUDGE_INSTRUCTIONS = N_(
    "You are the one who accepts the work. You believe only what can be seen in the"
    " workspace and run there, never what anyone says. Check the goals one by one; do not"
    " make excuses for the one who did the work."
)
JUDGE_PROMPT = N_(
    "Check one by one whether the goals in {goals_file} are met in the workspace. Read"
    " the files and run the commands yourself to verify.\n"
    "\n"
    "Goals:\n"
    "{goals}\n"
    "\n"
    "Finally give your verdict in this format, one line per goal, leaving none out:\n"
    "1. met — the evidence\n"
    "2. not met — what is missing, and where\n"
)
SEND_BACK = N_(
    "The acceptance check did not pass. These goals are not met yet:\n"
    "\n"
    "{findings}\n"
    "\n"
    "Carry on and get them done. Do not tear down what is done already.\n"
)
"""The working step's next round after a verdict with unmet goals."""

# -- relay ------------------------------------------------------------------------------

HANDOFF_PROMPT = N_(
    "The context of this conversation is nearly full; a brand-new session will carry on"
    " next, and it sees nothing of what is here.\n"
    "Write it a handoff document: where the task and the acceptance goals are, what is"
    " done, how far the work has got,\n"
    "the paths tried that did not work and why, the next few steps, the pitfalls to"
    " watch for. Write only the handoff document itself, in Markdown.\n"
)
RELAY_SEED = N_(
    "You take over a task that is half done. The previous session's handoff document is"
    " at {path}; it says:\n"
    "\n"
    "{doc}\n"
    "\n"
    "---\n"
    "\n"
)
"""What a relay's new session starts with, before the message it carries on with."""
FALLBACK_DOC = N_(
    "(The previous session could not write a handoff document.)\n"
    "The task and the acceptance goals are in {brief_file} and {goals_file} in the"
    " workspace; look at the state of the workspace first, then carry on.\n"
    "What the previous session said last:\n"
    "\n"
    "{last}\n"
)
RELAY_CONTINUE = N_(
    "The previous session got this task half done and stopped only because its context"
    " was nearly full; it hands it to you. The words it was given:\n"
    "\n"
    "{prompt}\n"
    "\n"
    'Carry on with the "next steps" of the handoff document; do not redo what is done.\n'
)
NOTHING_SAID = N_("(nothing)")
""":data:`FALLBACK_DOC`'s ``{last}`` when the previous session said nothing."""

__all__ = [
    "CLARIFIER_INSTRUCTIONS",
    "CLARIFY_PROMPT",
    "CLARIFY_RESUME",
    "DONE_WHEN",
    "FALLBACK_DOC",
    "GOALS_PROMPT",
    "GOALS_RETRY",
    "GOAL_SETTER_INSTRUCTIONS",
    "HANDOFF_PROMPT",
    "JUDGE_INSTRUCTIONS",
    "JUDGE_PROMPT",
    "NOTHING_SAID",
    "NOT_SAID",
    "NO_ANSWER",
    "NO_REQUEST",
    "RELAY_CONTINUE",
    "RELAY_SEED",
    "SEND_BACK",
    "USER_ADDS",
    "WORKER_INSTRUCTIONS",
    "WORK_PROMPT",
    "WORK_RESUME",
    "WORK_SAID",
]
