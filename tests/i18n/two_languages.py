"""What a wake in each language is given and writes, for the tests of both languages."""

BRIEF = {
    "en": "## Background\nnotes\n\n## What to do\na script\n\n## What not to do\nno GUI\n\n"
    "## When it is done\nit runs\n",
    "zh_CN": "## 背景\n笔记\n\n## 要做什么\n脚本\n\n## 不做什么\n不做界面\n\n## 怎样算完成\n能跑\n",
}
REQUEST = {"en": "write a script", "zh_CN": "写个脚本"}
FILES = {"en": ("brief.md", "goals.md"), "zh_CN": ("需求.md", "目标.md")}
"""The brief and the goals a first wake writes, named in its language."""
