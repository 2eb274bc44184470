"""What a newcomer's first `make run` shows (issue #46): the shipped traces warn only where
a file's name says it is there to, and a bad line read under two names is one warning."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from tests.fixtures import A, Q, Recorder
from trajectory_review.model.reader import TraceReader

SHIPPED = Path(__file__).resolve().parents[2] / "traces"


def test_the_shipped_traces_warn_only_from_files_named_for_it():
    reader = TraceReader.open([str(SHIPPED)], cache=False)
    bad = reader.stats.bad_line_details
    assert bad and all("/traces/demo-bad-lines.jsonl:" in line for line in bad)
    demo = TraceReader.open([str(SHIPPED / "demo-no-conversation-id.jsonl")], cache=False)
    rest = [str(f) for f in SHIPPED.iterdir() if not f.name.startswith("demo-")]
    plain = TraceReader.open(rest, cache=False)
    assert demo.stats.span_warnings and not plain.stats.span_warnings
    assert not plain.stats.bad_line_details and plain.stats.conversations > 150


def test_a_bad_line_reached_through_two_names_is_one_warning(tmp_path):
    r = Recorder()
    r.turn("c1", [Q("How many plots?"), A("Twelve plots were measured in the stand.")])
    folder = tmp_path / "traces"
    folder.mkdir()
    r.write(folder / "trace-1.jsonl", extra_lines=["not json at all"])
    os.link(folder / "trace-1.jsonl", folder / "trace-latest.jsonl")  # as commons links it
    shutil.copy(folder / "trace-1.jsonl", tmp_path / "copy.jsonl")  # as a checkout copies it
    for sources in ([str(folder)], [str(folder), str(tmp_path / "copy.jsonl")]):
        reader = TraceReader.open(sources, cache=False)
        assert len(reader.stats.bad_line_details) == 1, reader.stats.bad_line_details
        assert reader.stats.conversations == 1
