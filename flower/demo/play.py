"""``flower demo``'s play: the whole story offline, in a temporary directory, in about 10 s.

A fake Messages API (:mod:`flower.demo.scripted_api`) plays the model from a script
(:mod:`flower.demo.script`). The first ``flower "..."`` is a real child process;
it is killed with SIGKILL once the working step's session exists and a tool has run,
the way a lost terminal or a reboot would end it. The second ``flower`` in the same
directory shows in its banner that it resumed, and finishes the task. No API key is
needed: only the demo's own children get the fake's key.

:func:`run_demo` plays it from Python too, writing what happens to any text stream::

    import io
    from flower.demo.play import run_demo

    log = io.StringIO()
    code = run_demo(out=log)  # 0: it resumed and finished, as scripted
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import TextIO

from flower.core.display import pad, shown_width
from flower.core.i18n import _, current_language
from flower.core.labels import WORK_STEP, builtin_key, shown_step
from flower.demo.script import DemoModel
from flower.demo.scripted_api import FakeMessagesAPI
from flower.workflow.documents import documents

CUT_TIMEOUT = 60.0
RUN_TIMEOUT = 120.0
LINEAGE_FILE = "runs/lineage.json"


class DemoFailed(Exception):
    """Something in the demo did not go as scripted (the message says what)."""


def child_env(api: FakeMessagesAPI) -> dict[str, str]:
    """This environment without flower/Anthropic settings, pointed at the fake."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FLOWER_", "ANTHROPIC_"))}
    env.update(api.env())
    env["FLOWER_LANG"] = current_language()  # the runs speak what the demo speaks
    env["FLOWER_PROBE_STRATEGY"] = "none"
    env["PYTHONUNBUFFERED"] = "1"
    return env


class Child:
    """``flower run ...`` in a subprocess, its output echoed (indented) as it comes."""

    def __init__(self, args: list[str], cwd: Path, env: dict[str, str], out: TextIO) -> None:
        self.out = out
        self.lines: list[str] = []
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "flower.cli.main", *args],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            encoding="utf-8",
            errors="replace",
        )
        self._reader = threading.Thread(target=self._echo, daemon=True)
        self._reader.start()

    def _echo(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))
            self.out.write("    │ " + line)
            self.out.flush()

    def wait(self, timeout: float) -> int:
        code = self.proc.wait(timeout)
        self._reader.join(timeout=5)
        return code

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.wait(10)

    @property
    def output(self) -> str:
        return "\n".join(self.lines)


def _work_session(workdir: Path) -> str | None:
    try:
        lineage = json.loads((workdir / "runs" / "lineage.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    steps = lineage.get("steps") if isinstance(lineage, dict) else None
    return steps.get(builtin_key(WORK_STEP)) if isinstance(steps, dict) else None


def _wait_for_cut(child: Child, model: DemoModel, workdir: Path) -> str:
    """Block until a tool has run in the work step and its session is in lineage."""
    deadline = time.monotonic() + CUT_TIMEOUT
    while time.monotonic() < deadline:
        session = _work_session(workdir)
        if model.worker_held.is_set() and session:
            return session
        if child.proc.poll() is not None:
            raise DemoFailed(
                _("the first run ended on its own (exit {code})").format(code=child.proc.returncode)
            )
        time.sleep(0.05)
    raise DemoFailed(
        _("the work step did not start within {seconds} s").format(seconds=f"{CUT_TIMEOUT:.0f}")
    )


def lineage_line(session: str, key: str | None = None) -> str:
    """What lineage holds after the cut: the work step under its key (this run's
    language's, as the demo's runs write it), and its name when the key is another
    language's (a directory switched between languages keeps its keys)."""
    key = key if key is not None else builtin_key(WORK_STEP)
    line = f"   {LINEAGE_FILE}  {key} -> {session}"
    work = shown_step(key)
    if work == key:
        return line
    return line + "  " + _("({step}: the file keeps the key it was written with)").format(step=work)


def _play(workdir: Path, out: TextIO) -> None:
    def say(text: str) -> None:
        out.write(text + "\n")
        out.flush()

    model = DemoModel(python=sys.executable)  # in the language the demo speaks
    request = model.script.request
    work = shown_step(builtin_key(WORK_STEP))
    with FakeMessagesAPI(model) as api:
        env = child_env(api)
        say(
            _("flower demo: offline, in {dir}, a scripted fake API at {url}").format(
                dir=workdir, url=api.base_url
            )
            + "\n"
        )
        say(_('1. First run: flower --yes "{request}"').format(request=request))
        first = Child(["run", "--yes", request], workdir, env, out)
        try:
            session = _wait_for_cut(child=first, model=model, workdir=workdir)
        except BaseException:
            first.proc.kill()
            raise
        first.kill()
        model.release()
        say(
            "\n"
            + _("2. Killed it (SIGKILL, pid {pid}) in the middle of {step}.").format(
                pid=first.proc.pid, step=work
            )
        )
        say(_("   No finally ran. What is on disk:"))
        say(lineage_line(session))
        files = documents(workdir)
        for path in (files.brief, files.goals):
            state = _("frozen") if path.exists() else _("missing")
            # in the lineage line's column, by terminal columns: 需求.md is 7 wide
            say(f"   {pad(path.name, shown_width(LINEAGE_FILE))}  {state}")
        say("\n" + _("3. Second run in the same directory, nothing said: flower"))
        second = Child(["run", "--yes"], workdir, env, out)
        code = second.wait(RUN_TIMEOUT)
        banner = second.lines[0] if second.lines else ""
        if code != 0:
            raise DemoFailed(_("the second run failed (exit {code})").format(code=code))
        context = _("{step} context {tokens}").format(step=work, tokens="")
        if not banner.startswith("<- ") or context.strip() not in banner:
            raise DemoFailed(
                _("the second run did not resume: {banner}").format(banner=repr(banner))
            )
        html = workdir / "sample.html"
        if not (workdir / "md2html.py").is_file() or not html.is_file():
            raise DemoFailed(_("md2html.py or sample.html is missing after the second run"))
        say(
            "\n"
            + _(
                "4. It remembered: the banner says {carried_on} and how big {step}'s\n"
                "   context is; the step header says {carried_on}. The judge, a fresh session,\n"
                "   ran md2html.py itself and found every goal met."
            ).format(carried_on=_("<- carrying on"), step=work)
        )
        first_line = html.read_text(encoding="utf-8").splitlines()[2]
        say(_("   Result: {file} starts with {line}").format(file=html.name, line=repr(first_line)))


def run_demo(*, keep: bool = False, out: TextIO) -> int:
    """Play the demo in a new temporary directory, writing what happens to ``out``; 0
    when it went as scripted, 1 (the directory kept) when it did not. ``keep`` leaves the
    directory in any case. Speaks the active language (:func:`flower.core.i18n.set_language`)."""
    workdir = Path(tempfile.mkdtemp(prefix="flower-demo-")).resolve()
    try:
        _play(workdir, out)
    except DemoFailed as exc:
        out.write("\n" + _("flower demo: {problem}").format(problem=exc) + "\n")
        keep = True
        return 1
    finally:
        if keep:
            out.write("\n" + _("The demo directory is kept: {dir}").format(dir=workdir) + "\n")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    out.write(
        "\n" + _('Next: export ANTHROPIC_API_KEY=... and run flower "..." in a project.') + "\n"
    )
    return 0


__all__ = ["Child", "DemoFailed", "child_env", "run_demo"]
