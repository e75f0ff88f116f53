"""``flower sessions stats [ID]``: what a transcript holds and what pruning would remove.

The figures are :mod:`flower.stores.stats`'s; this module shows them as a table.

Two kinds of token figures, never mixed:

- ``~tokens`` per kind of entry is an **estimate**: the entry's ``message`` as JSON,
  four bytes per token (what the model would be sent; 0 for bookkeeping entries).
- ``usage`` figures come **from the API's own counts** in assistant entries: output
  tokens summed once per API message (Claude Code repeats one message's usage on
  every content-block entry) and the context size of the last round.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from flower.core.display import pad, shown_width
from flower.core.i18n import N_, _

if TYPE_CHECKING:
    from flower.stores.stats import Stats

KIND_NAMES = {
    "user": N_("user"),
    "assistant": N_("assistant"),
    "tool result": N_("tool result"),
    "api error": N_("api error"),
    "system": N_("system"),
}
"""How the table shows a kind (``--json`` keeps the kinds themselves); other entry
types by their ``type``."""


def render(stats: Stats, title: str) -> str:
    """The human table: one row per kind, then usage, then what pruning would remove."""
    data = stats.as_dict()
    rows = [(_("kind"), _("entries"), _("bytes"), _("~tokens"))]
    for name, row in data["by_kind"].items():
        shown = _(KIND_NAMES[name]) if name in KIND_NAMES else name
        rows.append((shown, str(row["entries"]), str(row["bytes"]), str(row["est_tokens"])))
    rows.append(
        (
            _("total"),
            str(data["entries"]),
            str(data["bytes"]),
            str(sum(r["est_tokens"] for r in data["by_kind"].values())),
        )
    )
    widths = [max(shown_width(r[i]) for r in rows) for i in range(4)]
    lines = [title]
    for row in rows:
        cells = [
            pad(row[0], widths[0]),
            *(pad(c, w, right=True) for c, w in zip(row[1:], widths[1:], strict=True)),
        ]
        lines.append("  " + "  ".join(cells))
    lines.append(_("  (~tokens: an estimate, 4 bytes of message JSON per token)"))
    usage = data["usage"]
    context = usage["last_context_tokens"]
    if context is None:
        line = _("usage (from the API): {output} output tokens")
    else:
        line = _("usage (from the API): {output} output tokens, last context {context} tokens")
    lines.append(line.format(output=usage["output_tokens"], context=context))
    removed = data["pruning"]["would_remove"]
    if removed:
        parts = ", ".join(
            f"{n} {_(KIND_NAMES[k]) if k in KIND_NAMES else k}" for k, n in sorted(removed.items())
        )
        saved = sum(p["tokens_saved"] for p in data["pruning"]["policies"].values())
        would = _("pruning would remove: {parts} (~{saved} tokens saved)")
        lines.append(would.format(parts=parts, saved=saved))
    else:
        lines.append(_("pruning would remove: nothing"))
    for name, row in data["pruning"]["policies"].items():
        if row["removed"] or row["changed"]:
            policy = _("  {policy}: {removed} removed, {changed} changed, ~{tokens} tokens")
            lines.append(
                policy.format(
                    policy=name,
                    removed=row["removed"],
                    changed=row["changed"],
                    tokens=row["tokens_saved"],
                )
            )
    return "\n".join(lines)
