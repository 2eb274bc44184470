"""The progress page while the index is built: how far it is, asked of DuckDB."""

from __future__ import annotations

import re
import time

from trajectory_review.app.data import Loader
from trajectory_review.app.page import loading_page
from trajectory_review.index.database import SCAN_SHARE, build_progress


def test_the_progress_page_says_how_far_the_index_is(traces_8k, tmp_path, monkeypatch):
    monkeypatch.setenv("TRAJECTORY_TRACES", str(traces_8k))
    monkeypatch.setenv("TRAJECTORY_REVIEW_LOG", str(tmp_path / "reviews.jsonl"))
    loader = Loader(watch_seconds=0)
    shown: list[float] = []
    try:
        deadline = time.monotonic() + 120
        while loader.data is None and loader.failure is None:
            assert time.monotonic() < deadline
            page = str(loading_page(loader))
            if "Indexing" in page:
                bar = re.search(r'<progress value="([\d.]+)" max="1"', page)
                if bar:
                    shown.append(float(bar.group(1)))
            time.sleep(0.005)
    finally:
        loader.stop()
    assert loader.failure is None
    # the scan's own progress, over its share of the build, then that share: never back
    assert shown, "the page never said how far the index was"
    assert all(0 <= f <= SCAN_SHARE for f in shown)
    assert shown == sorted(shown)
    assert any(0 < f < SCAN_SHARE for f in shown)  # partway through the scan
    assert build_progress() is None  # no build under way: no bar
