"""The pruned view of a transcript, each entry it removes, changes or adds marked with
the policy that did it.

The view itself is the one a resume sends (:meth:`PruningSessionStore.prune_loaded`,
as a dry run: trim writes no file): the active chain, pruned. Which policy did what is
found by running the same policies one after another over that chain and seeing, by
uuid, what each one dropped, replaced or inserted; what the view differs in and no
policy did is the safety net's repair. Entries off the chain are not marked: no policy
sees them.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import msgspec

from flower.core.protocols import PruneContext, PruningPolicy
from flower.core.records import Entry, SessionKey
from flower.core.transcript.chain import active_chain
from flower.stores.prune import REPAIR_STEP, TRIM_POLICY, PruningSessionStore, run_policies


class Mark(msgspec.Struct, frozen=True):
    kind: str  # removed | changed | trimmed | added
    policy: str

    @property
    def text(self) -> str:
        return f"{self.kind} by {self.policy}"


class PrunedView(msgspec.Struct):
    entries: list[Entry]  # the view, in order
    marks: dict[str, Mark]  # by uuid: the view's changed/added entries, the removed ones
    warnings: list[str]


def _same_but_parent(a: Entry, b: Entry) -> bool:
    """Whether two entries differ only in ``parentUuid`` (a re-link, not a change)."""
    return {k: v for k, v in a.items() if k != "parentUuid"} == {
        k: v for k, v in b.items() if k != "parentUuid"
    }


def _by_uuid(entries: Sequence[Entry]) -> dict[str, Entry]:
    return {e["uuid"]: e for e in entries if isinstance(e.get("uuid"), str)}


def _change_kind(policy: str) -> str:
    return "trimmed" if policy == TRIM_POLICY else "changed"


def attribute(
    entries: Sequence[Entry], policies: Sequence[PruningPolicy], ctx: PruneContext
) -> dict[str, Mark]:
    """What each policy, run in order, removed, changed or added: the first policy that
    touched an entry is the one named."""
    marks: dict[str, Mark] = {}
    current = list(entries)
    for policy in policies:
        name = str(getattr(policy, "name", policy))
        try:
            after = run_policies(current, [policy], ctx)
        except Exception:  # the real load skips a failing policy the same way
            continue
        before, now = _by_uuid(current), _by_uuid(after)
        for uuid, entry in before.items():
            if uuid in marks:
                continue
            if uuid not in now:
                marks[uuid] = Mark("removed", name)
            elif now[uuid] is not entry and not _same_but_parent(now[uuid], entry):
                marks[uuid] = Mark(_change_kind(name), name)
        for uuid in now.keys() - before.keys():
            marks.setdefault(uuid, Mark("added", name))
        current = after
    return marks


def pruned_view(store: PruningSessionStore, key: SessionKey, raw: Sequence[Entry]) -> PrunedView:
    """The view of ``raw`` with its marks; the warnings pruning gave, as text."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        view = store.prune_loaded(key, raw)
        chain = active_chain(raw)  # what the policies are given
        by_policy = attribute(chain, store.policies, store.context(key))
    stored = _by_uuid(chain)
    marks: dict[str, Mark] = {}
    for uuid, entry in _by_uuid(view).items():
        old = stored.get(uuid)
        if old is None:
            marks[uuid] = by_policy.get(uuid, Mark("added", REPAIR_STEP))
        elif entry is not old and not _same_but_parent(entry, old):
            found = by_policy.get(uuid)
            marks[uuid] = (
                found if found and found.kind != "removed" else Mark("changed", REPAIR_STEP)
            )
    kept = _by_uuid(view)
    for uuid in stored.keys() - kept.keys():
        found = by_policy.get(uuid)
        marks[uuid] = found if found and found.kind == "removed" else Mark("removed", REPAIR_STEP)
    return PrunedView(view, marks, [str(w.message) for w in caught])
