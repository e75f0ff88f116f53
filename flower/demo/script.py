"""The scripted model behind ``flower demo``: a handler for the fake Messages API.

It answers by looking at each request (which agent is asking, by its system prompt;
how far its conversation has got, by the tool calls already in it), never by a fixed
list, so a resumed conversation is answered from wherever it stands. The worker reads
the brief, writes a sample and an md -> html script, runs it and says it is done; the
judge runs the script itself and rules on what it sees. It speaks the language of the
flowers it answers: one :class:`DemoScript` per language (English for one without).

While ``hold_worker`` is set, the worker's second request (after its first tool has
run) is held unanswered: that is the moment the demo kills the first process.
"""

from __future__ import annotations

import shlex
import threading
from collections.abc import Callable
from typing import Any

import msgspec

from flower.core.i18n import SOURCE_LANGUAGE, _, current_language, language
from flower.demo.scripted_api import RecordedRequest, Reply, reply, tool_use
from flower.workflow.builtin import worker_agent
from flower.workflow.clarify import clarifier, goal_setter
from flower.workflow.documents import BRIEF_FILE
from flower.workflow.goal import judge_agent


class DemoScript(msgspec.Struct, frozen=True):
    """What the scripted model says in one language: the request the demo makes, the
    brief, the goals, the sample file and the agents' words."""

    request: str
    brief: str
    goals: str
    sample_md: str
    brief_follows: str
    read_brief: str
    write_sample: str
    write_script: str
    run_it: str
    done: str
    judge_runs_it: str
    met: str
    unmet: str
    found_script: str
    printed_wrote: str
    has_tags: str
    off_script: str


SCRIPTS = {
    "en": DemoScript(
        request="write an md to html script",
        brief="""\
## Background
I have some Markdown notes and want to read them in a browser.

## What to do
Write md2html.py: python md2html.py a.md makes a.html, with headings, paragraphs, lists and
code blocks.

## What not to do
No GUI, no third-party libraries.

## When it is done
Run on sample.md it gives sample.html, with headings as <h1> and code blocks as <pre><code>.
""",
        goals="""\
1. md2html.py is in the workspace
2. python md2html.py sample.md makes sample.html
3. in sample.html the heading is <h1> and the code block is <pre><code>
""",
        sample_md="""\
# Notes

flower carries on the conversation where it stopped.

- kill the process
- run it again

```
flower "write an md to html script"
```
""",
        brief_follows="Fine, here is the brief:\n\n",
        read_brief="First a look at the confirmed brief.",
        write_sample="A sample file to check it with.",
        write_script="Now the converter.",
        run_it="Let me run it.",
        done=(
            "Done: md2html.py turns headings, paragraphs, lists and code blocks into HTML;"
            " sample.html, made from sample.md, is checked."
        ),
        judge_runs_it="I run it myself.",
        met="met",
        unmet="not met",
        found_script="ls found md2html.py",
        printed_wrote="the script printed wrote sample.html",
        has_tags="sample.html has <h1> and <pre><code>",
        off_script="(demo) this request is not in the script.",
    ),
    "zh_CN": DemoScript(
        request="写个 md 转 html 的脚本",
        brief="""\
## 背景
手上有一些 Markdown 笔记,想在浏览器里看。

## 要做什么
写一个 md2html.py:python md2html.py a.md 生成 a.html,支持标题、段落、列表和代码块。

## 不做什么
不做 GUI,不引入第三方库。

## 怎样算完成
对 sample.md 运行后得到 sample.html,标题是 <h1>,代码块是 <pre><code>。
""",
        goals="""\
1. 工作区里有 md2html.py
2. python md2html.py sample.md 能生成 sample.html
3. sample.html 里标题是 <h1>,代码块是 <pre><code>
""",
        sample_md="""\
# 笔记

flower 会接着上次的对话做下去。

- 杀掉进程
- 再跑一次

```
flower "写个 md 转 html 的脚本"
```
""",
        brief_follows="好的,需求如下:\n\n",
        read_brief="先看看确认过的需求。",
        write_sample="写一个样例文件用来验证。",
        write_script="现在写转换脚本。",
        run_it="跑一下看看。",
        done=(
            "做完了:md2html.py 把标题、段落、列表和代码块转成 HTML,sample.md 转出的 "
            "sample.html 已经检查过。"
        ),
        judge_runs_it="我自己跑一遍。",
        met="达成",
        unmet="未达成",
        found_script="ls 找到了 md2html.py",
        printed_wrote="脚本输出 wrote sample.html",
        has_tags="sample.html 里有 <h1> 和 <pre><code>",
        off_script="(demo) 这个请求不在剧本里。",
    ),
}
"""The model's words per language. A language without a script here plays the English
one (the demo's own lines still follow its catalog)."""


def demo_script(lang: str) -> DemoScript:
    """The script of ``lang``, English when there is none for it."""
    return SCRIPTS.get(lang, SCRIPTS[SOURCE_LANGUAGE])


MD2HTML = '''\
"""md2html: turn Markdown files into HTML (headings, paragraphs, lists, code blocks)."""

import html
import re
import sys
from pathlib import Path


def convert(text: str) -> str:
    out: list[str] = []
    para: list[str] = []
    items: list[str] = []
    in_code = False

    def flush() -> None:
        if para:
            out.append("<p>" + html.escape(" ".join(para)) + "</p>")
            para.clear()
        if items:
            out.append("<ul>" + "".join(f"<li>{html.escape(i)}</li>" for i in items) + "</ul>")
            items.clear()

    for line in text.splitlines():
        heading = re.match(r"(#{1,6})\\s+(.*)", line)
        if line.startswith("```"):
            flush()
            out.append("</code></pre>" if in_code else "<pre><code>")
            in_code = not in_code
        elif in_code:
            out.append(html.escape(line))
        elif heading:
            flush()
            level = len(heading.group(1))
            out.append(f"<h{level}>{html.escape(heading.group(2))}</h{level}>")
        elif line.startswith(("- ", "* ")):
            items.append(line[2:].strip())
        elif not line.strip():
            flush()
        else:
            para.append(line.strip())
    flush()
    return "\\n".join(out) + "\\n"


def main(paths: list[str]) -> int:
    for name in paths:
        source = Path(name)
        target = source.with_suffix(".html")
        body = convert(source.read_text(encoding="utf-8"))
        target.write_text(f"<!doctype html>\\n<meta charset=utf-8>\\n{body}", encoding="utf-8")
        print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
'''


def _system(req: RecordedRequest) -> str:
    system = req.body.get("system")
    if isinstance(system, str):
        return system
    return "".join(b.get("text", "") for b in system or [] if isinstance(b, dict))


def _tool_uses(req: RecordedRequest) -> list[dict[str, Any]]:
    return [
        block
        for message in req.messages
        if message.get("role") == "assistant" and isinstance(message.get("content"), list)
        for block in message["content"]
        if isinstance(block, dict) and block.get("type") == "tool_use"
    ]


def _last_tool_result(req: RecordedRequest) -> str:
    for message in reversed(req.messages):
        content = message.get("content")
        if message.get("role") != "user" or not isinstance(content, list):
            continue
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                inner = block.get("content")
                if isinstance(inner, list):
                    return "".join(b.get("text", "") for b in inner if isinstance(b, dict))
                return str(inner or "")
    return ""


def _usage(req: RecordedRequest) -> dict[str, int]:
    """A plausible context size, so the wake banner shows a real-looking number."""
    chars = sum(len(t) for t in req.texts())
    return {"input_tokens": 1500 + chars // 3, "output_tokens": 120}


class DemoModel:
    """The fake's handler (``FakeMessagesAPI(DemoModel(...))``); see the module docstring."""

    def __init__(self, python: str, hold_timeout: float = 60.0, lang: str | None = None) -> None:
        self.lang = lang or current_language()
        """The language the flowers it answers speak (their agents' instructions are in
        it) and its own words are in: the active one by default."""
        self.script = script = demo_script(self.lang)
        self.run_script = f"{shlex.quote(python)} md2html.py sample.md"
        self.hold_timeout = hold_timeout
        self.hold_worker = True
        self.worker_held = threading.Event()
        """Set when the worker's request is being held (a tool has run: kill now)."""
        self._released = threading.Event()
        with language(self.lang):
            self.brief_file = _(BRIEF_FILE)  # the name a first run gives the brief
            self._agents: dict[str, Callable[[RecordedRequest], Reply]] = {
                clarifier().instructions: lambda req: reply(script.brief_follows + script.brief),
                goal_setter().instructions: lambda req: reply(script.goals),
                worker_agent().instructions: self._worker,
                judge_agent().instructions: self._judge,
            }

    def release(self) -> None:
        """Stop holding the worker (after the first process is gone)."""
        self.hold_worker = False
        self._released.set()

    def __call__(self, req: RecordedRequest) -> Reply:
        answer = self._agents.get(_system(req))
        if answer is None:
            return reply(self.script.off_script)
        result = answer(req)
        result.usage = _usage(req)
        return result

    def _worker(self, req: RecordedRequest) -> Reply:
        done = len(_tool_uses(req))
        if done >= 1 and self.hold_worker:
            self.worker_held.set()
            self._released.wait(self.hold_timeout)
        script = self.script
        steps: list[Callable[[], Reply]] = [
            lambda: reply(script.read_brief, tool_use("Read", {"file_path": self.brief_file})),
            lambda: reply(
                script.write_sample,
                tool_use("Write", {"file_path": "sample.md", "content": script.sample_md}),
            ),
            lambda: reply(
                script.write_script,
                tool_use("Write", {"file_path": "md2html.py", "content": MD2HTML}),
            ),
            lambda: reply(
                script.run_it,
                tool_use("Bash", {"command": f"{self.run_script} && cat sample.html"}),
            ),
        ]
        if done < len(steps):
            return steps[done]()
        return reply(script.done)

    def _judge(self, req: RecordedRequest) -> Reply:
        script = self.script
        if not _tool_uses(req):
            return reply(
                script.judge_runs_it,
                tool_use(
                    "Bash", {"command": f"ls md2html.py && {self.run_script} && cat sample.html"}
                ),
            )
        seen = _last_tool_result(req)
        has_script = "md2html.py" in seen
        made = "wrote sample.html" in seen
        shaped = "<h1>" in seen and "<pre><code>" in seen

        def line(n: int, ok: bool, why: str) -> str:
            return f"{n}. {script.met if ok else script.unmet} — {why}"

        return reply(
            "\n".join(
                [
                    line(1, has_script, script.found_script),
                    line(2, made, script.printed_wrote),
                    line(3, shaped, script.has_tags),
                ]
            )
        )


__all__ = ["MD2HTML", "SCRIPTS", "DemoModel", "DemoScript", "demo_script"]
