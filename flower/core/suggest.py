"""A near miss among the names there are, for the message about a mistyped one."""

from __future__ import annotations

from collections.abc import Sequence

from flower.core.i18n import _


def did_you_mean(names: Sequence[str], available: Sequence[str]) -> str:
    """`` (did you mean 'x'?)`` for the near misses among ``names``, or ``""``."""
    from difflib import get_close_matches

    guesses = {
        name: close[0]
        for name in names
        if (close := get_close_matches(name, available, n=1, cutoff=0.75))
    }
    if len(guesses) == 1:
        guess = next(iter(guesses.values()))
        return " " + _("(did you mean {guess!r}?)").format(guess=guess)
    pairs = ", ".join(
        _("{guess!r} for {name!r}").format(guess=guess, name=name)
        for name, guess in guesses.items()
    )
    return " " + _("(did you mean {pairs}?)").format(pairs=pairs) if guesses else ""
