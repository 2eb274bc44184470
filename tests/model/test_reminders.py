"""Reminders today's commons appends to a user turn for the model only are hidden wherever
a question is shown or searched, kept where the recording is read verbatim, and never
change which record attaches to which answer (issue #35 §2)."""

from __future__ import annotations

import csv
import io
import json

from tests.fixtures import A, Q, Recorder
from trajectory_review.listing.catalog import build_catalog
from trajectory_review.listing.filters import Filters
from trajectory_review.model.reader import TraceReader
from trajectory_review.model.trajectory import split_reminders
from trajectory_review.reviews.log import ReviewEvent, ReviewLog
from trajectory_review.tools.cli import main

CONCISE = "<reminder>Be concise as a default.</reminder>"
RESTORED = (
    "<reminder>The Python state associated with this restored conversation is unavailable. "
    "Do not assume that objects, loaded packages, or result handles from earlier run_python "
    "calls still exist. Re-run needed tools, recreate objects, and reload packages before "
    "continuing.</reminder>"
)


def recorded(tmp_path) -> str:
    r = Recorder()
    q1 = Q(f"How many orders?\n{CONCISE}")
    q2 = Q(f"And last week?\n\n{RESTORED}\n{CONCISE}")
    r.turn("c1", [q1, A("There were 412 orders in all, across every region.")], tag="A")
    r.turn(
        "c1",
        [q1, A("There were 412 orders in all, across every region."), q2,
         A("Last week there were 97 orders, most of them in the north.")],
        tag="C",
    )  # fmt: skip
    return str(r.write(tmp_path / "t.jsonl"))


def test_a_question_is_shown_without_its_reminders_and_records_still_attach(tmp_path, capsys):
    path = recorded(tmp_path)
    assert main(["export", path]) == 0
    (conv,) = json.loads(capsys.readouterr().out)["conversations"]
    assert [e["question"] for e in conv["exchanges"]] == ["How many orders?", "And last week?"]
    assert [e["provenance_tag"] for e in conv["exchanges"]] == ["A", "C"]  # matched as recorded
    assert main(["export", path, "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [r["question"] for r in rows] == ["How many orders?", "And last week?"]
    ReviewLog(tmp_path / "r.jsonl").append(ReviewEvent("note", "c1", "ann", 2, "checked"))
    assert main(["export", path, "--reviewed", "--review-log", str(tmp_path / "r.jsonl")]) == 0
    (case,) = [json.loads(ln) for ln in capsys.readouterr().out.splitlines()]
    assert case["question"] == "And last week?"


def test_reminders_are_neither_listed_nor_found_but_kept_for_the_reviewer(tmp_path):
    reader = TraceReader.open([recorded(tmp_path)], cache=False)
    catalog = build_catalog(reader)
    rows = catalog.page(Filters(view="answers")).rows
    assert sorted(rows["question"]) == ["And last week?", "How many orders?"]
    assert catalog.page(Filters(view="answers", q="concise")).total == 0
    assert catalog.page(Filters(view="answers", q="last week")).total == 1
    second = reader.conversation("c1").exchanges[1]
    assert second.reminders == (RESTORED, CONCISE)
    assert CONCISE in second.messages[0].parts[0].content  # the recording, verbatim


def test_only_whole_reminder_elements_at_the_end_are_hidden():
    assert split_reminders(CONCISE) == ("", [CONCISE])
    assert split_reminders(f"a {CONCISE} b") == (f"a {CONCISE} b", [])  # not at the end
    assert split_reminders("see </reminder>") == ("see </reminder>", [])
    assert split_reminders("x <reminder>a</reminder>b</reminder>")[1] == []
    many = "q" + "<reminder></reminder>" * 100_000  # read once, not once per reminder
    assert split_reminders(many) == ("q", ["<reminder></reminder>"] * 100_000)
