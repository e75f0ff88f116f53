"""Take the screenshots of docs/viewer.md: a demo store served by the viewer, shot by
Debian's headless chromium. Run ``python docs/viewer_screenshots.py`` (needs the dev
extra and ``apt-get install chromium chromium-driver``; ``fonts-wqy-microhei`` draws
the Chinese step names)."""

from __future__ import annotations

import base64
import json
import sys
import tempfile
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "ui"))

from ui_helpers import PROJECT, Transcript, working_session  # noqa: E402

from flower.core.config import SessionsConfig, Settings  # noqa: E402
from flower.core.fork import fork  # noqa: E402
from flower.core.records import SessionKey  # noqa: E402
from flower.stores.lineage import load_lineage  # noqa: E402
from flower.stores.open import open_session_store  # noqa: E402
from flower.ui.app import Viewer, build_app  # noqa: E402
from flower.ui.server import Background, bind  # noqa: E402

IMG = ROOT / "docs" / "img"
MAIN = "5f0c2a9e-1d4b-4c1e-9a57-3b2d8c61e0a1"
FORK = "9d8e7f60-5a4b-4c3d-8e2f-1a0b9c8d7e6f"
CLARIFIER = "1c1a2b3c-0000-4000-8000-00000000c1a7"
SETTER = "2d2e3f40-0000-4000-8000-0000000060a1"
JUDGES = ("3e3f4a5b-0000-4000-8000-00000000d9e1", "4f4a5b6c-0000-4000-8000-00000000d9e2")
REQUEST = "Convert every Markdown file under docs/ to HTML and check the links"
GOALS = "1. every docs/*.md has its .html\n2. no broken link in the HTML"


def _png(width: int, height: int) -> str:
    """A small gradient PNG, as a tool result's image."""
    rows = b"".join(
        b"\x00" + bytes(v for x in range(width) for v in (x * 255 // width, y * 255 // height, 160))
        for y in range(height)
    )

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return len(data).to_bytes(4, "big") + body + zlib.crc32(body).to_bytes(4, "big")

    header = width.to_bytes(4, "big") + height.to_bytes(4, "big") + b"\x08\x02\x00\x00\x00"
    raw = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
    raw += chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")
    return base64.b64encode(raw).decode()


def main_session() -> list[dict]:
    t = Transcript(MAIN)
    t.prompt("Get this done as confirmed in brief.md; goals.md holds the acceptance goals")
    context = 26_000
    files = ["index", "guide", "api", "faq", "changelog", "install", "usage", "design"]
    for n, name in enumerate(files, start=1):
        t.tool_round(
            f"toolu_r{n}",
            f"# {name}\n" + "text " * 900,
            context,
            "Read",
            file_path=f"docs/{name}.md",
        )
        context += 9_000 + n * 1_500
        if n == 3:
            t.api_error()
        if n % 2 == 0:
            t.prompt(f"Good. Continue with the next files ({n} done)")
    t.tool_round("toolu_shot", "", context, "Screenshot", url="file:///tmp/out/index.html")
    t.entries[-1]["message"]["content"][0]["content"] = [
        {"type": "text", "text": "rendered index.html"},
        {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": _png(120, 60)},
        },
    ]
    t.reply(
        [{"type": "text", "text": "All 8 files converted; 2 broken links fixed."}], context + 4_000
    )
    return t.entries


def seed(run_dir: Path) -> Settings:
    settings = Settings(
        run_dir=str(run_dir), sessions=SessionsConfig(url=f"sqlite:///{run_dir / 'sessions.db'}")
    )
    with open_session_store(settings=settings) as store:
        store.append(SessionKey(PROJECT, MAIN), main_session())
        for n in range(6):
            sid = f"7c3e{n:04d}-aaaa-4bbb-8ccc-{n:012d}"
            store.append(SessionKey("-work-site" if n % 2 else PROJECT, sid), working_session(sid))
        main = store.load(SessionKey(PROJECT, MAIN)) or []
        fork(store, SessionKey(PROJECT, MAIN), main[4]["uuid"], session_id=FORK)
    # the workflow around MAIN: its clarifier, goal-setter and two judge rounds, over two
    # wakes, as the manifest records them (so the list shows roles, steps and titles)
    from flower.core.i18n import _, language
    from flower.workflow.prompts import CLARIFY_PROMPT, JUDGE_PROMPT

    with language("en"):
        clarify_prompt = _(CLARIFY_PROMPT).format(request=REQUEST)
        judge_prompt = _(JUDGE_PROMPT).format(goals_file="goals.md", goals=GOALS)
    with open_session_store(settings=settings) as store:
        for sid, prompt, answer in (
            (CLARIFIER, clarify_prompt, "## Background\n..."),
            (SETTER, "Below is the confirmed brief...", GOALS),
            (JUDGES[0], judge_prompt, "1. met\n2. not met — 2 links still broken"),
            (JUDGES[1], judge_prompt, "1. met\n2. met"),
        ):
            t = Transcript(sid)
            t.prompt(prompt)
            t.reply([{"type": "text", "text": answer}], 3_000)
            store.append(SessionKey(PROJECT, sid), t.entries)
    first, second = "20261130-100000-3f9a1c", "20261130-110000-8b7d2e"

    def row(step: str, sid: str, run: str, started: str, **extra: object) -> dict:
        return {
            "step": step,
            "session_id": sid,
            "ok": True,
            "cost_usd": 0.0123,
            "attempts": 1,
            "errors": [],
            "resumed": False,
            "duration_s": 14.2,
            "started_at": started,
            "run": run,
            **extra,
        }

    steps = [
        row("确认需求", CLARIFIER, first, "2026-11-30T10:00:00"),
        row("设定目标", SETTER, first, "2026-11-30T10:00:20"),
        row(
            "干活",
            MAIN,
            first,
            "2026-11-30T10:01:00",
            ok=False,
            cost_usd=0.4410,
            attempts=3,
            errors=[{"message": "529 overloaded, retried"}],
            error="killed",
            duration_s=301.0,
        ),
        row("干活", MAIN, second, "2026-11-30T11:00:00", resumed=True, cost_usd=0.3120),
        row("干活·判定#1", JUDGES[0], second, "2026-11-30T11:03:10",
            verdict={"goals": 2, "met": 1, "unmet": [2]}),
        row("干活#round2", MAIN, second, "2026-11-30T11:04:00", resumed=True, cost_usd=0.0610),
        row("干活·判定#2", JUDGES[1], second, "2026-11-30T11:05:30",
            verdict={"goals": 2, "met": 2, "unmet": []}),
    ]  # fmt: skip
    lineage = load_lineage(run_dir.parent, settings=settings)
    for _wake in range(2):
        lineage.bump_woke()
    lineage.record_session("确认需求", CLARIFIER)
    lineage.record_session("设定目标", SETTER)
    lineage.record_session("干活", MAIN)
    (run_dir / "manifest.json").write_text("".join(json.dumps(s) + "\n" for s in steps))
    return settings


def shoot() -> None:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp) / "runs"
        settings = seed(run_dir)
        viewer = Viewer(
            settings,
            lambda: open_session_store(settings=settings, read_only=True),
            settings.sessions_url(),
            workspace=Path(tmp),
        )
        served = Background(build_app(viewer), bind("127.0.0.1", 0)).start()
        options = webdriver.ChromeOptions()
        options.binary_location = "/usr/bin/chromium"
        for flag in (
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--window-size=1280,900",
        ):
            options.add_argument(flag)
        driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
        try:
            for name, page, height in (
                ("viewer-sessions", "", 700),
                ("viewer-session", f"s/{PROJECT}/{MAIN}", 1500),
                ("viewer-pruned", f"s/{PROJECT}/{MAIN}?view=pruned", 1500),
                ("viewer-workflow", "run", 900),
            ):
                driver.set_window_size(1280, height)
                driver.get(served.url + page)
                driver.save_screenshot(str(IMG / f"{name}.png"))
                print(f"wrote docs/img/{name}.png")
        finally:
            driver.quit()
            served.stop()
            viewer.close()


if __name__ == "__main__":
    shoot()
