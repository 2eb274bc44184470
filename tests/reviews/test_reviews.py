"""The append-only review log: events survive, interleave safely, and torn lines are skipped."""

from __future__ import annotations

import csv
import io
import json
import multiprocessing
import threading

import pytest

from trajectory_review.reviews.log import (
    AUTHENTICATED,
    DECLARED,
    MAX_NAME,
    Reviewer,
    ReviewEvent,
    ReviewLog,
    clean_name,
)


def test_notes_and_flags_are_folded_from_the_log(tmp_path):
    log = ReviewLog(tmp_path / "r.jsonl")
    log.append(ReviewEvent("note", "c1", "ana", 2, "wrong unit"))
    log.append(ReviewEvent("flag", "c1", "ana", 2))
    log.append(ReviewEvent("flag", "c1", "bo", None))
    log.append(ReviewEvent("unflag", "c1", "bo", None))
    state = ReviewLog(tmp_path / "r.jsonl").state()  # a fresh reader: as after a restart
    assert [n.text for n in state.notes("c1", 2)] == ["wrong unit"]
    assert state.flagged("c1", 2).author == "ana"
    assert state.flagged("c1") is None
    ids = state.ids_by_state()
    assert ids["flagged"] == {"c1"} and ids["noted"] == {"c1"}


def test_verdicts_keep_the_latest_per_rule(tmp_path):
    log = ReviewLog(tmp_path / "r.jsonl")
    log.append(ReviewEvent("verdict", "c1", "ana", 1, rule="no-banned-phrases", verdict="correct"))
    log.append(
        ReviewEvent(
            "verdict",
            "c1",
            "bo",
            1,
            rule="no-banned-phrases",
            verdict="false_positive",
            text="reporter voice",
        )
    )
    v = log.state().verdicts()[("c1", 1, "no-banned-phrases")]
    assert v.verdict == "false_positive" and v.author == "bo"
    with pytest.raises(ValueError):
        log.append(ReviewEvent("verdict", "c1", "bo", 1, rule="x", verdict="maybe"))


def test_torn_last_line_is_skipped_and_the_next_append_starts_fresh(tmp_path):
    path = tmp_path / "r.jsonl"
    log = ReviewLog(path)
    log.append(ReviewEvent("note", "c1", "ana", None, "kept"))
    with open(path, "a") as fh:
        fh.write('{"type": "note", "conversation_id": "c1", "au')  # crash mid-write
    state = ReviewLog(path).state()
    assert [e.text for e in state.events] == ["kept"] and state.skipped_lines == 1
    log.append(ReviewEvent("note", "c1", "ana", None, "after crash"))
    state = ReviewLog(path).state()
    assert [e.text for e in state.events] == ["kept", "after crash"]


def _writer(path: str, who: str, n: int) -> None:
    log = ReviewLog(path)
    for i in range(n):
        log.append(ReviewEvent("note", "c1", who, None, f"{who}-{i} " + "x" * 3000))


def test_concurrent_processes_and_threads_lose_nothing(tmp_path):
    path = str(tmp_path / "r.jsonl")
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(path, f"p{k}", 60)) for k in range(3)]
    threads = [threading.Thread(target=_writer, args=(path, f"t{k}", 60)) for k in range(3)]
    for w in (*procs, *threads):
        w.start()
    for w in (*procs, *threads):
        w.join()
    lines = open(path).read().splitlines()
    assert len(lines) == 360
    texts = {json.loads(line)["text"].split()[0] for line in lines}  # every line whole
    assert len(texts) == 360


def test_review_log_defaults_beside_the_traces(tmp_path, monkeypatch):
    from trajectory_review.reviews.store import review_location

    monkeypatch.delenv("TRAJECTORY_REVIEW_LOG", raising=False)
    assert review_location([str(tmp_path / "traces")]) == str(tmp_path / "traces.reviews.jsonl")
    monkeypatch.setenv("TRAJECTORY_REVIEW_LOG", str(tmp_path / "x.jsonl"))
    assert review_location() == str(tmp_path / "x.jsonl")


def test_review_events_export_as_csv(tmp_path):
    log = ReviewLog(tmp_path / "r.jsonl")
    log.append(ReviewEvent("note", "c1", "ana", 1, 'says "hi", twice'))
    csv_text = log.to_csv()
    assert csv_text.splitlines()[0].startswith("ts,author,identity,type,conversation_id")
    assert '"says ""hi"", twice"' in csv_text


def test_queue_marks_are_events_and_carry_no_rule(tmp_path):
    log = ReviewLog(tmp_path / "r.jsonl")
    log.append(ReviewEvent("looks_right", "c1", "ana", 1))
    log.append(ReviewEvent("reopen", "c1", "bo", 1))
    with open(log.path, "a", encoding="utf-8") as fh:  # what no app writes
        bad = ReviewEvent("looks_right", "c1", "eve", 1).__dict__ | {"rule": "x"}
        fh.write(json.dumps(bad) + "\n")
    state = ReviewLog(log.path).state()
    assert [e.type for e in state.events] == ["looks_right", "reopen"]
    assert state.skipped_lines == 1
    assert state.answer_state(("c1", 1), ["no-banned-phrases"]) == "to do"


def test_names_are_printable_and_each_event_says_how_its_author_is_known(tmp_path):
    log = ReviewLog(tmp_path / "r.jsonl")
    log.append(Reviewer("ana", AUTHENTICATED).event("note", "c1", 1, "signed in"))
    log.append(Reviewer("bo", DECLARED).event("flag", "c1", 1))
    with open(log.path, "a", encoding="utf-8") as fh:
        # written by hand or by an older version: a hidden override, a bad identity
        old = ReviewEvent("note", "c1", "\u202eeve\u200b \u0007 ", 1, "old").__dict__
        fh.write(json.dumps({k: v for k, v in old.items() if k != "identity"}) + "\n")
        fh.write(json.dumps(old | {"identity": "admin"}) + "\n")
    state = ReviewLog(log.path).state()
    assert [(e.author, e.identity) for e in state.events] == [
        ("ana", "authenticated"), ("bo", "declared"), ("eve", None)
    ]  # fmt: skip
    assert state.skipped_lines == 1
    rows = list(csv.DictReader(io.StringIO(log.to_csv())))
    assert [r["identity"] for r in rows] == ["authenticated", "declared", ""]
    assert clean_name("  a\u202e\u2066b\u200d c\n") == "ab c"
    assert clean_name("x" * 500) == "x" * MAX_NAME and clean_name("\u200b") == ""
