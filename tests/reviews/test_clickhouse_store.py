"""Reviews in ClickHouse (issue #45), on chdb (ClickHouse's engine in-process, the same
SQL a server runs): the same events as the file, each once, and a ClickHouse source's
reviews kept in its own database rather than in the working directory."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.fixtures import A, Q, Recorder
from trajectory_review.reviews.log import ReviewEvent, ReviewLog
from trajectory_review.reviews.store import open_store, review_location

CLI = [sys.executable, "-m", "trajectory_review.tools.cli"]


def _events() -> list[ReviewEvent]:
    return [
        ReviewEvent("note", "c1", "ann", 1, "canopy looks off", identity="declared"),
        ReviewEvent(
            "verdict",
            "c1",
            "bo",
            1,
            "",
            "no-banned-phrases",
            "false_positive",
            identity="authenticated",
        ),  # fmt: skip
        ReviewEvent("flag", "c1", "ann", None, identity="declared"),
    ]


def test_events_read_back_from_clickhouse_as_from_a_file_each_once(store, tmp_path):
    ch, log, events = open_store(store), ReviewLog(tmp_path / "r.jsonl"), _events()
    for e in events:
        ch.append(e)
        log.append(e)
    ch.append(events[0])  # there already: adds nothing
    again = open_store(store)  # another reader, from the start
    assert again.state().events == log.state().events and again.state().error is None
    assert ch.state().events == log.state().events
    assert "trajectory_review_events" in ch.shown


def test_a_clickhouse_servers_reviews_go_to_its_database_not_the_working_directory(
    monkeypatch,
):
    monkeypatch.delenv("TRAJECTORY_REVIEW_LOG", raising=False)
    source = "clickhouse://qa:s3cret@ch.example:8443/otel?secure=1"
    assert review_location([source]) == source
    shown = open_store(review_location([source])).shown
    assert shown == "clickhouse://qa@ch.example:8443/otel?table=trajectory_review_events"
    chdb = review_location(["chdb:///data/ch?database=otel"])
    assert chdb == "/data/otel.otel_traces.reviews.jsonl"  # beside its data, as before


def test_reviews_copy_into_clickhouse_and_back_and_export_the_same(tmp_path):
    r = Recorder()
    r.turn("c1", [Q("How many plots?"), A("There are 12 plots in the stand inventory.")],
           tag="C")  # fmt: skip
    (tmp_path / "traces").mkdir()
    traces = r.write(tmp_path / "traces" / "t.jsonl")
    log = ReviewLog(tmp_path / "team.jsonl")
    for e in _events():
        log.append(e)
    ch = f"chdb://{tmp_path / 'ch'}?database=reviews"

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=120,
                              cwd=tmp_path, env={**os.environ})  # fmt: skip

    for _ in range(2):
        done = cli("reviews", "copy", str(log.path), ch)
        assert done.returncode == 0, done.stderr
    assert "copied 0 review event(s)" in done.stderr and "3 already there" in done.stderr
    assert cli("reviews", "copy", ch, str(tmp_path / "back.jsonl")).returncode == 0
    back = [json.loads(x) for x in (tmp_path / "back.jsonl").read_text().splitlines()]
    assert back == [json.loads(x) for x in log.path.read_text().splitlines()]
    exports = [cli("export", str(traces), "--reviewed", "--review-log", where).stdout
               for where in (str(log.path), ch)]  # fmt: skip
    assert exports[0] == exports[1] and exports[0].strip()
