"""``bench/ui_bench.py`` on a tiny store: every request it times is served."""

from __future__ import annotations

import pytest

from bench import ui_bench


@pytest.mark.slow  # starts the viewer
def test_the_ui_bench_times_every_page_of_a_small_store() -> None:
    result = ui_bench.run(sessions=12, runs=1)
    assert result["sessions"] == 12
    assert set(result["requests_ms"]) >= {"list, page 1", "session page", "search (one match)"}
    assert all(ms > 0 for ms in result["requests_ms"].values())
    assert "| list, page 1 |" in ui_bench.markdown(result)
