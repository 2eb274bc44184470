"""How long a ~50k-span Connect download and the first start take, against the tests'
stand-in for Connect's traces API (tests/sources/connect_standin.py), on this machine.

    .venv/bin/python scripts/measure_connect.py
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.sources.connect_standin import ConnectStandIn
from tests.sources.test_connect import span_lines
from trajectory_review_bench.generate import generate

GUID = "11111111-2222-4333-8444-555555555555"


def main() -> None:
    root = Path(tempfile.mkdtemp())
    generate(root / "corpus", conversations=4500, seed=3)
    lines = span_lines(root / "corpus")
    standin = ConnectStandIn()
    standin.add(GUID, lines)
    os.environ.update(
        CONNECT_SERVER=standin.url,
        CONNECT_API_KEY=standin.key,
        TRAJECTORY_CACHE=str(root / "cache"),
    )
    from trajectory_review.listing.catalog import build_catalog
    from trajectory_review.model.reader import TraceReader
    from trajectory_review.sources import sync_sources

    source = f"connect:{GUID}"
    t = time.perf_counter()
    sync_sources([source])
    download = time.perf_counter() - t
    t = time.perf_counter()
    catalog = build_catalog(TraceReader.open([source]))
    first = time.perf_counter() - t
    t = time.perf_counter()
    sync_sources([source])
    refresh = time.perf_counter() - t
    standin.stop()
    print(
        f"{len(lines):,} spans: download {download:.1f} s; first index and catalog "
        f"{first:.1f} s ({catalog.conversation_count():,} conversations); "
        f"a refresh with nothing new {refresh:.2f} s"
    )


if __name__ == "__main__":
    main()
