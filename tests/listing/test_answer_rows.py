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


def test_each_answer_is_dated_by_its_own_utc_day_either_side_of_midnight(tmp_path):
    """Answers of one conversation fall on several days; a day is kept by its number, so
    the second answer of a day must not take the first one's day, nor an answer a
    millisecond either side of midnight the other side's."""
    midnight = int(datetime(2026, 3, 1, tzinfo=UTC).timestamp()) * 10**9
    ends = [
        midnight - 3_600 * 10**9,  # 23:00 the day before
        midnight - 10**6 + 1,  # within a millisecond before midnight
        midnight + 10**5,  # a tenth of a millisecond after it
        midnight + 7 * 86_400 * 10**9,  # a week later
        10**9 * 10,  # 1970
        9_000_000_000 * 10**9,  # 2255
    ]
    r = Recorder()
    history: list = []
    for n, end in enumerate(ends):
        r._t = end - 3 * 10**9  # the chat call ends three ticks after the turn starts
        q = Q(f"Question {n}?")
        history = [*history, q, A(f"Answer {n}.")]
        r.turn("conv-days", history)
    reader = TraceReader.open([r.write(tmp_path / "t.jsonl")], cache=False)
    frame = build_answers(reader, workers=1).frame.sort_values("exchange")
    assert list(frame["answered_ns"]) == ends
    assert list(frame["day"]) == [datetime.fromtimestamp(e / 1e9, UTC).date() for e in ends]
