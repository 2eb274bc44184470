"""A catalog row holds each answer's values under their own columns: the rows are tuples
in answer_rows.COLUMNS' order, so an item written at the wrong place would put (say) the
question under the answer's column, or one count under another."""

from __future__ import annotations

from datetime import UTC, datetime

from tests.fixtures import CALL, RESULT, A, Q, Recorder
from trajectory_review.listing.answer_rows import COLUMNS
from trajectory_review.listing.summary import build_answers
from trajectory_review.model.reader import TraceReader

DECISIONS = [
    {"quote": "a fabricated quote", "status": "rejected"},
    {"quote": "no closing tag", "status": "malformed"},
    {"quote": "another fabrication", "status": "rejected"},
]
REPLY = "There are 3 plots in `plot_visits`, see https://example.org/plots for each one."


def test_each_catalog_column_holds_its_own_value(tmp_path):
    r = Recorder()
    first = [Q("How many plots?"), CALL("t1", "query_plots", {"where": "all"})]
    answered = [*first, RESULT("t1", {"rows": 3, "table": "plots"}), A(REPLY)]
    r.turn("conv-1", first, answered, tag="B", decisions=DECISIONS)
    r.turn("conv-1", [*answered, Q("And stands?"), A("Two.")], tag=None)
    chats = [s for s in r.spans if s["name"].startswith("chat")]
    reader = TraceReader.open([r.write(tmp_path / "t.jsonl")], cache=False)

    frame = build_answers(reader, workers=1).frame
    assert list(frame.columns) == COLUMNS
    row = frame[frame["exchange"] == 1].iloc[0].to_dict()
    end_1, last_end = int(chats[1]["endTimeUnixNano"]), int(chats[2]["endTimeUnixNano"])
    fingerprint = row.pop("fingerprint")
    failed, blocking, na = (list(row.pop(k)) for k in ("failed_rules", "blocking_rules",
                                                        "na_rules"))  # fmt: skip
    assert row == {
        "conversation_id": "conv-1",
        "exchange": 1,
        "n_exchanges": 2,
        "question": "How many plots?",
        "answer_text": REPLY,
        "tag": "B",
        "rejected": 2,
        "malformed": 1,
        "problem": 0,
        "finish": "",
        "conflict": False,
        "complete": True,
        "last_active_ns": last_end,
        "answered_ns": end_1,
        "day": datetime.fromtimestamp(end_1 / 1e9, UTC).date(),
        "branches": 0,
        "model": "claude-sonnet-4",
        "tools": "query_plots",
        "warnings": 0,
        "judged": True,
    }
    assert fingerprint == reader.index.conversation_fingerprints()["conv-1"]
    # `plot_visits` is named by no tool result: the identifier rule flags it, below its
    # threshold; the reply cites no retrieved URL but is short; the rest have nothing to do
    assert failed == ["grounded-identifiers"] and blocking == [] and na == []
    second = frame[frame["exchange"] == 2].iloc[0]
    assert (second["question"], second["answer_text"], second["tag"]) == ("And stands?", "Two.",
                                                                           "none")  # fmt: skip
    assert list(second["failed_rules"]) == ["says-something"]
