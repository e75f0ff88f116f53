"""``Runtime``: run an agent against the Messages API, persisting every turn as it happens.

One ``run`` is one step: a new session (or ``resume=sid``), the messages loop of
:mod:`flower.runtime.loop` inside :class:`~flower.core.resilience.Resilience` (which owns
every retry: the SDK client is made with ``max_retries=0``), and a
:class:`~flower.runtime.spec.StepResult`. Writes go to the raw store; a resume reads
through the pruning view, so failed calls and stale denials never reach the model.
"""

from __future__ import annotations

import contextlib
import os
import uuid
import warnings
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from flower.core.config import Settings, load_settings
from flower.core.errors import FlowerError, InvalidKeyError, UnknownSessionError
from flower.core.fileperms import local_fault
from flower.core.i18n import _, ngettext
from flower.core.keys import project_key
from flower.core.protocols import CallGate, SessionStoreBase
from flower.core.records import SessionKey
from flower.core.telemetry import Attributes, Tracing, tracing_for
from flower.runtime.credentials import require_api_key
from flower.runtime.events import Event, EventSink, SessionStarted, StepDone, Waiting
from flower.runtime.loop import Conversation, IncompleteResponseError, Tally, converse
from flower.runtime.persist import TranscriptWriter
from flower.runtime.pricing import price_for, price_table
from flower.runtime.spec import AgentSpec, StepResult

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic

    from flower.core.resilience import Resilience, ResilienceError
    from flower.stores.prune import PruningSessionStore


class InvalidRunOptionError(FlowerError, ValueError):
    """An option of ``Runtime.run`` that cannot be used as given."""

    exit_code = 2


class OrphanWarning(UserWarning):
    """A run killed commands that a flower killed with ``kill -9`` had left running."""


class _EngineFailure(Exception):
    """Wraps a non-API failure (the store, a bug) so Resilience does not retry it."""

    resilience_kind = "fatal"

    def __init__(self, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.cause = cause


def api_client(settings: Settings) -> AsyncAnthropic:
    """The ``anthropic.AsyncAnthropic`` a run makes when it is given none: from the
    environment (:class:`MissingAPIKeyError` without a key), no retries of its own
    (resilience retries), ``[tool.flower.engine] request_timeout``. Making one costs
    tens of milliseconds of CPU (its SSL context): a caller that runs many steps on
    one event loop passes one to its :class:`Runtime` (``client=``)."""
    require_api_key()
    import anthropic

    # how long a silent connection may hang before resilience retries it
    timeout = anthropic.Timeout(settings.engine.request_timeout, connect=5.0)
    return anthropic.AsyncAnthropic(max_retries=0, timeout=timeout)


def _iso_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def _is_api_failure(exc: BaseException) -> bool:
    """Errors of the wire (SDK, transport, a cut stream): the ones worth retrying. A full
    disk or a read-only file system is an ``OSError`` too, but the machine's: never."""
    if local_fault(exc) is not None:
        return False
    if isinstance(exc, IncompleteResponseError | TimeoutError | OSError):
        return True
    module = type(exc).__module__
    return module.startswith(("anthropic", "httpx", "httpcore", "h11"))


class _Session:
    """The session of one ``run``: its id, writer and whether it holds entries."""

    def __init__(self) -> None:
        self.session_id: str | None = None
        self.writer: TranscriptWriter | None = None
        self.engine_failure = False


class Runtime:
    """Runs agents; see docs/engine.md.

    ``run_dir`` is relative to the current working directory (seed) and wins over
    ``settings.run_dir``. ``trim`` is off unless asked for (seed); ``ephemeral`` and
    ``keep_denials`` left as ``None`` follow ``[tool.flower.pruning]`` (True and 1 by
    default, as the seed has them). ``store`` is the raw session store (default: the configured
    one); ``client`` an ``anthropic.AsyncAnthropic`` (default: one per run, from the
    environment, ``max_retries=0``); ``resilience`` a
    :class:`~flower.core.resilience.Resilience` (default: from settings); ``tracing`` a
    :class:`~flower.core.telemetry.Tracing` (default: from ``[tool.flower.telemetry]``
    and the ``OTEL_*`` variables, see docs/traces.md).
    """

    def __init__(
        self,
        workspace: str | os.PathLike[str] = ".",
        run_dir: str | os.PathLike[str] = "runs",
        *,
        trim: bool = False,
        ephemeral: bool | None = None,
        keep_denials: int | None = None,
        settings: Settings | None = None,
        store: SessionStoreBase | None = None,
        client: AsyncAnthropic | None = None,
        resilience: Resilience | None = None,
        on_event: EventSink | None = None,
        tracing: Tracing | None = None,
        gate: CallGate | None = None,
    ) -> None:
        self.workspace = Path(os.path.realpath(Path(workspace).expanduser()))
        self.run_dir = Path(run_dir)
        self.trim = trim
        self.ephemeral = ephemeral
        self.keep_denials = keep_denials
        settings = settings or load_settings().settings
        if settings.run_dir != str(self.run_dir):
            settings = msgspec.structs.replace(settings, run_dir=str(self.run_dir))
        self.settings = settings
        if store is None and settings.sessions.encrypt:
            from flower.stores.keyring import load_keyring

            # the store opens lazily, after lineage and locks: a missing key stops here
            load_keyring(settings)
        self._store = store
        self._owns_store = store is None  # a store given to it stays the caller's to close
        self._view: PruningSessionStore | None = None
        self._retry_view: PruningSessionStore | None = None
        self.client = client
        self.resilience = resilience
        self.gate = gate
        """Asked before every model call (a shared budget: the fleet's); None: no gate."""
        self.on_event = on_event
        self.on_session: Callable[[str], None] | None = None
        self.project_key = project_key(self.workspace)
        self._prices = price_table(settings.engine.prices)
        self.tracing = tracing if tracing is not None else tracing_for(settings)

    # -- stores

    @property
    def store(self) -> SessionStoreBase:
        """The raw session store: everything as written."""
        if self._store is None:
            from flower.stores.open import open_session_store

            self._store = open_session_store(settings=self.settings)
        return self._store

    @property
    def view(self) -> PruningSessionStore:
        """The pruning view over :attr:`store`: what the model is shown on resume."""
        if self._view is None:
            self._view = self._pruning_view(self.ephemeral)
        return self._view

    @property
    def retry_view(self) -> PruningSessionStore:
        """:attr:`view` without the ephemeral policy, for a retry within one run: what a
        command printed seconds ago is not stale yet."""
        if self._retry_view is None:
            self._retry_view = self._pruning_view(False)
        return self._retry_view

    def _pruning_view(self, ephemeral: bool | None) -> PruningSessionStore:
        from flower.stores.prune import PruningSessionStore

        return PruningSessionStore.from_settings(
            self.store,
            self.settings,
            trim=self.trim,
            ephemeral=ephemeral,
            keep_denials=self.keep_denials,
            run_dir=self.run_dir,
        )

    def key(self, session_id: str) -> SessionKey:
        return SessionKey(self.project_key, session_id)

    def has_session(self, session_id: str) -> bool:
        """Whether the store holds ``session_id`` for this workspace."""
        try:
            key = self.key(session_id)
        except InvalidKeyError:
            return False
        return bool(self.store.exists(key))

    def context_size(self, session_id: str) -> int | None:
        """Tokens of the last round's context in ``session_id`` (``None``: no usage yet)."""
        from flower.core.transcript.usage import context_tokens

        try:
            usage = self.store.last_usage(self.key(session_id))
        except InvalidKeyError:
            return None
        return context_tokens(usage) if usage else None

    def close(self) -> None:
        """Close the store this runtime opened; a store passed as ``store=`` is left
        open and in use (it is the caller's), so a later run goes on with it."""
        if self._store is not None and self._owns_store:
            self._store.close()
            self._store = None
            self._view = self._retry_view = None

    # -- events

    def _emit(self, event: Event) -> None:
        if self.on_event is None:
            return
        try:
            self.on_event(event)
        except Exception as exc:  # live output must never stop a run
            warnings.warn(
                _("on_event failed: {error!r}").format(error=exc), RuntimeWarning, stacklevel=2
            )

    def _fire_on_session(self, session_id: str, resumed: bool) -> None:
        if self.on_session is not None:
            # lineage is best effort (seed): a failing hook never stops the run
            with contextlib.suppress(Exception):
                self.on_session(session_id)
        self._emit(SessionStarted(session_id, resumed))

    # -- client and resilience

    def _make_client(self) -> AsyncAnthropic:
        return api_client(self.settings)

    def _make_resilience(self, client: AsyncAnthropic) -> Resilience:
        if self.resilience is not None:
            if self.gate is not None and getattr(self.resilience, "gate", None) is None:
                self.resilience.gate = self.gate
            return self.resilience
        from flower.core.resilience import Resilience

        base_url = str(client.base_url) if getattr(client, "base_url", None) else None
        return Resilience.from_settings(
            self.settings,
            base_url=base_url,
            on_status=lambda line: self._emit(Waiting(line)),
            tracing=self.tracing,
            gate=self.gate,
        )

    def _toolbox(self, agent: AgentSpec) -> Any:
        from flower.core.snapshots import SNAPSHOT_DIR
        from flower.runtime.tools import ToolBox

        engine = self.settings.engine
        return ToolBox(
            self.workspace,
            list(agent.allowed_tools),
            bash_timeout=engine.bash_timeout,
            max_output=engine.max_tool_output,
            confine=engine.confine_to_workspace,
            # trim's pointers name files under the run directory, which may lie outside
            readable=(Path(self.run_dir) / "trimmed",),
            ledger=self._ledger,
            # with encryption on, no command text in the clear under the run directory
            ledger_text=not self.settings.sessions.encrypt,
            snapshots=Path(self.run_dir).absolute() / SNAPSHOT_DIR,
        )

    @property
    def _ledger(self) -> Path:
        """Where Bash records the commands running now (see ``tools.orphans``)."""
        return Path(self.run_dir).absolute() / "running"

    def _reap_orphans(self) -> None:
        """Kill what a flower killed with ``kill -9`` left running in this run directory."""
        from flower.runtime.tools.orphans import reap

        killed = reap(self._ledger)
        if killed:
            commands = "; ".join(repr(command[:80]) for command in killed if command)
            commands = commands or _("(their text is not kept: encryption is on)")
            warnings.warn(
                ngettext(
                    "killed {count} command a killed flower left running: {commands}",
                    "killed {count} commands a killed flower left running: {commands}",
                    len(killed),
                ).format(count=len(killed), commands=commands),
                OrphanWarning,
                stacklevel=3,
            )

    # -- running

    async def run(
        self,
        agent: AgentSpec,
        prompt: str,
        resume: str | None = None,
        *,
        step: str | None = None,
        context_limit: int | None = None,
        relay_from: str | None = None,
        resume_at: str | None = None,
    ) -> StepResult:
        """Run ``agent`` on ``prompt`` (in session ``resume`` when given) to its end.

        ``resume_at`` (with ``resume``): the uuid of an entry on the session's active
        chain; the session is forked there (:func:`flower.core.fork.fork`) and the run
        continues the fork, as the Claude Agent SDK's ``resume_session_at``. The old
        session is left as it was; ``result.session_id`` is the fork's.

        ``context_limit`` (tokens): between two turns, once every tool_use of the last
        response has its result stored, the run ends itself instead of calling the API
        again when the last request's context plus twice the growth expected per turn
        would reach the limit (room for the next request and for a handoff after it).
        The result then has ``stop == "context_limit"`` and ``ok`` False.
        ``relay_from`` (a new session only) is written as ``relayFrom`` on the new
        session's first user entry: the session it takes over from.
        """
        if not isinstance(prompt, str) or not prompt.strip():
            raise InvalidRunOptionError(
                _("the prompt must be non-empty text, got {prompt}").format(prompt=repr(prompt))
            )
        _check_options(resume, context_limit, relay_from)
        result = StepResult(step=step or agent.name, started_at=_iso_now())
        if resume is not None and not self.has_session(resume):
            raise UnknownSessionError(
                _("no session {session} for workspace {workspace} in the session store").format(
                    session=repr(resume), workspace=self.workspace
                )
            )
        if resume_at is not None:
            if resume is None:
                raise InvalidRunOptionError(
                    _(
                        "resume_at={resume_at} names an entry of the session to resume: "
                        "it needs resume=ID"
                    ).format(resume_at=repr(resume_at))
                )
            from flower.core.fork import fork

            resume = fork(self.store, self.key(resume), resume_at).session_id
        own_client = self.client is None
        client = self._make_client() if self.client is None else self.client
        model = agent.model or self.settings.engine.model
        attributes = _agent_attributes(agent, model)
        with self.tracing.span(f"invoke_agent {agent.name}", attributes) as span:
            try:
                await self._run(agent, prompt, resume, client, result, context_limit, relay_from)
            finally:
                if own_client:
                    await client.close()
                span.set(_result_attributes(result))
            if not result.ok:
                span.fail(result.error or "the run did not finish", result.stop or "failed")
        result.ended_at = _iso_now()
        self._emit(StepDone(result))
        return result

    async def _run(
        self,
        agent: AgentSpec,
        prompt: str,
        resume: str | None,
        client: AsyncAnthropic,
        result: StepResult,
        context_limit: int | None = None,
        relay_from: str | None = None,
    ) -> None:
        from flower.core.resilience import AttemptError, AttemptInfo, ResilienceError

        resilience = self._make_resilience(client)
        self._reap_orphans()
        toolbox = self._toolbox(agent)
        tools = toolbox.definitions()
        model = agent.model or self.settings.engine.model
        tally = Tally()
        session = _Session()
        if resume is not None:
            session.session_id = resume
            result.session_id = resume
            result.resumed = True
            self._fire_on_session(resume, True)

        def start(text: str, resuming: bool) -> list[dict[str, Any]]:
            if session.session_id is None:
                session.session_id = str(uuid.uuid4())
                result.session_id = session.session_id
                session.writer = TranscriptWriter(
                    self.store, self.key(session.session_id), str(self.workspace)
                )
                session.writer.user_prompt(text, relay_from=relay_from)
                self._fire_on_session(session.session_id, False)
                return [{"role": "user", "content": [{"type": "text", "text": text}]}]
            return self._continue(session, text, resuming)

        async def attempt(info: AttemptInfo) -> Any:
            resuming = info.resuming and session.session_id is not None
            if resuming:
                result.resumed = True
            attributes = {"flower.attempt.number": info.number, "flower.attempt.resuming": resuming}
            with self.tracing.span("flower.attempt", attributes) as span:
                try:
                    return await one_attempt(resuming)
                finally:
                    span.set({"flower.session.id": session.session_id})

        async def one_attempt(resuming: bool) -> Any:
            try:
                messages = start(resilience.resume_prompt if resuming else prompt, resuming)
                assert session.writer is not None
                conv = Conversation(
                    client=client,
                    writer=session.writer,
                    messages=messages,
                    model=model,
                    system=agent.instructions,
                    max_tokens=agent.max_tokens,
                    max_turns=agent.max_turns,
                    toolbox=toolbox,
                    tools=tools,
                    price=price_for(model, self._prices),
                    emit=self._emit,
                    tally=tally,
                    context_limit=context_limit,
                    tracing=self.tracing,
                    resilience=resilience,
                )
                return await converse(conv)
            except Exception as exc:
                if _is_api_failure(exc):
                    raise
                session.engine_failure = True
                cause = local_fault(exc) or exc  # one line naming the file, not a retry
                raise _EngineFailure(cause) from exc

        def on_error(error: AttemptError) -> None:
            if session.engine_failure or session.writer is None:
                return
            try:
                session.writer.api_error(error.text, error.kind, error.status)
            except Exception as exc:  # the record of a failure is not worth a second one
                warnings.warn(
                    _("could not store the API error entry: {error!r}").format(error=exc),
                    RuntimeWarning,
                    stacklevel=2,
                )

        finished = False
        try:
            outcome, errors = await resilience.run(
                attempt, has_session=lambda: session.writer is not None, on_error=on_error
            )
            result.ok, result.error, result.stop = outcome.ok, outcome.error, outcome.stop
            finished = True
        except ResilienceError as exc:
            if session.engine_failure and isinstance(exc.__cause__, _EngineFailure):
                failure = exc.__cause__.cause  # as it was raised: its own cause kept
                raise failure from failure.__cause__
            errors = exc.errors
            result.ok = False
            result.error = _describe_failure(exc, model)
        result.errors = [e.as_dict() for e in errors]
        result.attempts = max(len(errors) + (1 if finished else 0), 1)
        result.num_turns = tally.turns
        result.cost_usd = (
            tally.cost_usd if tally.turns else (0.0 if tally.cost_usd is not None else None)
        )
        result.text = tally.last_text
        if tally.last_usage:
            from flower.core.transcript.usage import context_tokens

            result.context = context_tokens(tally.last_usage)

    def _continue(self, session: _Session, text: str, resuming: bool) -> list[dict[str, Any]]:
        """Load the session through the pruning view, append ``text``, return the messages."""
        from flower.core.transcript.chain import leaf_uuid
        from flower.core.transcript.messages import to_messages

        assert session.session_id is not None
        key = self.key(session.session_id)
        if session.writer is None:
            raw = self.store.load(key)
            if raw is None:
                raise UnknownSessionError(
                    _("session {session} disappeared").format(session=repr(session.session_id))
                )
            session.writer = TranscriptWriter(
                self.store, key, str(self.workspace), leaf_uuid(raw) or _last_uuid(raw)
            )
            chain = self.view.prune_loaded(key, raw)  # one read of the store, not two
        else:  # a retry within this run (the session was written by it)
            chain = self.retry_view.load(key) or []
        messages = to_messages(chain)
        if _waits_with(messages, text):
            # the same words already wait for a reply (a run cut before it came): send
            # them again as they are rather than twice in one turn
            return messages
        session.writer.user_prompt(text)
        from flower.runtime.loop import push

        push(messages, "user", [{"type": "text", "text": text}])
        return messages


def _agent_attributes(agent: AgentSpec, model: str) -> Attributes:
    return {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.provider.name": "anthropic",
        "gen_ai.agent.name": agent.name,
        "gen_ai.request.model": model,
    }


def _result_attributes(result: StepResult) -> Attributes:
    return {
        "gen_ai.conversation.id": result.session_id,
        "flower.session.id": result.session_id,
        "flower.step.name": result.step,
        "flower.resumed": result.resumed,
        "flower.attempts": result.attempts,
        "flower.turns": result.num_turns,
        "flower.cost_usd": result.cost_usd,
        "flower.ok": result.ok,
        "flower.stop": result.stop,
    }


def _check_options(resume: str | None, context_limit: int | None, relay_from: str | None) -> None:
    if context_limit is not None and (
        not isinstance(context_limit, int) or isinstance(context_limit, bool) or context_limit <= 0
    ):
        raise InvalidRunOptionError(
            _("context_limit must be a positive number of tokens or None, got {value}").format(
                value=repr(context_limit)
            )
        )
    if relay_from is None:
        return
    if not isinstance(relay_from, str) or not relay_from.strip():
        raise InvalidRunOptionError(
            _("relay_from must be a session id, got {value}").format(value=repr(relay_from))
        )
    if resume is not None:
        raise InvalidRunOptionError(
            _(
                "relay_from marks the first entry of a new session; it cannot be used with "
                "resume={resume}"
            ).format(resume=repr(resume))
        )


def _waits_with(messages: list[dict[str, Any]], text: str) -> bool:
    """Whether the conversation ends with a user turn that already says ``text``."""
    if not messages or messages[-1].get("role") != "user":
        return False
    content = messages[-1].get("content")
    if isinstance(content, str):
        return content == text
    return any(
        isinstance(block, dict) and block.get("type") == "text" and block.get("text") == text
        for block in content or ()
    )


def _last_uuid(entries: list[dict[str, Any]]) -> str | None:
    for entry in reversed(entries):
        if isinstance(entry.get("uuid"), str):
            return entry["uuid"]
    return None


def _describe_failure(exc: ResilienceError, model: str) -> str:
    last = exc.errors[-1] if exc.errors else None
    if last is not None and last.status == 404:
        return _(
            "unknown model {model}: the API answered 404 ({error}). Set "
            "AgentSpec.model or [tool.flower.engine] model to a current model id."
        ).format(model=repr(model), error=last.text)
    if last is not None and last.status == 401:
        return _("the API rejected the credentials (401: {error}); check ANTHROPIC_API_KEY").format(
            error=last.text
        )
    return str(exc)
