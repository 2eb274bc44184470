"""The trace watcher: what counts as a change of the traces."""

from __future__ import annotations

from tests.fixtures import A, Q, Recorder
from trajectory_review.app.data import _sources_key


def test_notes_in_a_review_log_inside_the_traces_are_not_a_change(tmp_path, monkeypatch):
    r = Recorder()
    r.turn("c1", [Q("q1"), A("a1")], tag="A")
    r.write(tmp_path / "trace-1.jsonl")
    log = tmp_path / "reviews.jsonl"
    log.write_text('{"kind": "note"}\n')
    monkeypatch.setenv("TRAJECTORY_TRACES", str(tmp_path))
    monkeypatch.setenv("TRAJECTORY_REVIEW_LOG", str(log))
    before = _sources_key()
    log.write_text('{"kind": "note"}\n{"kind": "flag"}\n')
    assert _sources_key() == before
    r.turn("c2", [Q("q2"), A("a2")], tag="B")
    r.write(tmp_path / "trace-1.jsonl")  # a trace file that grew is
    assert _sources_key() != before


def test_a_missing_traces_folder_is_no_key_not_an_error(tmp_path, monkeypatch):
    monkeypatch.setenv("TRAJECTORY_TRACES", str(tmp_path / "nowhere"))
    assert _sources_key() is None
