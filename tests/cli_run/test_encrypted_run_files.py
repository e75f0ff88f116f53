"""With encryption on, nothing flower writes holds the conversation in clear (issue 29 item 7).

Real runs of the real ``flower`` on the scripted fake API, encryption on: one killed
(SIGKILL) while its first model request is still unanswered, the way 12 of 20 early
kills left the pending request in ``runs/lineage.json`` and 2 of 20 in ``said.json``;
another killed in its work step; then runs to the end. After each, every byte flower
wrote under ``runs/`` (database, WAL, lineage, manifest, said journal, archives, ledgers)
is scanned for the words said and the model's words, as ``strings`` would find them.
``brief.md`` and the goals file are the workspace's documents, written for the user to
read and edit, as every file the agent writes there (docs/security.md says so).
"""

from __future__ import annotations

import json
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_run_helpers import Flower, ScriptedModel, flower_env, kill_at_cut

from flower.stores.keyring import generate_key
from flower.testing.fake_api import FakeMessagesAPI, RecordedRequest, Reply

pytestmark = pytest.mark.usefixtures("english")

SAID_LATER = "also count the lines of secret-plan-sentence.txt"


class HoldFirst(ScriptedModel):
    """Holds the first request of a run until released: the run is cut there."""

    def __init__(self) -> None:
        super().__init__()
        self.asked = threading.Event()
        self.hold_first = False
        self._go = threading.Event()

    def __call__(self, req: RecordedRequest) -> Reply:
        if self.hold_first:
            self.asked.set()
            self._go.wait(30)
        return super().__call__(req)

    def let_go(self) -> None:
        self.hold_first = False
        self._go.set()


@pytest.fixture
def model() -> HoldFirst:
    return HoldFirst()


@pytest.fixture
def api(model: HoldFirst) -> Iterator[FakeMessagesAPI]:
    with FakeMessagesAPI(model) as fake:
        yield fake


@pytest.fixture
def flower(ws: Path, api: FakeMessagesAPI, tmp_path: Path) -> Flower:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = flower_env(api, home)
    env.update(FLOWER_SESSIONS_ENCRYPT="true", FLOWER_ENCRYPTION_KEY=generate_key())
    return Flower(ws, env)


def _secrets(model: ScriptedModel) -> list[str]:
    """What was said and what the model said, in pieces long enough to mean something."""
    script = model.script
    words = [
        script.request,
        SAID_LATER,
        script.brief_follows,
        script.done,
        script.read_brief,
        *[line for line in script.brief.splitlines() if len(line) > 24],
        *[line for line in script.goals.splitlines() if len(line) > 24],
    ]
    return [w.strip() for w in words if len(w.strip()) > 12]


def _forms(text: str) -> list[bytes]:
    """``text`` as a file may hold it: UTF-8, JSON-escaped, either way."""
    escaped = json.dumps(text)[1:-1]
    ascii_escaped = json.dumps(text, ensure_ascii=True)[1:-1]
    return list({text.encode(), escaped.encode(), ascii_escaped.encode()})


def _in_clear(ws: Path, secrets: list[str]) -> list[str]:
    found = []
    for path in sorted((ws / "runs").rglob("*")):
        if not path.is_file():
            continue
        data = path.read_bytes()
        for secret in secrets:
            if any(form in data for form in _forms(secret)):
                found.append(f"{path.relative_to(ws)}: {secret[:40]!r}")
    return found


def test_no_file_flower_writes_holds_the_conversation_in_clear(
    flower: Flower, model: HoldFirst, ws: Path
) -> None:
    secrets = _secrets(model)

    # 1. killed while the first request is still unanswered
    model.hold_first = True
    with flower.spawn("--yes", model.script.request) as proc:
        try:
            assert model.asked.wait(60), "the first run never asked the model"
            time.sleep(0.3)  # whatever it writes before the answer, it has written
            proc.send_signal(signal.SIGKILL)
            proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
    model.let_go()
    assert (ws / "runs").is_dir()
    assert _in_clear(ws, secrets) == []

    # 2. resumed, and killed again in the work step, with a new sentence said
    model.hold_worker = True
    _sid, _done = kill_at_cut(flower, model, signal.SIGKILL, "--yes", SAID_LATER)
    assert _in_clear(ws, secrets) == []

    # 3. to the end: the manifest has a row per step, and no step's words
    done = flower("--yes")
    assert done.returncode == 0, done.stdout + done.stderr
    rows = [json.loads(line) for line in (ws / "runs" / "manifest.json").read_text().splitlines()]
    assert rows and all(row["text"] is None for row in rows)
    assert _in_clear(ws, secrets) == []
    status = flower("status")
    assert status.returncode == 0, status.stderr
