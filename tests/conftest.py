from __future__ import annotations

import os
from pathlib import Path

import pytest

from trajectory_review.model.reader import TraceReader

# Tests build their own indexes; the on-disk cache is tested explicitly (tests/index/test_cache.py).
# Set before any app subprocess starts, so the servers inherit it too.
os.environ["TRAJECTORY_CACHE"] = "off"


@pytest.fixture
def read(tmp_path: Path):
    """Write a recorder's spans to a file and open it with the real index and reader."""

    def _read(recorder, **kw) -> TraceReader:
        path = recorder.write(tmp_path / "trace-1.jsonl", **kw)
        return TraceReader.open([path])

    return _read
