"""Which registered backend a configuration or URL names, and its options decoded:
what opening a store checks first, without importing any backend (``flower config`` and
``flower doctor`` check the configuration this way)."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from flower.core.config import Settings, decode_section, sqlite_file
from flower.core.errors import ConfigError, FlowerError, NoSuchPluginError
from flower.core.i18n import _
from flower.core.plugins import Registration, Registry, get_registry


def _scheme(url: str) -> str:
    scheme = urlsplit(url).scheme
    return scheme or "file"


def decode_options(reg: Registration, raw: dict[str, Any], table: str) -> object:
    if reg.options is None:
        return dict(raw)
    key = table.removeprefix("tool.flower.")
    return decode_section(raw, reg.options, None, table=table, key=key)


def check_settings(settings: Settings) -> None:
    """What every command checks before it opens, writes or requests anything:
    :func:`check_configured_plugins`, then, for a store set to encrypt, that its key
    loads (:func:`flower.stores.keyring.load_keyring`)."""
    check_configured_plugins(settings)
    if settings.sessions.encrypt:
        from flower.stores.keyring import load_keyring

        load_keyring(settings)


def check_configured_plugins(settings: Settings, *, pruning: bool = True) -> None:
    """What opening the configured stores and prober would say of their configuration
    (a backend, URL scheme or probe strategy no plugin provides, a bad option), and
    (``pruning``) whether every pruning policy named is provided and its options table
    reads (a misspelt key in a plugin policy's table is caught here), without opening
    anything: every command that reads the settings checks it before anything else."""
    registry = get_registry()
    if pruning:
        from flower.stores.prune import check_policy_names, check_policy_options, policy_names

        failed = [info.name for info in registry.plugins if info.error]
        available = registry.names("pruning_policies")
        check_policy_names(policy_names(settings), settings, available, failed)
        check_policy_options(settings)
    strategy = settings.probe.strategy
    try:
        registry.get("probers", strategy)
    except NoSuchPluginError as exc:
        raise NoSuchPluginError(
            f"[tool.flower.probe] strategy: {exc}", key="probe.strategy"
        ) from None
    for kind, section in (("session_stores", "sessions"), ("lineage_stores", "lineage")):
        conf = getattr(settings, section)
        if conf.url is None:
            reg = by_name(registry, kind, conf.backend, section)
        else:
            reg = by_scheme(registry, kind, conf.url, section, configured=True)
        decode_options(reg, conf.options, f"tool.flower.{section}.options")
    check_paths(settings)


def _local_path(url: str, section: str) -> Path | None:
    """The file or folder a built-in store URL names on this machine (a SQLite database,
    a jsonfs root, a lineage file), or None for a server or a plugin's URL."""
    file = sqlite_file(url)
    if file is not None:
        return file
    scheme = _scheme(url)
    if scheme not in ("jsonfs", "file"):
        return None
    from flower_plugins.jsonfs.factory import lineage_path_from_url, root_from_url

    try:
        return root_from_url(url) if scheme == "jsonfs" else lineage_path_from_url(url)
    except FlowerError:
        return None  # opening it says what is wrong


def check_paths(settings: Settings) -> None:
    """A configured place that does not exist is a :class:`ConfigError`, never created:
    the run directory's parent folder, and the folder a configured store URL's file or
    folder would be created in (a typo would otherwise give an empty store, silently).
    flower creates only the last part: the run directory (``runs/`` by default, in the
    working directory), a store's own file or folder, and a store's folder when it is
    the run directory."""
    run_dir = Path(settings.run_dir).expanduser().absolute()
    places = [("run_dir", "[tool.flower] run_dir", run_dir, run_dir.parent)]
    for section in ("sessions", "lineage"):
        url = getattr(settings, section).url
        path = _local_path(url, section) if url else None
        if path is not None:
            path = path.absolute()
            name = f"[tool.flower.{section}] url"
            parent = run_dir.parent if path.parent == run_dir else path.parent
            places.append((f"{section}.url", name, path, parent))
    for key, name, path, parent in places:
        if not parent.exists():  # a file in its place: creating says why it cannot
            raise ConfigError(
                _(
                    "{name}: {path} is in a folder that does not exist ({parent}); "
                    "flower creates no folders above it: create it, or fix the path"
                ).format(name=name, path=path, parent=parent),
                key=key,
            )


def by_name(registry: Registry, kind: str, name: str, section: str) -> Registration:
    try:
        return registry.get(kind, name)
    except NoSuchPluginError as exc:
        raise NoSuchPluginError(
            f"[tool.flower.{section}] backend: {exc}", key=f"{section}.backend"
        ) from None


def by_scheme(
    registry: Registry, kind: str, url: str, section: str, *, configured: bool
) -> Registration:
    try:
        return registry.by_scheme(kind, _scheme(url))
    except NoSuchPluginError as exc:
        message = str(exc)
        if "://" not in url and ":" not in url.split("/", 1)[0]:
            # no scheme at all: say what a store URL looks like
            known = ", ".join(f"{s}://" for s in registry.schemes(kind))
            message = _("{url} is not a store URL (scheme://...; known schemes: {known})").format(
                url=repr(url), known=known
            )
        if not configured:  # a URL given for one command names itself in the message
            raise NoSuchPluginError(message) from None
        raise NoSuchPluginError(
            f"[tool.flower.{section}] url: {message}", key=f"{section}.url"
        ) from None
