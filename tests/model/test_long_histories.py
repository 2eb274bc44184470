"""Matching cost follows the data, not calls times branches (issue #34 §8): a conversation
recorded as thousands of calls, each its own branch, builds in seconds with every record
attached. Built in a child process with a deadline far above its cost and far below what
comparing every history with every call took (minutes)."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.fixtures import A, Q, Recorder

CALLS = 8_000

_CHILD = r"""
import json, sys
from trajectory_review.model.reader import TraceReader
conv = TraceReader.open([sys.argv[1]], cache=False).conversation("many")
print(json.dumps({
    "exchanges": len(conv.exchanges),
    "branches": len(conv.branches),
    "tags": sorted({b.exchanges[0].tag for b in conv.branches}),
    "main_tag": conv.exchanges[0].tag,
}))
"""


def test_a_conversation_recorded_as_thousands_of_branches_builds_with_every_record(tmp_path):
    r = Recorder()
    for i in range(CALLS):  # each call a one-answer history of its own: a branch each
        r.turn("many", [Q(f"Question {i}?"), A(f"Answer {i}.")], tag="B" if i % 2 else "C")
    path = r.write(tmp_path / "t.jsonl", per_line=50)
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(path)],
        capture_output=True,
        text=True,
        timeout=90,
        check=True,
    )
    got = json.loads(done.stdout)
    assert got["exchanges"] == 1 and got["branches"] == CALLS - 1
    assert got["tags"] == ["B", "C"] and got["main_tag"] == "B"
