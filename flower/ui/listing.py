"""The sessions list: the store's listing searched and paged, each shown row summed up.

Searching and paging read only the store's listing (``list_projects`` and
``list_sessions``: the index of a SQL store, the folder of a jsonfs one), never a
transcript. Only the rows of the page shown are read, for what the index does not hold
(title, size, cost, forks; the context size comes from the same pass), so a store of
10,000 sessions costs one listing plus one page.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import msgspec

from flower.core.config import Price
from flower.core.entries import json_bytes, reported_usage
from flower.core.fork import ForkOrigin, forked_from
from flower.core.protocols import SessionStoreBase
from flower.core.records import Entry, SessionKey
from flower.core.transcript.usage import context_tokens
from flower.runtime.pricing import cost_of, price_for
from flower.stores.listing import SessionRow, listing
from flower.ui.conversation import title_of
from flower.workflow.roles import SessionRole, Titles

PAGE_SIZE = 50


class RowSummary(msgspec.Struct):
    """What a shown row says beyond the listing, read from its transcript."""

    title: str = ""
    entries: int = 0
    bytes: int = 0
    cost_usd: float | None = None
    context_tokens: int | None = None
    forked_from: ForkOrigin | None = None  # the session and entry this fork left at
    fork_end: str = ""  # uuid of the fork's last copied entry (the fork point)
    relay_from: str = ""
    role: str = ""  # what the manifest says the session was, in the page's language
    step: str = ""  # its run label as shown (work·judge#1)


class ShownRow(msgspec.Struct):
    row: SessionRow
    summary: RowSummary


class Page(msgspec.Struct):
    rows: list[ShownRow]
    total: int  # rows that match the search
    number: int  # 1-based
    pages: int
    query: str


def matches(row: SessionRow, words: list[str]) -> bool:
    text = f"{row.project_key} {row.session_id}".casefold()
    return all(word in text for word in words)


def summarize_entries(entries: Iterable[Entry], prices: Mapping[str, Price]) -> RowSummary:
    """Title, size, cost and forks of one transcript, in one pass over it."""
    summary = RowSummary()
    head: list[Entry] = []
    usage_by_message: dict[str, dict[str, Any]] = {}
    models: dict[str, str] = {}
    for entry in entries:
        summary.entries += 1
        summary.bytes += len(json_bytes(entry))
        if len(head) < 50 and not summary.title:
            head.append(entry)
            summary.title = title_of(head)
        origin = forked_from([entry]) if "forkedFrom" in entry else None
        if origin is not None:  # the last stamped entry is where the fork left its source
            summary.forked_from, summary.fork_end = origin, str(entry.get("uuid") or "")
        if summary.entries == 1 and isinstance(entry.get("relayFrom"), str):
            summary.relay_from = entry["relayFrom"]
        usage = reported_usage(entry)
        if usage:
            summary.context_tokens = context_tokens(usage)
        if usage and origin is None:  # a fork's copied replies were paid by its source
            message = entry.get("message") or {}
            # streaming writes one entry per content block, all with the message's usage
            message_id = str(message.get("id") or entry.get("uuid"))
            usage_by_message[message_id] = usage
            models[message_id] = str(message.get("model") or "")
    costs = [
        cost_of(usage, price_for(models[mid], prices)) for mid, usage in usage_by_message.items()
    ]
    known = [c for c in costs if c is not None]
    summary.cost_usd = sum(known) if known else None
    return summary


def summarize(store: SessionStoreBase, row: SessionRow, prices: Mapping[str, Price]) -> RowSummary:
    """:func:`summarize_entries` of a listed row's transcript (read whole: one query,
    where streaming it would cost a cursor per row)."""
    return summarize_entries(store.load(row.key) or [], prices)


def known_as(
    store: SessionStoreBase,
    roles: Mapping[str, SessionRole],
    gettext: Callable[[str], str],
) -> Callable[[SessionRow, RowSummary], RowSummary]:
    """What fills in a row the manifest knows: its role, its step and a title from the
    user's request or the step (flower's own prompt is no title); other rows as they are."""

    def load(project_key: str, session_id: str) -> list[Entry] | None:
        return store.load(SessionKey(project_key, session_id))

    titles = Titles(roles, load, gettext)

    def fill(row: SessionRow, summary: RowSummary) -> RowSummary:
        known = roles.get(row.session_id)
        if known is None:
            return summary
        summary.role = known.shown_role(gettext)
        summary.step = known.shown_step(gettext)
        summary.title = titles(row.project_key, row.session_id) or summary.title
        return summary

    return fill


def page(
    store: SessionStoreBase,
    prices: Mapping[str, Price],
    *,
    query: str = "",
    number: int = 1,
    size: int = PAGE_SIZE,
    roles: Mapping[str, SessionRole] | None = None,
    gettext: Callable[[str], str] = str,
) -> Page:
    """Page ``number`` of the rows whose project or id hold every word of ``query``;
    rows of the sessions in ``roles`` (the manifest's) say who they were."""
    words = query.casefold().split()
    rows = [r for r in listing(store) if matches(r, words)] if words else listing(store)
    pages = max(1, -(-len(rows) // size))
    number = min(max(1, number), pages)
    shown = rows[(number - 1) * size : number * size]
    fill = known_as(store, roles or {}, gettext)
    return Page(
        rows=[ShownRow(r, fill(r, summarize(store, r, prices))) for r in shown],
        total=len(rows),
        number=number,
        pages=pages,
        query=query,
    )
