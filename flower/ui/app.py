"""The viewer's Starlette app: pages rendered server-side, live updates by SSE.

The store is opened on first use, read-only, and shared by the requests under one
lock (pages are served from Starlette's thread pool). A store that cannot be opened
is said on the page, as the CLI says it, and tried again on the next request.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import threading
from collections.abc import AsyncIterator, Callable, MutableMapping
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, quote

from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import escape
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

from flower.core.config import Settings
from flower.core.errors import FlowerError
from flower.core.i18n import N_, current_language, translations
from flower.core.labels import shown_label
from flower.core.records import Entry, SessionKey
from flower.core.redact import redact_text
from flower.stores.listing import SessionRow
from flower.ui import chart, conversation, listing, runs
from flower.ui.pruned import PrunedView, pruned_view
from flower.ui.readonly import NoStoreYet, ReadOnlyStore
from flower.workflow.roles import SessionRole

if TYPE_CHECKING:
    from flower.fleet.view import FleetView

HERE = Path(__file__).parent
TOKEN_COOKIE = "flower_ui_token"
FORK_SCAN_LIMIT = 100
"""A session page looks through its project for sessions forked off it (the first
entry of each) by itself up to this many sessions; past it, on request."""


class NotFound(HTTPException):
    """A 404 whose message (an English msgid and its fields) the page says in its language."""

    def __init__(self, message: str, **fields: str) -> None:
        super().__init__(404, message.format(**fields))
        self.message = message
        self.fields = fields


class Viewer:
    """What the pages read: the settings, the store (opened lazily) and the workspace."""

    def __init__(
        self,
        settings: Settings,
        open_store: Callable[[], Any | None],
        store_name: str,
        *,
        workspace: Path | None = None,
        interval: float = 1.0,
    ) -> None:
        self.settings = settings
        self._open_store = open_store
        self.store_name = redact_text(store_name)
        self.workspace = workspace or Path.cwd()
        self.interval = interval
        self.lock = threading.Lock()
        self._store: ReadOnlyStore | None = None
        self._fleet: FleetView | None = None

    def fleet(self) -> FleetView:
        """The fleet of this directory's ``[tool.flower.fleet]``, read-only (opened on
        first use, again after a failure)."""
        if self._fleet is None:
            from flower.fleet.view import FleetView

            self._fleet = FleetView(self.settings, self.workspace)
        return self._fleet

    def store(self) -> ReadOnlyStore:
        """The store, opened read-only on first use (call with :attr:`lock` held); while
        it does not exist (``open_store`` gives None), an empty one, and it is looked
        for again on the next request."""
        if self._store is None:
            opened = self._open_store()
            if opened is None:
                return ReadOnlyStore(NoStoreYet())
            self._store = ReadOnlyStore(opened)
        return self._store

    def close(self) -> None:
        with self.lock:
            if self._store is not None:
                self._store.close()
                self._store = None
        if self._fleet is not None:
            self._fleet.close()

    def prices(self) -> dict[str, Any]:
        from flower.runtime.pricing import price_table

        return price_table(self.settings.engine.prices)

    def pruning(self) -> Any:
        from flower.stores.prune import PruningSessionStore

        # trim shows its pointers, writes no file
        return PruningSessionStore.from_settings(self.store(), self.settings, dry_run=True)

    def roles(self) -> dict[str, SessionRole]:
        """What the run directory's manifest says each session was (nothing when it
        cannot be read: the pages show the sessions as they are)."""
        from flower.workflow.roles import run_roles

        return run_roles(self.settings)

    def entries(self, key: SessionKey) -> list[Entry]:
        entries = self.store().load(key)
        if entries is None:
            raise NotFound(
                N_("no session {session} in project {project}"),
                session=key.session_id,
                project=key.project_key,
            )
        return entries


def event_stream(events: AsyncIterator[str]) -> StreamingResponse:
    """Server-sent events, unbuffered by a proxy and never cached."""
    return StreamingResponse(
        events,
        media_type="text/event-stream",
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )


def _environment(language: str) -> Environment:
    """The templates, speaking ``language`` (Jinja2's i18n extension over flower's
    catalogs: ``{{ _("...") }}`` and ``{% trans %}`` in the templates)."""
    env = Environment(
        loader=FileSystemLoader(HERE / "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
        extensions=["jinja2.ext.i18n"],
    )
    catalog = translations(language)
    env.install_gettext_callables(  # type: ignore[attr-defined]  # added by the extension
        catalog.gettext, catalog.ngettext, newstyle=True
    )
    env.globals["html_lang"] = _html_lang(language)
    env.filters["tokens"] = lambda n: "" if n is None else f"{n:,}"
    env.filters["dollars"] = lambda c: "" if c is None else f"${c:.4f}"
    env.filters["size"] = _size
    env.filters["clock"] = _clock
    env.filters["q"] = lambda s: quote(str(s), safe="")
    env.filters["shown_label"] = lambda label: shown_label(str(label), catalog.gettext)
    return env


def _html_lang(language: str) -> str:
    """``language`` as ``<html lang>`` wants it (BCP 47): ``zh_CN`` -> ``zh-CN``."""
    return language.replace("_", "-")


def _clock(epoch: float | None) -> str:
    """An epoch time as the page shows it, local like ``flower fleet status``: the time
    of day within a day, the date too before that."""
    if not epoch:
        return ""
    import time

    shape = "%H:%M:%S" if time.time() - epoch < 86_400 else "%Y-%m-%d %H:%M"
    return time.strftime(shape, time.localtime(epoch))


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB"):
        if n < 1024 or unit == "MB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return f"{n} B"


def fleet_groups(tasks: list[dict[str, Any]]) -> list[tuple[str, list[dict[str, Any]]]]:
    """The tasks by state, in the page's order (running first), empty states left out."""
    from flower.fleet.view import STATES

    order = [*STATES, *sorted({t["state"] for t in tasks} - set(STATES))]
    return [
        (s, [t for t in tasks if t["state"] == s])
        for s in order
        if any(t["state"] == s for t in tasks)
    ]


def _key(request: Request) -> SessionKey:
    try:
        return SessionKey(request.path_params["project"], request.path_params["session"])
    except FlowerError:
        raise NotFound(N_("no such session")) from None


def build_app(viewer: Viewer, *, token: str | None = None, language: str | None = None) -> ASGIApp:
    """The ASGI app; with ``token``, every request must carry it (``?token=`` once, then
    the cookie it sets). Its pages speak ``language`` (by default the one active when
    it is built: ``flower ui`` chooses it as every command does)."""
    chosen = language or current_language()
    env = _environment(chosen)
    catalog = translations(chosen)
    say = catalog.gettext  # the app's own messages, in the pages' language

    def render(name: str, status: int = 200, **context: Any) -> HTMLResponse:
        context.setdefault("store_name", viewer.store_name)
        context.setdefault("status", status)  # error.html heads a 404 "not found"
        return HTMLResponse(env.get_template(name).render(**context), status_code=status)

    def sessions_page(request: Request) -> HTMLResponse:
        query = request.query_params.get("q", "")
        try:
            number = int(request.query_params.get("page", "1"))
        except ValueError:
            number = 1
        with viewer.lock:
            store = viewer.store()
            try:
                result = listing.page(
                    store,
                    viewer.prices(),
                    query=query,
                    number=number,
                    roles=viewer.roles(),
                    gettext=say,
                )
            except NotImplementedError:
                raise FlowerError(
                    say(N_("{store} cannot list its sessions")).format(store=viewer.store_name)
                ) from None
        return render("sessions.html", page=result)

    def session_page(request: Request) -> HTMLResponse:
        key = _key(request)
        pruned = request.query_params.get("view") == "pruned"
        from flower.core.fork import fork_points

        look_for_forks = request.query_params.get("forks") == "all"
        with viewer.lock:
            raw = viewer.entries(key)
            view: PrunedView = pruned_view(viewer.pruning(), key, raw)
            siblings = len(viewer.store().list_sessions(key.project_key))
            forks: dict[str, list[str]] = {}
            if look_for_forks or siblings <= FORK_SCAN_LIMIT:
                forks, look_for_forks = fork_points(viewer.store(), key), True
            roles = viewer.roles()
            row = SessionRow(key.project_key, key.session_id, 0)
            summary = listing.known_as(viewer.store(), roles, say)(
                row, listing.summarize_entries(raw, viewer.prices())
            )
        shown = view.entries if pruned else raw
        shown_items = conversation.items(shown)
        origin = summary.forked_from
        for item in shown_items:
            mark = view.marks.get(item.uuid)
            if mark is not None:
                item.mark, item.mark_kind = mark.text, mark.kind
            for block in item.blocks:  # a result shown inside its call carries its mark
                result = block.result
                mark = view.marks.get(result.entry_uuid) if result is not None else None
                if result is not None and mark is not None:
                    result.mark, result.mark_kind = mark.text, mark.kind
            if origin is not None and item.uuid == summary.fork_end:
                item.forked_from = conversation.ForkPoint(origin.session_id, origin.message_uuid)
            item.forks = forks.get(item.uuid, [])
        by_policy: dict[str, int] = {}
        for mark in view.marks.values():
            by_policy[mark.text] = by_policy.get(mark.text, 0) + 1
        points = chart.rounds(raw)
        return render(
            "session.html",
            key=key,
            pruned=pruned,
            items=shown_items,
            count=len(raw),
            summary=summary,
            by_policy=sorted(by_policy.items()),
            warnings=view.warnings,
            chart_svg=chart.context_svg(points, viewer.settings.relay.threshold_tokens, catalog),
            rounds=points,
            threshold=viewer.settings.relay.threshold_tokens,
            interval_ms=int(viewer.interval * 1000),
            forks_looked_for=look_for_forks,
            relayed_to=runs.relayed_to(viewer.settings.run_path, key.session_id),
            siblings=siblings,
        )

    async def session_events(request: Request) -> Response:
        key = _key(request)
        start = request.headers.get("last-event-id") or request.query_params.get("after", "0")
        try:
            seen = max(0, int(start))
        except ValueError:
            seen = 0
        template = env.get_template("_items.html")

        def fresh() -> list[Entry]:
            with viewer.lock:
                return list(viewer.store().iter_entries(key))[seen:]

        async def stream() -> AsyncIterator[str]:
            nonlocal seen
            yield f"retry: {int(viewer.interval * 1000)}\n\n"
            while not await request.is_disconnected():
                new = await run_in_threadpool(fresh)
                if new:
                    seen += len(new)
                    html = template.render(
                        items=conversation.items(new), project_key=key.project_key
                    )
                    data = json.dumps({"html": html, "count": seen})
                    yield f"id: {seen}\nevent: entries\ndata: {data}\n\n"
                else:
                    yield ": idle\n\n"
                await asyncio.sleep(viewer.interval)

        return event_stream(stream())

    def run_page(request: Request) -> HTMLResponse:
        asked = request.query_params.get("workspace")
        if not asked:
            return render("run.html", run=runs.run_view(viewer.settings, viewer.workspace))
        # a fleet task's workspace (the fleet page links there), and only such a one
        from flower.fleet.places import workspace_settings
        from flower.fleet.view import NoFleetError, task_workspace

        try:
            found = task_workspace(viewer.fleet().report(), asked)
        except NoFleetError:
            found = None
        if found is None:
            raise NotFound(N_("no fleet task works in {workspace}"), workspace=asked)
        return render("run.html", run=runs.run_view(workspace_settings(found), found))

    def fleet_state() -> tuple[int, dict[str, Any]]:
        """The fleet page's data: 200 and the report, or the reason there is none (200:
        no fleet here; 503: its database cannot be read now), in the page's language."""
        from flower.fleet.view import FleetReadError, NoFleetError

        fleet = viewer.fleet()
        try:
            report = fleet.report()
        except NoFleetError as exc:
            status = 503 if isinstance(exc, FleetReadError) else 200
            return status, {
                "database": fleet.shown_database,
                "error": say(exc.message).format(**exc.fields),
            }
        report["database"] = fleet.shown_database
        return 200, report

    def fleet_parts(report: dict[str, Any]) -> dict[str, str]:
        """The live parts of the fleet page, rendered: the tasks and the budget chart."""
        if "error" in report:
            return {"tasks": "", "chart": "", "summary": ""}
        groups = fleet_groups(report["tasks"])
        tasks = env.get_template("_fleet_tasks.html").render(groups=groups, report=report)
        svg = chart.budget_svg(report["per_minute"], report["budget"]["effective"], catalog)
        summary = env.get_template("_fleet_summary.html").render(report=report)
        return {"tasks": tasks, "chart": svg, "summary": summary}

    async def fleet_page(request: Request) -> HTMLResponse:
        status, report = await run_in_threadpool(fleet_state)
        return render(
            "fleet.html",
            status=status,
            report=report,
            parts=fleet_parts(report),
            interval_ms=int(viewer.interval * 1000),
        )

    async def fleet_json(request: Request) -> Response:
        status, report = await run_in_threadpool(fleet_state)
        return Response(
            json.dumps(report, ensure_ascii=False, default=str),
            status_code=status,
            media_type="application/json",
        )

    async def fleet_events(request: Request) -> Response:
        async def stream() -> AsyncIterator[str]:
            yield f"retry: {int(viewer.interval * 1000)}\n\n"
            sent = ""
            while not await request.is_disconnected():
                status, report = await run_in_threadpool(fleet_state)
                parts = fleet_parts(report)
                data = json.dumps({"status": status, "error": report.get("error"), **parts})
                if data != sent:
                    sent = data
                    yield f"event: fleet\ndata: {data}\n\n"
                else:
                    yield ": idle\n\n"
                await asyncio.sleep(viewer.interval)

        return event_stream(stream())

    async def not_found(request: Request, exc: Exception) -> Response:
        if isinstance(exc, NotFound):
            detail = say(exc.message).format(**exc.fields)
        else:
            detail = getattr(exc, "detail", None) or say(N_("not found"))
        return render("error.html", status=getattr(exc, "status_code", 404), message=detail)

    async def flower_error(request: Request, exc: Exception) -> Response:
        return render("error.html", status=503, message=redact_text(str(exc)), store_error=True)

    async def server_error(request: Request, exc: Exception) -> Response:
        message = say(N_("internal error: {name}")).format(name=type(exc).__name__)
        return render("error.html", status=500, message=message)

    app = Starlette(
        routes=[
            Route("/", sessions_page),
            Route("/run", run_page),
            Route("/fleet", fleet_page),
            Route("/fleet.json", fleet_json),
            Route("/fleet/events", fleet_events),
            Route("/s/{project}/{session}", session_page),
            Route("/s/{project}/{session}/events", session_events),
            Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
        ],
        exception_handlers={
            HTTPException: not_found,
            FlowerError: flower_error,
            Exception: server_error,
        },
    )
    if not token:
        return app
    refusal = say(N_("open the URL flower ui printed (it carries the token)"))
    return TokenGate(app, token, refusal=refusal, html_lang=_html_lang(chosen))


class TokenGate:
    """Requests without the token (``?token=...`` or the cookie it sets) get a 403."""

    def __init__(
        self, app: ASGIApp, token: str, *, refusal: str | None = None, html_lang: str = "en"
    ) -> None:
        self.app = app
        self.token = token
        self.refusal = refusal or "open the URL flower ui printed (it carries the token)"
        self.html_lang = html_lang

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("token", [""])[0]
        from_query = hmac.compare_digest(given.encode(), self.token.encode())
        cookie = _cookie(scope, TOKEN_COOKIE)
        if not from_query and not hmac.compare_digest(cookie.encode(), self.token.encode()):
            response = HTMLResponse(
                f'<!doctype html><html lang="{escape(self.html_lang)}"><title>flower</title>'
                f"<p>403: {escape(self.refusal)}</p>",
                status_code=403,
            )
            await response(scope, receive, send)
            return

        async def send_with_cookie(message: MutableMapping[str, Any]) -> None:
            if from_query and message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                value = f"{TOKEN_COOKIE}={self.token}; Path=/; HttpOnly; SameSite=Strict"
                headers.append((b"set-cookie", value.encode()))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_cookie)


def _cookie(scope: Scope, name: str) -> str:
    for header, value in scope.get("headers", []):
        if header == b"cookie":
            for part in value.decode("latin-1").split(";"):
                k, _, v = part.strip().partition("=")
                if k == name:
                    return v
    return ""
