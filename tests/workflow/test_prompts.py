"""The workflow's prompts: one module of plain names, each in every catalog."""

from __future__ import annotations

import importlib
import pkgutil

import flower.workflow
from flower.core.i18n import _, language
from flower.workflow import prompts


def test_every_prompt_is_a_msgid_the_chinese_catalog_translates() -> None:
    for name in prompts.__all__:
        msgid = getattr(prompts, name)
        assert isinstance(msgid, str) and msgid.strip(), name
        with language("en"):
            assert _(msgid) == msgid, name
        with language("zh_CN"):
            assert _(msgid) != msgid, name  # sent in the wake's language, never English


def test_no_workflow_module_serves_names_through_a_module_getattr() -> None:
    """A name a reader greps for has a definition (issue 32 item 8)."""
    served = [
        info.name
        for info in pkgutil.iter_modules(flower.workflow.__path__, "flower.workflow.")
        if hasattr(importlib.import_module(info.name), "__getattr__")
    ]
    assert served == []
