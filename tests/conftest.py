from __future__ import annotations

from pathlib import Path

import pytest

from trajectory_review.reader import TraceReader


@pytest.fixture
def read(tmp_path: Path):
    """Write a recorder's spans to a file and open it with the real index and reader."""

    def _read(recorder, **kw) -> TraceReader:
        path = recorder.write(tmp_path / "trace-1.jsonl", **kw)
        return TraceReader.open([path])

    return _read
