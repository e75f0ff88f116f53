"""One ``flower once`` on the fake Messages API, in a process of its own, for the import
tests (the CLI itself, called in this process so that its modules can be listed after).

``python run_once.py WORKDIR [--block]``: ``--block`` first makes ``flower[otel]``'s
packages (the SDK and the exporters) impossible to import, as if the extra were not
installed. The last line printed is ``RESULT {json}``: whether the run ended well and
which OpenTelemetry modules the process imported.
"""

from __future__ import annotations

import sys

BLOCKED = ("opentelemetry.sdk", "opentelemetry.exporter")


class BlockTheExtra:
    """A meta path finder that refuses the extra's modules."""

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name.startswith(BLOCKED):
            raise ModuleNotFoundError(f"No module named {name!r} (blocked)", name=name)


if "--block" in sys.argv:
    sys.meta_path.insert(0, BlockTheExtra())

import json  # noqa: E402
import os  # noqa: E402
from pathlib import Path  # noqa: E402


def main() -> None:
    from flower.cli.main import main as flower
    from flower.testing.fake_api import FakeMessagesAPI, reply, text, tool_use

    root = Path(sys.argv[1])
    (root / "seed.txt").write_text("tulip\n", encoding="utf-8")
    os.chdir(root)
    code: object = 0
    with FakeMessagesAPI() as api:
        os.environ.update(api.env())
        os.environ["FLOWER_PROBE_STRATEGY"] = "none"
        api.add(reply(tool_use("Read", {"file_path": "seed.txt"})), text("tulip"))
        try:
            flower(["once", "Which word is in seed.txt?"])
        except SystemExit as exc:
            code = exc.code
    modules = sorted(name for name in sys.modules if name.startswith("opentelemetry"))
    print("RESULT " + json.dumps({"ok": code in (0, None), "modules": modules}), flush=True)


main()
