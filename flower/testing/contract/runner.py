"""Running contract cases one by one, each with its own outcome."""

from __future__ import annotations

import contextlib
import functools
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

S = TypeVar("S")

Outcome = Literal["passed", "failed", "skipped"]


class ContractSkip(Exception):
    """A case that cannot run against this store (an optional method, no reopen...)."""


class ContractFailure(AssertionError):
    """Raised by ``check_*`` when at least one case failed; holds the whole report."""

    def __init__(self, report: ContractReport) -> None:
        self.report = report
        super().__init__(report.summary())


@dataclass
class CaseContext(Generic[S]):
    """What a case gets: fresh stores from the factory, closed when the case ends."""

    factory: Callable[[], S]
    reopen: Callable[[S], Callable[[], S]] | None = None
    opened: list[Any] = field(default_factory=list)

    def store(self) -> S:
        store = self.factory()
        self.opened.append(store)
        return store

    def opener(self, store: S) -> Callable[[], S]:
        """A zero-argument callable opening the same data as ``store`` (maybe elsewhere)."""
        if self.reopen is not None:
            return self.reopen(store)
        url = getattr(store, "url", None)
        if isinstance(url, str):
            return functools.partial(open_session_url, url)
        raise ContractSkip(
            "needs a second handle on the same store: pass reopen=... to the check, or give "
            "the store a `url` attribute that flower.open_session_store accepts"
        )

    def reopened(self, store: S) -> S:
        other = self.opener(store)()
        self.opened.append(other)
        return other

    def close_all(self) -> None:
        for store in reversed(self.opened):
            close = getattr(store, "close", None)
            if close is not None:
                # Closing must not hide the case's own outcome.
                with contextlib.suppress(Exception):
                    close()
        self.opened.clear()


def open_session_url(url: str) -> Any:
    """Open a session store by URL with default settings (picklable, for child processes)."""
    from flower.core.config import Settings
    from flower.stores.open import open_session_store

    return open_session_store(url, settings=Settings())


@dataclass(frozen=True)
class Case(Generic[S]):
    """One contract: a name to select and report it by, and what it checks."""

    name: str
    summary: str
    run: Callable[[CaseContext[S]], None]

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class CaseResult:
    name: str
    outcome: Outcome
    detail: str = ""


@dataclass
class ContractReport:
    results: list[CaseResult]

    def of(self, outcome: Outcome) -> list[CaseResult]:
        return [r for r in self.results if r.outcome == outcome]

    @property
    def passed(self) -> list[str]:
        return [r.name for r in self.of("passed")]

    @property
    def failed(self) -> list[str]:
        return [r.name for r in self.of("failed")]

    @property
    def skipped(self) -> list[str]:
        return [r.name for r in self.of("skipped")]

    def summary(self) -> str:
        head = f"{len(self.passed)} passed, {len(self.failed)} failed, {len(self.skipped)} skipped"
        lines = [head]
        for result in self.results:
            if result.outcome != "passed":
                lines.append(f"  {result.outcome.upper()} {result.name}: {result.detail}")
        return "\n".join(lines)


def select(cases: list[Case[S]], only: Iterable[str] | str | None) -> list[Case[S]]:
    if only is None:
        return list(cases)
    wanted = [only] if isinstance(only, str) else list(only)
    known = {case.name: case for case in cases}
    unknown = [name for name in wanted if name not in known]
    if unknown:
        raise ValueError(f"unknown contract case(s) {unknown}; known: {sorted(known)}")
    return [known[name] for name in wanted]


def run_case(
    case: Case[S],
    factory: Callable[[], S],
    reopen: Callable[[S], Callable[[], S]] | None = None,
) -> CaseResult:
    """Run one case; ``NotImplementedError`` from an optional method counts as skipped."""
    ctx = CaseContext(factory, reopen)
    try:
        case.run(ctx)
    except ContractSkip as exc:
        return CaseResult(case.name, "skipped", str(exc))
    except NotImplementedError as exc:
        return CaseResult(case.name, "skipped", f"store does not implement it ({exc!r})")
    except Exception as exc:
        where = traceback.extract_tb(exc.__traceback__)[-1]
        detail = f"{type(exc).__name__}: {exc} (at {where.name}:{where.lineno})"
        return CaseResult(case.name, "failed", detail)
    finally:
        ctx.close_all()
    return CaseResult(case.name, "passed")


def run_all(
    cases: list[Case[S]],
    factory: Callable[[], S],
    only: Iterable[str] | str | None,
    reopen: Callable[[S], Callable[[], S]] | None,
) -> ContractReport:
    report = ContractReport([run_case(case, factory, reopen) for case in select(cases, only)])
    if report.failed:
        raise ContractFailure(report)
    return report


def run_in_pytest(
    case: Case[S],
    factory: Callable[[], S],
    reopen: Callable[[S], Callable[[], S]] | None = None,
) -> None:
    """One case as one pytest test: failures keep their traceback, skips become skips."""
    import pytest

    ctx = CaseContext(factory, reopen)
    try:
        case.run(ctx)
    except ContractSkip as exc:
        pytest.skip(f"{case.name}: {exc}")
    except NotImplementedError as exc:
        pytest.skip(f"{case.name}: store does not implement it ({exc!r})")
    finally:
        ctx.close_all()
