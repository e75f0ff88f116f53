"""A PostgreSQL server of a test's own (initdb into a temporary directory, a free port),
for tests that restart the server without disturbing the rest of the suite."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from pathlib import Path

import pytest

NOBODY = 65534


class OwnPostgres:
    def __init__(self, base: Path) -> None:
        for tool in ("initdb", "pg_ctl"):
            if shutil.which(tool) is None:
                pytest.fail(f"PostgreSQL's {tool} is not on PATH (the fleet tests need it)")
        self.data = base / "pgdata"
        self.log = base / "pg.log"
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.prefix: list[str] = []
        if os.geteuid() == 0:  # PostgreSQL refuses to run as root (CI runs as root)
            setpriv = shutil.which("setpriv")
            if setpriv is None:
                pytest.fail("running as root and no setpriv to start PostgreSQL as nobody")
            self.prefix = [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
            base.chmod(0o777)
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "--no-sync")
        self.start()

    @property
    def url(self) -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, *args: str) -> None:
        subprocess.run([*self.prefix, *args], check=True, capture_output=True, timeout=120, cwd="/")

    def _options(self) -> str:
        return f"-p {self.port} -k {self.data} -c listen_addresses=127.0.0.1 -c fsync=off"

    def start(self) -> None:
        self._run(
            "pg_ctl",
            "-D",
            str(self.data),
            "-l",
            str(self.log),
            "-o",
            self._options(),
            "-w",
            "start",
        )

    def restart(self) -> None:
        """An immediate restart: every connection is cut, nothing is shut down cleanly."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        self.start()

    def stop(self) -> None:
        subprocess.run(
            [*self.prefix, "pg_ctl", "-D", str(self.data), "-m", "immediate", "stop"],
            capture_output=True,
            timeout=60,
            cwd="/",
        )
