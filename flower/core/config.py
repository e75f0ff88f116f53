"""Configuration: ``[tool.flower]`` in the nearest pyproject.toml, then ``FLOWER_*``
environment variables, then CLI flags; later wins.

Everything decodes into msgspec Structs with unknown keys forbidden, so a typo or a
wrong type is a :class:`ConfigError` naming the file, the key path and what was
expected. :func:`load_settings` also records where each value came from, for
``flower config``.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

import msgspec

from flower.core.errors import ConfigError
from flower.core.i18n import _, choose_language, environment_language


class _Section(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    pass


class SessionsConfig(_Section):
    backend: str = "sqlite"
    """sqlite | postgres | jsonfs | any plugin's backend name."""
    url: str | None = None
    """Its scheme picks the backend. Default: ``sqlite:///<run_dir>/sessions.db``."""
    synchronous: Literal["normal", "full"] = "normal"
    """SQLite durability: ``normal`` (WAL; survives a killed process) or ``full`` (fsync)."""
    auto_migrate: bool = False
    """Upgrade a Postgres schema on open instead of asking for ``flower db upgrade``."""
    encrypt: bool = False
    """Encrypt entry payloads at rest (AES-GCM); key from ``FLOWER_ENCRYPTION_KEY`` or key_file."""
    key_file: str | None = None
    """File holding the encryption key (first line; older keys on later lines)."""
    options: dict[str, Any] = msgspec.field(default_factory=dict)
    """Backend-specific options, decoded by the backend's own options Struct."""


class LineageConfig(_Section):
    backend: str = "json"
    """json (``<run_dir>/lineage.json``) | sqlite | postgres | any plugin's name."""
    url: str | None = None
    workspace_id: str | None = None
    """Identity of the workspace in lineage; defaults to its absolute path."""
    options: dict[str, Any] = msgspec.field(default_factory=dict)


DEFAULT_POLICIES = ["synthetic-errors", "denials", "interrupted", "ephemeral"]
DEFAULT_EPHEMERAL = [
    "git status",
    "git diff",
    "git log",
    "ls",
    "pwd",
    "date",
    "ps",
    "top",
    "df",
    "du",
    "free",
    "uptime",
    "whoami",
    "env",
    "docker ps",
    "kubectl get",
]


NonNegative = Annotated[int, msgspec.Meta(ge=0)]
Positive = Annotated[int, msgspec.Meta(ge=1)]
Seconds = Annotated[float, msgspec.Meta(ge=0)]
FileName = Annotated[str, msgspec.Meta(min_length=1)]
_T = TypeVar("_T")


class PruningConfig(_Section):
    policies: list[str] = msgspec.field(default_factory=lambda: list(DEFAULT_POLICIES))
    """Policy names, applied in this order on every load."""
    keep_denials: NonNegative = 1
    ephemeral: bool = True
    ephemeral_commands: list[str] = msgspec.field(default_factory=lambda: list(DEFAULT_EPHEMERAL))
    options: dict[str, dict[str, Any]] = msgspec.field(default_factory=dict)
    """Per-policy options for plugin policies: ``[tool.flower.pruning.options.<name>]``."""


class TrimConfig(_Section):
    enabled: bool = True
    """The CLI trims; ``Runtime(trim=False)`` is the Python default (seed)."""
    min_chars: NonNegative = 4000
    """Tool results longer than this are candidates."""
    keep_recent_turns: NonNegative = 6
    """The newest N assistant turns are never trimmed."""


class RelayConfig(_Section):
    enabled: bool = True
    threshold_tokens: Positive = 160_000
    """Hand off to a fresh session when the last context passes this many tokens."""


class ProbeConfig(_Section):
    strategy: str = "tcp"
    timeout: Seconds = 5.0


class ResilienceConfig(_Section):
    max_attempts: Positive = 6
    base_delay: Seconds = 4.0
    max_delay: Seconds = 120.0
    probe_timeout: Seconds = 5.0
    probe_interval: Seconds = 15.0
    max_offline_wait: Seconds = 3600.0
    retry_unknown: bool = True
    max_park_wait: Seconds = 21600.0
    """The most one call waits on rate or usage limits, all its parks together (each
    as ``retry-after``, the ``anthropic-ratelimit-*-reset`` headers or the reset time
    its message names asks); a limit that asks for more stops the call at once with a
    line saying so. Six hours: a five-hour usage window is waited out, a weekly or
    monthly limit is not."""


class Price(_Section):
    """US dollars per million tokens."""

    input: float
    output: float
    cache_write: float | None = None
    cache_read: float | None = None


class EngineConfig(_Section):
    model: str = "claude-sonnet-4-6"
    max_tokens: Positive = 16_000
    request_timeout: Annotated[float, msgspec.Meta(gt=0)] = 600.0
    """Seconds an API request may go without a byte before it is retried (a stalled
    connection); the anthropic SDK's own default."""
    bash_timeout: Seconds = 120.0
    max_tool_output: Positive = 30_000
    confine_to_workspace: bool = True
    prices: dict[str, Price] = msgspec.field(default_factory=dict)
    """Overrides and additions to the built-in price table, by model id."""


class WorkflowConfig(_Section):
    brief_file: FileName | None = None
    """The confirmed brief, in the workspace; unset: an existing ``brief.md`` or ``需求.md``,
    else the one named in the language of the run."""
    goals_file: FileName | None = None
    """The goals list, in the workspace; unset: ``goals.md`` or ``目标.md``, likewise."""
    rounds: Positive = 3
    """Work rounds per wake (the judge may send a step back this many times)."""
    clarify_step: str | None = None
    goals_step: str | None = None
    work_step: str | None = None
    """Step names of the built-in workflow, its keys in lineage and the manifest; unset:
    the key lineage already holds for the step in any language, else the step's name in
    the language of the run (``确认需求``, ``设定目标``, ``干活`` in Chinese, ``confirm the
    brief``, ``set goals``, ``work`` in English)."""


class TelemetryConfig(_Section):
    enabled: bool = True
    """Emit OpenTelemetry spans when the ``OTEL_*`` variables ask for them (see docs/traces.md)."""
    capture_content: bool = False
    """Put prompts, replies and tool inputs/outputs into spans (off: only names and numbers)."""


class FleetLimits(_Section):
    """``[tool.flower.fleet.limits]``: the organisation's budget per minute, shared by
    every model call of every worker (and of a plain ``flower`` with ``share_limits``);
    unset: no limit of that kind (docs/fleet.md)."""

    requests_per_minute: Positive | None = None
    input_tokens_per_minute: Positive | None = None
    output_tokens_per_minute: Positive | None = None


class FleetConfig(_Section):
    """``[tool.flower.fleet]``: ``flower fleet`` (the ``fleet`` extra; docs/fleet.md)."""

    database: str | None = None
    """The fleet's database (DBOS's system database): ``postgresql+psycopg://...`` for
    many hosts; unset: ``sqlite:///<run_dir>/fleet.sqlite``, one machine."""
    workspaces: str | None = None
    """The root every task's workspace must be under (a path every worker sees, e.g. a
    shared volume); unset: the working directory."""
    takeover_after: Annotated[float, msgspec.Meta(gt=0)] = 15.0
    """Seconds without a worker's heartbeat before another worker takes its tasks over."""
    heartbeat: Annotated[float, msgspec.Meta(gt=0)] = 2.0
    """Seconds between a worker's heartbeats (keep it well under ``takeover_after``)."""
    concurrency: Positive = 8
    """Tasks one worker runs at once."""
    limits: FleetLimits = msgspec.field(default_factory=FleetLimits)
    share_limits: bool = False
    """A plain ``flower`` run here draws its model calls from the fleet's budget too."""


class Settings(_Section):
    run_dir: str = "runs"
    """Relative to the current working directory, not to the workspace (seed)."""
    language: str | None = None
    """What flower speaks: ``en`` or ``zh_CN``; unset: ``FLOWER_LANG``, then the locale."""
    sessions: SessionsConfig = msgspec.field(default_factory=SessionsConfig)
    lineage: LineageConfig = msgspec.field(default_factory=LineageConfig)
    pruning: PruningConfig = msgspec.field(default_factory=PruningConfig)
    trim: TrimConfig = msgspec.field(default_factory=TrimConfig)
    relay: RelayConfig = msgspec.field(default_factory=RelayConfig)
    probe: ProbeConfig = msgspec.field(default_factory=ProbeConfig)
    resilience: ResilienceConfig = msgspec.field(default_factory=ResilienceConfig)
    engine: EngineConfig = msgspec.field(default_factory=EngineConfig)
    workflow: WorkflowConfig = msgspec.field(default_factory=WorkflowConfig)
    telemetry: TelemetryConfig = msgspec.field(default_factory=TelemetryConfig)
    fleet: FleetConfig = msgspec.field(default_factory=FleetConfig)

    @property
    def run_path(self) -> Path:
        return Path(self.run_dir)

    def sessions_url(self) -> str:
        """The session store URL, with the embedded default filled in (the SQLite one for a
        plugin backend configured without a URL: see :func:`default_store_url`)."""
        if self.sessions.url:
            return self.sessions.url
        if self.sessions.backend == "jsonfs":
            return f"jsonfs://{(self.run_path / 'transcripts').resolve()}"  # jsonfs:///abs/path
        return f"sqlite:///{self.run_path / 'sessions.db'}"


EMBEDDED_BACKENDS = ("sqlite", "jsonfs")  # the backends with a default file under the run dir


def default_store_url(settings: Settings) -> str | None:
    """The URL a session store opens with: the configured one, the embedded default of
    ``sqlite`` and ``jsonfs``, or ``None`` for any other backend named without a URL
    (its factory decides what that means)."""
    if settings.sessions.url or settings.sessions.backend in EMBEDDED_BACKENDS:
        return settings.sessions_url()
    return None


def store_name(settings: Settings, url: str | None = None) -> str:
    """How messages name a store: ``url``, else the configured URL or embedded default;
    a backend with neither (a plugin's) by its name. Not redacted: pass it through
    :func:`flower.core.redact.redact_text` before showing it."""
    url = url or default_store_url(settings)
    return url or _("the {backend!r} session store").format(backend=settings.sessions.backend)


SECTIONS: dict[str, type[msgspec.Struct]] = {
    name: f.type
    for name, f in ((f.name, f) for f in msgspec.structs.fields(Settings))
    if isinstance(f.type, type) and issubclass(f.type, msgspec.Struct)
}


@dataclass
class LoadedSettings:
    """The effective settings plus where each dotted key came from."""

    settings: Settings
    sources: dict[str, str] = field(default_factory=dict)
    pyproject: Path | None = None
    language: str = "en"
    """The language in effect (see :func:`flower.core.i18n.choose_language`)."""
    language_source: str = "default"

    def explain(self, exc: ConfigError) -> str:
        """``exc``'s message, naming where its key was set when a check that runs after
        loading (a pruning policy name, say) raised it without the file."""
        text = str(exc)
        source = self.sources.get(exc.key) if exc.key is not None else None
        if source is None:
            return text
        if self.pyproject is not None and source.startswith(f"{self.pyproject} "):
            return f"{self.pyproject}: {text}"
        return _("{error} (set by {source})").format(error=text, source=source)


_PATH_IN_ERROR = re.compile(r" - at `\$(?P<path>[^`]*)`")


def _describe_validation(exc: msgspec.ValidationError, root: type | None = None) -> tuple[str, str]:
    """Split msgspec's message into (dotted key path, what was wrong); ``root`` is the
    Struct decoded (the whole :class:`Settings` by default)."""
    text = str(exc)
    match = _PATH_IN_ERROR.search(text)
    path = match.group("path").lstrip(".") if match else ""
    reason = _PATH_IN_ERROR.sub("", text)
    if reason.startswith("Object contains unknown field"):
        unknown = reason.split("`")[1]
        path = f"{path}.{unknown}" if path else unknown
        section = path.rsplit(".", 1)[0] if "." in path else ""
        known = _known_keys(section, root or Settings)
        if known:
            reason = _("unknown key (expected one of: {keys})").format(keys=", ".join(known))
        else:
            reason = _("unknown key")
    return path, reason


def _known_keys(dotted_section: str, root: type) -> list[str]:
    struct: Any = root
    for part in filter(None, dotted_section.split(".")):
        fields = {f.name: f.type for f in msgspec.structs.fields(struct)}
        struct = fields.get(part)
        if not (isinstance(struct, type) and issubclass(struct, msgspec.Struct)):
            return []
    return [f.name for f in msgspec.structs.fields(struct)]


def _toml_key(path: str, table: str = "tool.flower") -> str:
    """``sessions.url`` -> ``[tool.flower.sessions] url``, as a user reads the file
    (list positions and msgspec's ``[...]`` for a table's entry are left out)."""
    parts = [p for p in re.split(r"\.|\[\d+\]|\[\.\.\.\]", path) if p]
    if len(parts) <= 1:
        return f"[{table}] {parts[0] if parts else ''}".rstrip()
    return f"[{table}.{'.'.join(parts[:-1])}] {parts[-1]}"


def decode_section(
    data: object,
    struct: type[_T],
    where: str | None,
    table: str = "tool.flower",
    *,
    key: str | None = None,
) -> _T:
    """Decode a table into ``struct``; errors name ``where`` (if given), the key and the
    reason. ``key``: the dotted setting the table is (``pruning.options``), for a check
    after loading, so the CLI can name the file or variable that set it."""
    try:
        return msgspec.convert(data, struct)
    except msgspec.ValidationError as exc:
        path, reason = _describe_validation(exc, struct)
        if "[...]" in path and not path.endswith("]"):
            reason = _("an entry's {key}: {reason}").format(
                key=path.rsplit(".", 1)[-1], reason=reason
            )
        elif path.endswith("[...]"):
            reason = _("an entry: {reason}").format(reason=reason)
        text = f"{_toml_key(path, table)}: {reason}"
        raise ConfigError(f"{where}: {text}" if where else text, key=key) from None


def sqlite_file(url: str) -> Path | None:
    """The database file of a ``sqlite:///`` URL, or None for any other URL."""
    scheme, sep, rest = url.partition(":///")
    if not sep or scheme.split("+", 1)[0] != "sqlite" or not rest or rest == ":memory:":
        return None
    return Path(rest.split("?", 1)[0])


def policy_options(settings: Settings, name: str, options: type[_T]) -> _T:
    """``[tool.flower.pruning.options.<name>]`` decoded into ``options``, a msgspec
    Struct (with ``forbid_unknown_fields=True`` a misspelt key is caught too): a value
    of the wrong type or out of range is a :class:`ConfigError` naming the table and key.
    For a pruning policy plugin's factory."""
    table = f"tool.flower.pruning.options.{name}"
    data = settings.pruning.options.get(name, {})
    return decode_section(data, options, None, table, key="pruning.options")


def _flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for k, v in data.items():
        dotted = f"{prefix}{k}"
        if isinstance(v, Mapping) and k != "options" and k != "prices":
            flat.update(_flatten(v, dotted + "."))
        else:
            flat[dotted] = v
    return flat


def _set_dotted(data: dict[str, Any], dotted: str, value: object) -> None:
    parts = dotted.split(".")
    for part in parts[:-1]:
        data = data.setdefault(part, {})
    data[parts[-1]] = value


def _env_overrides(environ: Mapping[str, str]) -> dict[str, tuple[str, str]]:
    """``FLOWER_<SECTION>_<KEY>`` or ``FLOWER_<KEY>`` -> dotted key and its variable."""
    found: dict[str, tuple[str, str]] = {}
    top = {f.name for f in msgspec.structs.fields(Settings)} - set(SECTIONS)
    for var, raw in environ.items():
        if not var.startswith("FLOWER_"):
            continue
        name = var[len("FLOWER_") :].lower()
        if name in top:
            found[name] = (var, raw)
            continue
        for section, struct in SECTIONS.items():
            if name.startswith(section + "_"):
                key = name[len(section) + 1 :]
                if key in {f.name for f in msgspec.structs.fields(struct)}:
                    found[f"{section}.{key}"] = (var, raw)
    return found


def _field_type(dotted: str) -> Any:
    struct: Any = Settings
    ftype: Any = None
    for part in dotted.split("."):
        ftype = {f.name: f.type for f in msgspec.structs.fields(struct)}[part]
        struct = ftype
    return ftype


def _env_value(var: str, raw: str, dotted: str) -> Any:
    ftype = _field_type(dotted)
    value: Any = raw
    if raw.startswith(("[", "{")):
        try:
            value = msgspec.json.decode(raw)
        except msgspec.DecodeError:
            value = raw
    elif getattr(ftype, "__origin__", None) is list:
        value = [item.strip() for item in raw.split(",") if item.strip()]
    try:
        return msgspec.convert(value, ftype, strict=False)
    except msgspec.ValidationError as exc:
        raise ConfigError(
            _("environment variable {var}: {error}").format(var=var, error=exc)
        ) from None


def find_pyproject(start: Path | None = None) -> tuple[Path, dict[str, Any]] | None:
    """The nearest pyproject.toml (walking up) that has a ``[tool.flower]`` table."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        candidate = folder / "pyproject.toml"
        if not candidate.is_file():
            continue
        try:
            data = tomllib.loads(candidate.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(
                _("{file}: not valid TOML: {error}").format(file=candidate, error=exc)
            ) from exc
        table = data.get("tool", {}).get("flower")
        if table is not None:
            if not isinstance(table, dict):
                raise ConfigError(_("{file}: [tool.flower] must be a table").format(file=candidate))
            return candidate, table
    return None


def load_settings(
    cwd: Path | None = None,
    environ: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> LoadedSettings:
    """Defaults, then pyproject, then ``FLOWER_*``, then ``overrides`` (CLI flags).

    ``overrides`` maps dotted keys (``"sessions.url"``) to values; ``None`` values
    are ignored so a CLI can pass every flag unconditionally.
    """
    environ = os.environ if environ is None else environ
    merged: dict[str, Any] = {}
    sources: dict[str, str] = {}
    pyproject: Path | None = None

    found = find_pyproject(cwd)
    if found:
        pyproject, table = found
        decode_section(table, Settings, str(pyproject))
        merged = msgspec.to_builtins(msgspec.convert(table, Settings))
        for dotted in _flatten(table):
            sources[dotted] = f"{pyproject} {_toml_key(dotted)}"

    for dotted, (var, raw) in _env_overrides(environ).items():
        if dotted == "language" and not raw.strip():
            continue  # an empty variable is an unset one, as an empty LANG is
        _set_dotted(merged, dotted, _env_value(var, raw, dotted))
        sources[dotted] = f"env {var}"

    for dotted, value in (overrides or {}).items():
        if value is None:
            continue
        _set_dotted(merged, dotted, value)
        sources[dotted] = "command line"

    settings = decode_section(merged, Settings, _("configuration"))
    language, language_source = choose_language(settings.language, sources.get("language"), environ)
    return LoadedSettings(
        settings=settings,
        sources=sources,
        pyproject=pyproject,
        language=language,
        language_source=language_source,
    )


def configured_language(cwd: Path | None = None, environ: Mapping[str, str] | None = None) -> str:
    """The language the settings choose (:attr:`LoadedSettings.language`), for the CLI
    to speak before a command runs. Settings that cannot be loaded leave the
    environment's language: the command that loads them says what is wrong, in it."""
    environ = os.environ if environ is None else environ
    try:
        return load_settings(cwd, environ).language
    except (ConfigError, OSError):
        return environment_language(environ)


def effective_items(loaded: LoadedSettings) -> list[tuple[str, Any, str]]:
    """Every dotted key with its effective value and source (``default`` if unset)."""
    flat = _flatten(msgspec.to_builtins(loaded.settings))
    rows = []
    flat["language"] = loaded.language
    for dotted, value in flat.items():
        source = loaded.language_source if dotted == "language" else loaded.sources.get(dotted)
        if source is None:
            source = next(
                (s for k, s in loaded.sources.items() if k.startswith(dotted + ".")), "default"
            )
        rows.append((dotted, value, source))
    return rows
