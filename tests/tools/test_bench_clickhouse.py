"""The bench's ClickHouse catch-up step puts the store back as it found it: each run
measures a catch-up of every later conversation, not only of those its marks still show.
A store left with the marks of the later spans took their next load for an hour of late
spans, and every run after the first timed a catch-up of 2 conversations, not 873."""

from __future__ import annotations

import subprocess
import sys

from trajectory_review_bench.bench_clickhouse import LATER_NS, _child, _take_out
from trajectory_review_bench.generate import generate


def _load(files, store: str) -> None:
    subprocess.run(
        [sys.executable, "-m", "trajectory_review", "load", str(files), store],
        check=True,
        capture_output=True,
    )


def test_every_run_of_the_bench_catch_up_replays_every_later_conversation(tmp_path):
    generate(tmp_path / "stored", conversations=12, seed=5, cut_last_line=False)
    generate(tmp_path / "later", conversations=6, seed=6, start_ns=LATER_NS, cut_last_line=False)
    store = f"chdb://{tmp_path / 'store'}"
    _load(tmp_path / "stored", store)
    first = _child("start", store)  # the catalog of what is stored
    replayed = []
    for _ in range(2):
        _load(tmp_path / "later", store)
        try:
            replayed.append(_child("catchup", store)["replayed"])
        finally:
            _take_out(store, tmp_path / "later")
    assert first["replayed"] == 12
    assert replayed == [6, 6]
    assert _child("start", store)["replayed"] == 0  # the store as it was before
    # and no part left with rows masked as deleted, which every later scan read past
    # (asked in a process of its own, as the bench's are: chdb opens one store a process)
    masked = subprocess.run(
        [sys.executable, "-c", MASKED, store], check=True, capture_output=True, text=True
    ).stdout
    assert masked.strip() == "0"


MASKED = r"""
import sys
from trajectory_review.index.clickhouse import ClickHouseIndex
index = ClickHouseIndex.open(sys.argv[1])
print(index.query("SELECT count() FROM system.parts WHERE active AND has_lightweight_delete "
                  "AND database = {db:String}", {"db": index.loc.database})[0][0])
"""
