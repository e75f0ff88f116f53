"""The built-in stores' errors speak the chosen language: the same bad URL or missing
store reads in English under ``en`` and in Chinese under ``zh_CN``."""

from __future__ import annotations

import pytest

from flower.core.errors import StoreUnavailableError
from flower.core.i18n import language
from flower_plugins.jsonfs.factory import root_from_url
from flower_plugins.sql.engine import parse_url

EXPECTED = {
    "en": {
        "url": "not a valid database URL: ::not a url::",
        "driver": "sqlite+pysqlcipher:///s.db: only the built-in sqlite3 driver is supported",
        "query": "'jsonfs:/tmp/s?x=1': query strings and fragments are not supported",
    },
    "zh_CN": {
        "url": "不是有效的数据库 URL:::not a url::",
        "driver": "sqlite+pysqlcipher:///s.db:只支持内置的 sqlite3 驱动",
        "query": "'jsonfs:/tmp/s?x=1':不支持查询字符串和片段",
    },
}


@pytest.mark.parametrize("lang", sorted(EXPECTED))
def test_store_errors_in_the_chosen_language(lang: str) -> None:
    want = EXPECTED[lang]
    with language(lang):
        with pytest.raises(StoreUnavailableError) as bad_url:
            parse_url("::not a url::")
        with pytest.raises(StoreUnavailableError) as bad_driver:
            parse_url("sqlite+pysqlcipher:///s.db")
        with pytest.raises(StoreUnavailableError) as bad_query:
            root_from_url("jsonfs:/tmp/s?x=1")
    assert str(bad_url.value) == want["url"], bad_url.value
    assert str(bad_driver.value) == want["driver"], bad_driver.value
    assert str(bad_query.value).startswith(want["query"]), bad_query.value
