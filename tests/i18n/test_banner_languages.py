"""The banner, step headers and prompts, exactly, in each language."""

from __future__ import annotations

import io
from collections.abc import Iterator

import pytest
from seed_strings import NEW_TASK_PROMPT, NEW_TASK_PROMPT_EN, WAKE_PROMPT, WAKE_PROMPT_EN

from flower.cli.wake import wake_prompt
from flower.core.i18n import language
from flower.workflow.banner import (
    fresh_banner,
    fresh_start_line,
    lost_sessions_line,
    step_header,
    unrecorded_line,
    wake_banner,
)

EXPECTED = {
    "zh_CN": {
        "banner": "<- 在 ~/explore/test-ide 接上上次  需求已确认 · 目标 15 条 · 干活上下文 80.2K"
        " · 第 3 次唤醒",
        "rewound": "<- 在 /srv/p 接上上次  退回 2 轮 · 第 2 次唤醒",
        "fresh": "-> 在 ~/p 开始新的一件事",
        "header": "== 干活 ================================  3/3  <- 接上次 · 第 3 次唤醒",
        "judge": "== 干活·判定#1 =========================  1/3",
        "once": "<- 接上次",
        "lost": "   !! 谱系里的会话已不在存储里:干活、确认需求 —— 这些步骤从头开始",
        "unrecorded": "   !! 上次运行在记下你的话之前被打断,这次接着传下去:再快点",
        "gone": "   从头开始:确认需求、干活的会话已不在存储里;",
        "wake": WAKE_PROMPT,
        "new": NEW_TASK_PROMPT,
    },
    "en": {
        "banner": "<- carrying on in ~/explore/test-ide  brief confirmed · 15 goals"
        " · work context 80.2K · wake 3",
        "rewound": "<- carrying on in /srv/p  rewound 2 turns · wake 2",
        "fresh": "-> starting something new in ~/p",
        "header": "== work ================================  3/3  <- carrying on · wake 3",
        "judge": "== work·judge#1 ========================  1/3",
        "once": "<- carrying on",
        "lost": "   !! sessions in the record are no longer in the store: work, confirm the brief"
        "; these steps start over",
        "unrecorded": "   !! the last run was cut short before it recorded what you said;"
        " passing it on now: 再快点",
        "gone": "   starting fresh: the sessions of confirm the brief, work are gone from the"
        " store;",
        "wake": WAKE_PROMPT_EN,
        "new": NEW_TASK_PROMPT_EN,
    },
}


@pytest.fixture(params=sorted(EXPECTED))
def lang(request: pytest.FixtureRequest) -> Iterator[str]:
    with language(request.param):
        yield request.param


def test_wake_banner(lang: str) -> None:
    line = wake_banner(
        "/home/you/explore/test-ide",
        woke=3,
        brief_confirmed=True,
        goals=15,
        work_step="干活",
        context_tokens=80_213,
        home="/home/you",
    )
    assert line == EXPECTED[lang]["banner"]
    rewound = wake_banner(
        "/srv/p",
        woke=2,
        brief_confirmed=False,
        goals=0,
        work_step=None,
        context_tokens=None,
        rewound=2,
    )
    assert rewound == EXPECTED[lang]["rewound"]
    assert fresh_banner("/home/you/p", home="/home/you") == EXPECTED[lang]["fresh"]


def test_step_headers(lang: str) -> None:
    """Labels are the stable data keys (干活, 干活·判定#1); only what is shown changes."""
    assert step_header("干活", 3, 3, resumed=True, woke=3) == EXPECTED[lang]["header"]
    assert step_header("干活·判定#1", 1, 3, resumed=False, woke=3) == EXPECTED[lang]["judge"]
    assert step_header("干活#retry1", 1, 1, resumed=True, woke=None).endswith(
        EXPECTED[lang]["once"]
    )
    assert step_header("my step", 1, 1, resumed=False, woke=1).startswith("== my step ===")


def test_lines_under_the_banner(lang: str) -> None:
    assert lost_sessions_line(["干活", "确认需求"]) == EXPECTED[lang]["lost"]
    assert unrecorded_line(["再快点"]) == EXPECTED[lang]["unrecorded"]
    gone = fresh_start_line(
        "gone", moved_from=None, steps=["确认需求", "干活"], archived=None, lineage_name="x"
    )
    assert gone.startswith(EXPECTED[lang]["gone"])


def test_wake_and_new_task_prompts(lang: str) -> None:
    out = io.StringIO()
    typed = iter(["/new", "fix it"])
    choice = wake_prompt(lambda: next(typed), out)
    assert choice.action == "new" and choice.said == "fix it"
    assert out.getvalue().splitlines() == [EXPECTED[lang]["wake"], EXPECTED[lang]["new"]]
