"""``flower ui``: serve the local web viewer of the configured session store.

Only typer is imported here; the viewer (Starlette, uvicorn, Jinja2: the ``ui``
extra) when the command runs.
"""

from __future__ import annotations

import importlib.util
from typing import Annotated

import typer

from flower.cli.lazy import command_help
from flower.core.errors import FlowerError
from flower.core.i18n import N_, _

UI_PACKAGES = ("starlette", "uvicorn", "jinja2")
INSTALL_HINT = N_("flower ui needs the ui extra: pip install 'flower[ui]'")


def missing_packages() -> list[str]:
    return [name for name in UI_PACKAGES if importlib.util.find_spec(name) is None]


@command_help(N_("Serve a read-only web viewer of the sessions, pruned views and runs (local)."))
def ui(
    ctx: typer.Context,
    port: Annotated[
        int,
        typer.Option("--port", min=0, max=65535, metavar="N", help=N_("TCP port (0: a free one).")),
    ] = 8765,
    host: Annotated[
        str | None,
        typer.Option(
            "--host",
            metavar="ADDRESS",
            help=N_("Listen on this address instead of 127.0.0.1; the URL then needs a token."),
        ),
    ] = None,
    open_browser: Annotated[
        bool, typer.Option("--open", help=N_("Open the page in the default browser."))
    ] = False,
    interval: Annotated[
        float,
        typer.Option(
            "--interval", min=0.05, metavar="SECONDS", help=N_("Live update poll period.")
        ),
    ] = 1.0,
) -> None:
    if missing_packages():
        raise FlowerError(_(INSTALL_HINT))
    import secrets

    from flower.cli.context import get_settings
    from flower.core.config import store_name
    from flower.stores.open import open_existing
    from flower.ui.app import Viewer, build_app
    from flower.ui.server import LOOPBACK, bind, server, url_of

    settings = get_settings(ctx)
    sock = bind(host or LOOPBACK, port)
    token = secrets.token_urlsafe(18) if host is not None else None
    viewer = Viewer(
        settings,
        lambda: open_existing(settings),  # read-only: creates and migrates nothing
        store_name(settings),
        interval=interval,
    )
    url = url_of(sock, token)
    typer.echo(
        _("flower ui: {store} (read-only) at {url}  (Ctrl-C stops)").format(
            store=viewer.store_name, url=url
        ),
        err=True,
    )
    if open_browser:
        import threading
        import webbrowser

        threading.Timer(0.5, webbrowser.open, args=(url,)).start()
    try:
        server(build_app(viewer, token=token)).run(sockets=[sock])
    finally:
        viewer.close()
        sock.close()
