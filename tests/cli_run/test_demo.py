"""``flower demo``: offline, killed midway, resumed, finished, exit 0."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
from cli_run_helpers import FLOWER

from flower.core.display import shown_width

BANNER = {
    "zh_CN": ("接上上次  需求已确认 · 目标 3 条 · 干活上下文 ", "<- 接上次 · 第 2 次唤醒"),
    "en": ("  brief confirmed · 3 goals · work context ", "<- carrying on · wake 2"),
}
SAYS = {
    "zh_CN": (
        '1. 第一次运行:flower --yes "写个 md 转 html 的脚本"',
        "2. 在干活中途杀掉了它(SIGKILL",
        "3. 在同一个目录里再跑一次",
        ("   需求.md", "   目标.md"),
        ("好的,需求如下:", "现在写转换脚本。", "3. 达成 — sample.html 里有 <h1>"),
        "结果:sample.html 开头是 '<h1>笔记</h1>'",
    ),
    "en": (
        '1. First run: flower --yes "write an md to html script"',
        "2. Killed it (SIGKILL",
        "3. Second run in the same directory",
        ("   brief.md", "   goals.md"),
        ("Fine, here is the brief:", "Now the converter.", "3. met — sample.html has <h1>"),
        "Result: sample.html starts with '<h1>Notes</h1>'",
    ),
}
CJK = re.compile(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]")


@pytest.mark.parametrize("lang", sorted(BANNER))
def test_demo_runs_offline_without_a_key(in_tmp: Path, lang: str) -> None:
    """The demo plays in the language of the locale (here LANG, as a user's shell has
    it): its own lines, the flowers it runs and the scripted model's words."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "FLOWER_"))}
    env.pop("LC_ALL", None)
    env.pop("LC_MESSAGES", None)
    env["LANG"] = f"{lang}.UTF-8"
    done = subprocess.run(
        [*FLOWER, "demo"], cwd=in_tmp, env=env, capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    first, killed, second_run, files, model_says, result = SAYS[lang]
    assert first in out and killed in out and result in out
    for name in files:  # the brief and the goals the first run froze, named in the language
        assert name in out
    # step 2's little table: what each file holds starts in one terminal column (a Chinese
    # character takes two)
    table = [line for line in out.splitlines() if line.startswith(("   runs/", *files))]
    heads = [re.match(r"\s+\S+\s+", line) for line in table]  # up to what it holds
    assert len(table) == 3 and all(heads), table
    assert len({shown_width(head.group()) for head in heads if head}) == 1, table
    for words in model_says:  # the scripted model's words, echoed by the runs
        assert words in out
    second = out[out.index(second_run) :]
    banner, header = BANNER[lang]
    assert banner in second
    assert header in second
    if lang == "en":
        # English throughout, lineage's step key included (an English run writes its own)
        assert re.search(r"runs/lineage\.json  work -> \S+$", out, re.MULTILINE)
        assert not CJK.search(out), [line for line in out.splitlines() if CJK.search(line)]
    assert list(in_tmp.iterdir()) == []  # everything happened in its own temporary directory


def test_demo_under_the_c_locale_speaks_english(in_tmp: Path) -> None:
    """The README's first command: ``flower demo`` in a plain LANG=C.UTF-8 terminal."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "FLOWER_"))}
    env.pop("LC_ALL", None)
    env.pop("LC_MESSAGES", None)
    env["LANG"] = "C.UTF-8"
    done = subprocess.run(
        [*FLOWER, "demo"], cwd=in_tmp, env=env, capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert SAYS["en"][0] in done.stdout and SAYS["en"][-1] in done.stdout


def test_demo_piped_into_a_reader_that_stops_still_plays_to_the_end(in_tmp: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "FLOWER_"))}
    proc = subprocess.Popen(
        [*FLOWER, "demo"],
        cwd=in_tmp,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.readline()  # `flower demo | head -1`
    proc.stdout.close()
    stderr = proc.stderr.read()
    proc.stderr.close()
    assert proc.wait(180) == 0, stderr
    assert "Traceback" not in stderr and "BrokenPipe" not in stderr
