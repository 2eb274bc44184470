"""One recorded conversation too big for one worker: its answers are handed out in
slices, one per worker, and the catalog gets the same rows as from one process."""

from __future__ import annotations

from trajectory_review.index.rows import message_bytes
from trajectory_review.listing.summary import build_answers
from trajectory_review.model.reader import TraceReader
from trajectory_review.support import workers
from trajectory_review_bench.answers import SPAN_DAYS, START_NS
from trajectory_review_bench.generate import generate, long_conversation

LATER = START_NS + (SPAN_DAYS + 1) * 86_400 * 10**9


def _traces(tmp_path):
    generate(tmp_path, conversations=30, seed=5)
    long_conversation(tmp_path / "long.jsonl", 3_000, LATER)  # ~5 MB of messages
    return tmp_path


def test_a_conversation_over_the_split_weight_is_handed_out_a_slice_per_worker(tmp_path):
    reader = TraceReader.open([_traces(tmp_path)], cache=False)
    cut = list(workers.batches(reader.index.iter_chat_rows(), {}, weigh=message_bytes, slices=3))
    # the newest, alone in three batches of its own, each a third; the rest as before
    assert [[(cid, part) for cid, _rows, _fp, part in b] for b in cut[:3]] == [
        [("long-3000", (0, 3))],
        [("long-3000", (1, 3))],
        [("long-3000", (2, 3))],
    ]
    rest = [item for b in cut[3:] for item in b]
    assert len(rest) == reader.stats.conversations - 1
    assert all(part == workers.WHOLE for *_, part in rest)
    # one worker: nothing is cut
    whole = list(workers.batches(reader.index.iter_chat_rows(), {}, weigh=message_bytes))
    assert all(part == workers.WHOLE for b in whole for *_, part in b)
    reader.index.close()


def test_the_slices_make_the_same_catalog_rows_as_one_process(tmp_path, monkeypatch):
    reader = TraceReader.open([_traces(tmp_path)], cache=False)
    one = build_answers(reader, workers=1)
    monkeypatch.setattr(workers, "PARALLEL_MIN", 0)  # in workers, however few
    spread = build_answers(reader, workers=2)
    reader.index.close()

    def rows(answers):
        frame = answers.frame.sort_values(["conversation_id", "exchange"], ignore_index=True)
        return frame.to_dict("records")

    assert len(one.frame) == 3_000 + len(one.frame[one.frame.conversation_id != "long-3000"])
    assert rows(spread) == rows(one)
    assert spread.dropped == one.dropped
    assert sorted(spread.warnings) == sorted(one.warnings)


def test_the_first_slice_is_not_held_back_by_one_huge_conversation_the_fill_brings_it(
    tmp_path,
):
    from trajectory_review.listing.catalog import build_catalog
    from trajectory_review.rules.registry import load_rules

    rules = load_rules()
    reader = TraceReader.open([_traces(tmp_path)], cache=False)
    catalog = build_catalog(reader, rules, judge=False, first=10)
    first = {r[0] for r in catalog.rows("SELECT DISTINCT conversation_id FROM answers")}
    # the newest ten less the huge one, which waits for the fill
    assert "long-3000" not in first and len(first) == 9
    assert catalog.replayed == 9 and catalog.replaying is not None
    catalog.fill(rules)
    catalog.judge(rules)
    whole = build_answers(reader, workers=1)
    rows = catalog.rows("SELECT count(*), count(*) FILTER (WHERE judged) FROM answers")[0]
    assert rows[0] == rows[1] == len(whole.frame)
    long = catalog.rows("SELECT count(*) FROM answers WHERE conversation_id = 'long-3000'")
    assert long[0][0] == 3_000
    reader.index.close()
