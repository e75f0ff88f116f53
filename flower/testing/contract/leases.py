"""The fleet lease contract: what a session store the fleet runs on
(:class:`flower.core.lease.LeasingStore`) must do with a project's lease, and with the
appends of a wake that holds it. A store without those methods has these cases skipped,
with that reason: the fleet refuses it.

Three cases need a second handle on the same store (a second worker, a wake's own
store), as ``concurrent_processes`` does; without one they are skipped, saying so."""

from __future__ import annotations

import threading
import time
from functools import partial

from flower.core.lease import LeaseLostError, LeasingStore, holding
from flower.core.protocols import SessionStoreBase
from flower.testing.contract.runner import Case, CaseContext, ContractSkip
from flower.testing.contract.sessions import (
    KEY,
    OTHER_PROJECT,
    PROJECT,
    entry,
    expect_equal,
    expect_raises,
)

Ctx = CaseContext[SessionStoreBase]

TTL = 30.0
"""A lease that outlives the case."""
SHORT = 0.1
"""A lease the case lets expire (it waits three times as long)."""
A, B, C = "host-a", "host-b", "host-c"


def as_leasing(store: SessionStoreBase) -> LeasingStore:
    if not isinstance(store, LeasingStore):
        raise ContractSkip(
            "no take_lease, renew_lease, release_lease and under_lease "
            "(flower.core.lease.LeasingStore): the fleet does not run on this store"
        )
    return store


def leasing(ctx: Ctx) -> LeasingStore:
    return as_leasing(ctx.store())


def granted(got: tuple[int, str | None] | float, what: str) -> tuple[int, str | None]:
    """The token and previous holder of a take that must be granted."""
    if not isinstance(got, tuple) or len(got) != 2:
        raise AssertionError(f"{what}: got {got!r}, expected (token, previous holder)")
    token, previous = got
    if not isinstance(token, int) or isinstance(token, bool):
        raise AssertionError(f"{what}: the token {token!r} is not an int")
    return token, previous


def refused(got: tuple[int, str | None] | float, ttl: float, what: str) -> None:
    """A take that must be refused: the seconds until the holder's lease expires."""
    if isinstance(got, tuple | bool) or not isinstance(got, int | float):
        raise AssertionError(f"{what}: got {got!r}, expected the seconds until it expires")
    if not 0 < got <= ttl:
        raise AssertionError(f"{what}: {got!r} seconds until it expires, expected (0, {ttl}]")


def higher(token: int, than: int, what: str) -> None:
    if token <= than:
        raise AssertionError(f"{what}: token {token}, expected more than {than}")


class Write:
    """A write under a lease: counts its runs."""

    def __init__(self) -> None:
        self.runs = 0

    def __call__(self) -> str:
        self.runs += 1
        return "written"


def expect_held(store: LeasingStore, project: str, token: int, what: str) -> None:
    write = Write()
    expect_equal(store.under_lease(project, token, write), "written", what)
    expect_equal(write.runs, 1, f"runs of the write ({what})")


def expect_lost(store: LeasingStore, project: str, token: int, what: str) -> None:
    write = Write()
    expect_raises(LeaseLostError, partial(store.under_lease, project, token, write), what)
    expect_equal(write.runs, 0, f"runs of the write ({what})")


def take_free_lease(ctx: Ctx) -> None:
    store = leasing(ctx)
    token, previous = granted(store.take_lease(PROJECT, A, TTL), "take of a free lease")
    expect_equal(previous, None, "previous holder of a lease never taken")
    other, previous = granted(store.take_lease(OTHER_PROJECT, B, TTL), "another project's")
    expect_equal(previous, None, "previous holder of another project's lease")
    expect_held(store, PROJECT, token, "a write under the lease just taken")
    expect_held(store, OTHER_PROJECT, other, "a write under the other project's lease")


def held_lease_refused(ctx: Ctx) -> None:
    store = leasing(ctx)
    token, _ = granted(store.take_lease(PROJECT, A, TTL), "take of a free lease")
    refused(store.take_lease(PROJECT, B, TTL), TTL, "take of a lease another holder has")
    expect_held(store, PROJECT, token, "a write of the holder after another was refused")
    expect_equal(store.renew_lease(PROJECT, token, TTL), True, "renew after the refusal")


def same_holder_takes_again(ctx: Ctx) -> None:
    store = leasing(ctx)
    first, _ = granted(store.take_lease(PROJECT, A, TTL), "take of a free lease")
    second, previous = granted(store.take_lease(PROJECT, A, TTL), "take by its own holder")
    higher(second, first, "take by its own holder")
    expect_equal(previous, None, "previous holder when the holder takes its lease again")
    expect_lost(store, PROJECT, first, "a write under the token taken again")
    expect_held(store, PROJECT, second, "a write under the new token")
    expect_equal(store.renew_lease(PROJECT, first, TTL), False, "renew with the old token")


def renew_extends_the_lease(ctx: Ctx) -> None:
    store = leasing(ctx)
    token, _ = granted(store.take_lease(PROJECT, A, 1.0), "take for a second")
    expect_equal(store.renew_lease(PROJECT, token, TTL), True, "renew with the current token")
    time.sleep(1.2)
    refused(store.take_lease(PROJECT, B, TTL), TTL, "take of a lease renewed past its first ttl")
    expect_held(store, PROJECT, token, "a write under the renewed lease")
    expect_equal(store.renew_lease(OTHER_PROJECT, token, TTL), False, "renew, never leased")


def release_frees_at_once(ctx: Ctx) -> None:
    store = leasing(ctx)
    token, _ = granted(store.take_lease(PROJECT, A, TTL), "take of a free lease")
    store.release_lease(PROJECT, token)
    taken, _ = granted(store.take_lease(PROJECT, B, TTL), "take right after a release")
    higher(taken, token, "take right after a release")
    store.release_lease(PROJECT, token)  # a stale token lets nothing go
    refused(store.take_lease(PROJECT, C, TTL), TTL, "take after a release with a stale token")
    expect_lost(store, PROJECT, token, "a write under the released token, taken since")
    expect_held(store, PROJECT, taken, "a write of the new holder")


def expired_lease_taken_over(ctx: Ctx) -> None:
    store = leasing(ctx)
    token, _ = granted(store.take_lease(PROJECT, A, SHORT), "take of a free lease")
    time.sleep(SHORT * 3)
    taken, previous = granted(store.take_lease(PROJECT, B, TTL), "take of an expired lease")
    higher(taken, token, "take of an expired lease")
    expect_equal(previous, A, "previous holder of an expired lease")
    expect_equal(store.renew_lease(PROJECT, token, TTL), False, "renew after a takeover")
    expect_lost(store, PROJECT, token, "a write of the holder taken over")
    expect_held(store, PROJECT, taken, "a write of the holder that took over")


def under_lease_refuses_other_tokens(ctx: Ctx) -> None:
    store = leasing(ctx)
    expect_lost(store, PROJECT, 1, "a write under a lease never taken")
    token, _ = granted(store.take_lease(PROJECT, A, TTL), "take of a free lease")
    expect_lost(store, PROJECT, token + 1, "a write under a token never given")
    expect_lost(store, OTHER_PROJECT, token, "a write under another project's token")
    expect_held(store, PROJECT, token, "a write under the current token")


def under_lease_holds_until_written(ctx: Ctx) -> None:
    """A takeover waits for a write that runs under the lease (or that write is refused,
    which it is not here: it starts before the lease expires)."""
    opened = ctx.store()
    store, other = as_leasing(opened), as_leasing(ctx.reopened(opened))
    token, _ = granted(store.take_lease(PROJECT, A, SHORT * 3), "take of a free lease")
    inside = threading.Event()
    written_at: list[float] = []
    took: list[tuple[tuple[int, str | None] | float, float]] = []

    def write() -> str:
        inside.set()
        time.sleep(SHORT * 8)
        written_at.append(time.monotonic())
        return "written"

    def take_over() -> None:
        inside.wait(30)
        time.sleep(SHORT * 4)  # the lease has expired: only the write holds it now
        took.append((other.take_lease(PROJECT, B, TTL), time.monotonic()))

    taker = threading.Thread(target=take_over)
    taker.start()
    try:
        expect_equal(store.under_lease(PROJECT, token, write), "written", "a long write")
    finally:
        inside.set()
        taker.join(60)
    if not took:
        raise AssertionError("the other holder's take did not return")
    got, at = took[0]
    if isinstance(got, tuple) and at < written_at[0]:
        raise AssertionError(f"another holder took the lease ({got!r}) while a write held it")


def lost_lease_appends_nothing(ctx: Ctx) -> None:
    """A store a fleet wake opens (inside :func:`holding`) appends under the wake's
    token: only while it is the project's current one."""
    opened = ctx.store()
    store = as_leasing(opened)
    with holding(1, PROJECT, store):
        unleased = ctx.reopened(opened)
        expect_raises(
            LeaseLostError, partial(unleased.append, KEY, [entry(0)]), "append, never leased"
        )
    expect_equal(opened.load(KEY), None, "the transcript after an append never leased")
    old, _ = granted(store.take_lease(PROJECT, A, SHORT), "take of a free lease")
    with holding(old, PROJECT, store):
        zombie = ctx.reopened(opened)
        zombie.append(KEY, [entry(1)])
    time.sleep(SHORT * 3)
    new, _ = granted(store.take_lease(PROJECT, B, TTL), "take of an expired lease")
    with holding(new, PROJECT, store):
        holder = ctx.reopened(opened)
        holder.append(KEY, [entry(2)])
    with holding(old, PROJECT, store):
        expect_raises(LeaseLostError, partial(zombie.append, KEY, [entry(3)]), "append, lease lost")
    with holding(new, PROJECT, store):
        holder.append(KEY, [entry(4)])
    expect_equal(opened.load(KEY), [entry(1), entry(2), entry(4)], "the transcript")


def two_takers_at_once(ctx: Ctx) -> None:
    opened = ctx.store()
    handles = [as_leasing(opened), *(as_leasing(ctx.reopened(opened)) for _ in range(3))]
    start = threading.Barrier(len(handles))
    got: list[tuple[int, str | None] | float] = []
    errors: list[BaseException] = []

    def take(handle: LeasingStore, holder: str) -> None:
        try:
            start.wait(30)
            got.append(handle.take_lease(PROJECT, holder, TTL))
        except BaseException as exc:
            errors.append(exc)

    threads = [
        threading.Thread(target=take, args=(handle, f"host-{n}"))
        for n, handle in enumerate(handles)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    if errors:
        raise errors[0]
    expect_equal(len(got), len(handles), "takes that returned")
    grants = [g for g in got if isinstance(g, tuple)]
    expect_equal(len(grants), 1, f"leases granted to {len(handles)} holders taking at once")


LEASE_CASES: list[Case[SessionStoreBase]] = [
    Case("lease_take_free", "take on a free lease: a token, no previous holder", take_free_lease),
    Case(
        "lease_held_refused",
        "take on a lease another holder has: the seconds until it expires",
        held_lease_refused,
    ),
    Case(
        "lease_same_holder_again",
        "its holder takes it again: a higher token, the old one stale",
        same_holder_takes_again,
    ),
    Case(
        "lease_renew",
        "renew keeps others out past the first ttl; a token that holds nothing renews nothing",
        renew_extends_the_lease,
    ),
    Case(
        "lease_release",
        "release frees the lease at once; a stale token releases nothing",
        release_frees_at_once,
    ),
    Case(
        "lease_expired_taken_over",
        "after expiry another holder takes it: a higher token, told the previous holder",
        expired_lease_taken_over,
    ),
    Case(
        "under_lease_refuses_other_tokens",
        "under_lease raises LeaseLostError, write not run, for a token that is not current",
        under_lease_refuses_other_tokens,
    ),
    Case(
        "under_lease_holds_until_written",
        "a takeover waits for a write running under the lease",
        under_lease_holds_until_written,
    ),
    Case(
        "lease_lost_appends_nothing",
        "a store opened under a wake's lease appends only while it holds",
        lost_lease_appends_nothing,
    ),
    Case(
        "lease_two_takers_at_once",
        "four holders taking a free lease at once: one is granted it",
        two_takers_at_once,
    ),
]
