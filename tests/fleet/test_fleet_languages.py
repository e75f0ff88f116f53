"""Each fleet wake speaks its own workspace's language, though several run at once in
one worker process: its log and the prompts it sends, as a plain ``flower`` there would.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fleet_helpers import Workers, fleet_env, fleet_status, run, wait_for

from flower.core.i18n import language, translations
from flower.demo.script import demo_script
from flower.demo.scripted_api import RecordedRequest, Reply, reply
from flower.testing.fake_api import FakeMessagesAPI
from flower.workflow.builtin import worker_agent
from flower.workflow.clarify import clarifier, goal_setter
from flower.workflow.goal import judge_agent

LANGUAGES = ("en", "zh_CN")


class TwoLanguages:
    """The scripted model for English and Chinese flowers at once: each request's
    language is its instructions' (every agent's are translated). The work step is done
    at once and the judge agrees; each wake's work request waits for the other's, so
    the two wakes are surely in the worker at the same time."""

    def __init__(self) -> None:
        self.agents: dict[str, tuple[str, Callable[[], Reply]]] = {}
        for lang in LANGUAGES:
            script = demo_script(lang)
            met = "\n".join(f"{n}. {script.met} — ok" for n in (1, 2, 3))
            with language(lang):
                self.agents.update(
                    {
                        clarifier().instructions: (
                            lang,
                            lambda s=script: reply(s.brief_follows + s.brief),
                        ),
                        goal_setter().instructions: (lang, lambda s=script: reply(s.goals)),
                        worker_agent().instructions: (lang, self._together(script.done)),
                        judge_agent().instructions: (lang, lambda m=met: reply(m)),
                    }
                )
        self.seen: list[str] = []
        """Each request's language (``off script``: instructions in no language)."""
        self.together = threading.Barrier(len(LANGUAGES), timeout=60)
        self._lock = threading.Lock()

    def _together(self, done: str) -> Callable[[], Reply]:
        def answer() -> Reply:
            self.together.wait()
            return reply(done)

        return answer

    def __call__(self, req: RecordedRequest) -> Reply:
        system = req.body.get("system")
        if isinstance(system, list):
            system = "".join(b.get("text", "") for b in system if isinstance(b, dict))
        lang, answer = self.agents.get(str(system or ""), ("off script", lambda: reply("?")))
        with self._lock:
            self.seen.append(lang)
        return answer()


@pytest.fixture
def model() -> Iterator[TwoLanguages]:
    m = TwoLanguages()
    yield m
    m.together.abort()


@pytest.fixture
def env(model: TwoLanguages, tmp_path: Path) -> Iterator[dict[str, str]]:
    home = tmp_path / "home"
    home.mkdir()
    with FakeMessagesAPI(model) as fake:
        yield fleet_env(fake.env(), home)  # the worker's language: FLOWER_LANG=en


def test_two_wakes_in_one_worker_speak_their_workspaces_languages(
    root: Path, env: dict[str, str], workers: Workers, model: TwoLanguages
) -> None:
    spaces = {}
    for lang in LANGUAGES:
        ws = root / lang
        ws.mkdir()
        (ws / "pyproject.toml").write_text(f'[tool.flower]\nlanguage = "{lang}"\n')
        said = demo_script(lang).request
        done = run(root, env, "fleet", "submit", str(ws), said, "--id", lang)
        assert done.returncode == 0, done.stderr
        spaces[lang] = ws
    workers.start("a")  # one worker process runs both tasks at once (concurrency 8)
    rows = wait_for(
        lambda: (s := fleet_status(root)) and all(r["state"] == "done" for r in s) and s,
        120,
        "the tasks never finished",
    )
    assert sorted(row["id"] for row in rows) == ["en", "zh_CN"]
    # the prompts each wake sent: one wake's worth in each language, none in another
    assert "off script" not in model.seen
    assert model.seen.count("en") == model.seen.count("zh_CN") > 0
    assert not model.together.broken  # both work steps were asked at the same time
    for lang, ws in spaces.items():
        log = (ws / "runs" / "fleet" / f"{lang}.log").read_text(encoding="utf-8")
        steps = json.loads((ws / "runs" / "lineage.json").read_text(encoding="utf-8"))["steps"]
        catalog = translations(lang)
        # its steps are named, and its log speaks, in its workspace's language
        assert catalog.gettext("work") in steps and catalog.gettext("confirm the brief") in steps
        assert catalog.gettext("work") in log
        other = translations(next(o for o in LANGUAGES if o != lang))
        assert other.gettext("confirm the brief") not in steps
    english_log = (spaces["en"] / "runs" / "fleet" / "en.log").read_text(encoding="utf-8")
    assert translations("zh_CN").gettext("work") not in english_log
