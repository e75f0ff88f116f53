"""Context size per round of a real session, and its chart as inline SVG.

A round starts at each prompt (a user entry that is not a tool result, a compaction
summary or a meta line) and its context is that of its last request, what the last
``usage`` of the round reports (as ``bench context`` counts it): input + cache
creation + cache read tokens. The chart draws it on an axis that fits the session,
with the relay threshold and the 1M-token window as lines when they are in range,
server-side, without any script, its words in the page's language.
"""

from __future__ import annotations

import gettext as stdlib_gettext
from collections.abc import Sequence
from html import escape

import msgspec

from flower.core.entries import reported_usage
from flower.core.i18n import N_
from flower.core.records import Entry
from flower.core.transcript.usage import context_tokens

WINDOW_TOKENS = 1_000_000
WIDTH, HEIGHT = 760, 280
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 16, 36


class RoundContext(msgspec.Struct, frozen=True):
    round_no: int
    tokens: int  # the context of the round's last request
    requests: int


def _is_prompt(entry: Entry) -> bool:
    message = entry.get("message")
    if entry.get("type") != "user" or not isinstance(message, dict):
        return False
    if entry.get("isCompactSummary") or entry.get("isMeta") or entry.get("isSidechain"):
        return False
    content = message.get("content")
    return not (
        isinstance(content, list)
        and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
    )


def rounds(entries: Sequence[Entry]) -> list[RoundContext]:
    """Each round's context; rounds the API never answered are left out."""
    out: list[RoundContext] = []
    round_no, last, requests = 0, 0, 0
    for entry in entries:
        if _is_prompt(entry):
            if requests:
                out.append(RoundContext(round_no, last, requests))
            round_no, last, requests = round_no + 1, 0, 0
            continue
        usage = reported_usage(entry)
        if usage and not entry.get("isSidechain"):
            last, requests = context_tokens(usage), requests + 1
    if requests:
        out.append(RoundContext(max(round_no, 1), last, requests))
    return out


def _tokens_label(tokens: float) -> str:
    if tokens >= 1_000_000:
        return f"{tokens / 1_000_000:g}M"
    return f"{tokens / 1000:g}K" if tokens else "0"


def _tick_step(top: float) -> float:
    """A round step (1, 2, 2.5 or 5 times a power of ten) that cuts ``top`` into 4 to 8."""
    power = 10.0 ** max(0, len(str(int(top))) - 2)
    while True:
        for factor in (1, 2, 2.5, 5):
            if top / (factor * power) <= 8:
                return factor * power
        power *= 10


def scale(peak: int, marks: Sequence[int]) -> tuple[float, list[float]]:
    """The y axis of a chart whose highest round is ``peak`` tokens: its top and ticks.
    The axis fits the session, not the window: a small session fills the plot. A mark
    (the relay threshold, the window) near the peak, within half again of it, stretches
    the axis to show it; one far above is left out."""
    if peak <= 0:
        top = float(max(marks, default=WINDOW_TOKENS))
    else:
        near = [m for m in marks if m <= peak * 1.5]
        top = max([peak * 1.15, *(m * 1.05 for m in near)])
    step = _tick_step(top)
    top = step * -(-top // step)  # a whole number of steps
    return top, [step * n for n in range(round(top / step) + 1)]


def context_svg(
    points: Sequence[RoundContext], threshold: int, catalog: stdlib_gettext.NullTranslations
) -> str:
    """The chart: one point per round on an axis that fits the session, the relay
    threshold and the window as lines when they are in range; its words through
    ``catalog`` (the page's language, not the process's)."""
    gettext, ngettext = catalog.gettext, catalog.ngettext
    top_tokens, ticks = scale(max([0, *(p.tokens for p in points)]), [threshold, WINDOW_TOKENS])
    last_round = max([1, *(p.round_no for p in points)])
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(round_no: int) -> float:
        return LEFT + (round_no - 1) / max(last_round - 1, 1) * plot_w

    def y(tokens: float) -> float:
        return TOP + plot_h - tokens / top_tokens * plot_h

    title = gettext("context size per round")
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="context-chart" role="img" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}">',
        f"<title>{escape(title)}</title>",
        f'<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" class="plot"/>',
    ]
    for tick in ticks:
        parts.append(
            f'<text x="{LEFT - 6}" y="{y(tick) + 4:.1f}" class="tick" text-anchor="end">'
            f"{_tokens_label(tick)}</text>"
        )
    for tokens, css, words in (
        (WINDOW_TOKENS, "window", gettext("1M window")),
        (
            threshold,
            "threshold",
            gettext("relay at {tokens}").format(tokens=_tokens_label(threshold)),
        ),
    ):
        if tokens > top_tokens:
            continue  # out of range: the session is far below it
        parts.append(
            f'<line x1="{LEFT}" x2="{LEFT + plot_w}" y1="{y(tokens):.1f}" y2="{y(tokens):.1f}" '
            f'class="{css}"/><text x="{LEFT + plot_w - 4}" y="{y(tokens) - 4:.1f}" '
            f'class="{css}-label" text-anchor="end">{escape(words)}</text>'
        )
    if points:
        line = " ".join(f"{x(p.round_no):.1f},{y(p.tokens):.1f}" for p in points)
        parts.append(f'<polyline class="context" points="{line}"/>')
        for p in points:
            words = ngettext(
                "round {round}: {tokens:,} tokens ({count} request)",
                "round {round}: {tokens:,} tokens ({count} requests)",
                p.requests,
            ).format(round=p.round_no, tokens=p.tokens, count=p.requests)
            parts.append(
                f'<circle class="round" cx="{x(p.round_no):.1f}" cy="{y(p.tokens):.1f}" r="3">'
                f"<title>{escape(words)}</title></circle>"
            )
    axis = gettext("round (1-{last})").format(last=last_round)
    parts.append(
        f'<text x="{LEFT + plot_w / 2}" y="{HEIGHT - 8}" class="axis" text-anchor="middle">'
        f"{escape(axis)}</text></svg>"
    )
    return "".join(parts)


BUDGET_KINDS = (
    ("requests", N_("requests per minute")),
    ("input_tokens", N_("input tokens per minute")),
    ("output_tokens", N_("output tokens per minute")),
)
PANEL_H, PANEL_GAP = 96, 34


def _count_label(value: float) -> str:
    return _tokens_label(value) if value >= 1000 else f"{value:g}"


def budget_svg(
    points: Sequence[dict[str, float]],
    limits: dict[str, int | None],
    catalog: stdlib_gettext.NullTranslations,
) -> str:
    """The fleet's budget over the last minute: one small plot per kind (requests,
    input and output tokens), each point the use in the 60 s that ended there, on an
    axis that fits the use; the limit is a dashed line when it is in range (as the
    context chart treats the relay threshold) and named in the plot's title either way.
    Words through ``catalog``, the page's language."""
    gettext = catalog.gettext
    plot_w = WIDTH - LEFT - RIGHT
    height = TOP + len(BUDGET_KINDS) * (PANEL_H + PANEL_GAP)
    title = gettext("the shared budget, last minute")
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="budget-chart" role="img" '
        f'viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}">',
        f"<title>{escape(title)}</title>",
    ]
    start = points[0]["at"] if points else 0.0
    span = max((points[-1]["at"] - start) if points else 60.0, 1.0)
    for n, (kind, words) in enumerate(BUDGET_KINDS):
        top_y = TOP + n * (PANEL_H + PANEL_GAP) + 18
        limit = limits.get(kind)
        values = [float(p[kind]) for p in points]
        axis_top, _ticks = scale(int(max([0.0, *values])), [limit] if limit else [])
        if not values or max(values) == 0:
            axis_top = float(limit) * 1.05 if limit else 10.0
            axis_top = _tick_step(axis_top) * -(-axis_top // _tick_step(axis_top))

        def y(value: float, top_y: float = top_y, axis_top: float = axis_top) -> float:
            return top_y + PANEL_H - value / axis_top * PANEL_H

        now = values[-1] if values else 0
        heading = gettext(words)
        if limit:
            used = gettext("{used} of {limit}").format(used=f"{now:,.0f}", limit=f"{limit:,}")
        else:
            used = gettext("{used}, no limit").format(used=f"{now:,.0f}")
        parts.append(
            f'<g class="budget-panel" data-kind="{kind}">'
            f'<text x="{LEFT}" y="{top_y - 6}" class="panel-title">'
            f"{escape(heading)} · {escape(used)}</text>"
            f'<rect x="{LEFT}" y="{top_y}" width="{plot_w}" height="{PANEL_H}" class="plot"/>'
            f'<text x="{LEFT - 6}" y="{top_y + 4}" class="tick" text-anchor="end">'
            f"{_count_label(axis_top)}</text>"
            f'<text x="{LEFT - 6}" y="{top_y + PANEL_H + 4}" class="tick" '
            'text-anchor="end">0</text>'
        )
        if limit and limit <= axis_top:
            named = gettext("limit {limit}").format(limit=f"{limit:,}")
            parts.append(
                f'<line x1="{LEFT}" x2="{LEFT + plot_w}" y1="{y(limit):.1f}" y2="{y(limit):.1f}" '
                f'class="limit"/><text x="{LEFT + plot_w - 4}" y="{y(limit) - 4:.1f}" '
                f'class="limit-label" text-anchor="end">'
                f"{escape(named)}</text>"
            )
        if points:
            line = " ".join(
                f"{LEFT + (p['at'] - start) / span * plot_w:.1f},{y(float(p[kind])):.1f}"
                for p in points
            )
            parts.append(f'<polyline class="use" points="{line}"/>')
        parts.append("</g>")
    axis = gettext("the last 60 s, each point the 60 s before it")
    parts.append(
        f'<text x="{LEFT + plot_w / 2}" y="{height - 8}" class="axis" text-anchor="middle">'
        f"{escape(axis)}</text></svg>"
    )
    return "".join(parts)
