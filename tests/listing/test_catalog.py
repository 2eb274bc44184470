"""The list behind the sidebar: filters, counts, pages and neighbours, all in DuckDB."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import pytest

from tests.fixtures import A, Q, Recorder
from trajectory_review.listing.answer_rows import COLUMN_KINDS
from trajectory_review.listing.catalog import build_catalog
from trajectory_review.listing.dialect import DUCKDB
from trajectory_review.listing.filters import MAX_PAGE_SIZE, Filters
from trajectory_review.listing.queries import Catalog
from trajectory_review.model.reader import TraceReader
from trajectory_review.rules.registry import load_rules
from trajectory_review_bench.answers import SPAN_DAYS, START_NS
from trajectory_review_bench.generate import generate, long_conversation

REJECTED = [{"quote": "a fabricated quote", "status": "rejected"}]


@pytest.fixture
def catalog(tmp_path):
    r = Recorder()
    for i in range(120):
        tag = ["A", "B", "C", None][i % 4]
        decisions = REJECTED if i % 10 == 0 else []
        r.turn(
            f"c{i:03d}",
            [Q(f"question {i} about canopy" if i % 2 else f"question {i}"), A(f"answer {i}")],
            tag=tag,
            decisions=decisions,
        )
    return build_catalog(TraceReader.open([r.write(tmp_path / "t.jsonl")]))


def test_the_table_has_the_column_lists_types_even_with_no_answers(catalog, tmp_path):
    """Typed from answer_rows.COLUMN_KINDS, not inferred by pandas: a catalog of traces
    holding no conversation had every column typed NULL but the rule columns."""
    none = tmp_path / "none"
    none.mkdir()
    (none / "t.jsonl").write_text('{"resourceSpans": []}\n')
    empty = build_catalog(TraceReader.open([none], cache=False))
    wanted = [(c, DUCKDB.column_types[kind]) for c, kind in COLUMN_KINDS.items()]
    for cat in (catalog, empty):
        described = cat.rows("DESCRIBE answers")
        assert [(row[0], row[1]) for row in described] == wanted
    # and every list query runs on the empty one
    assert empty.page(Filters(q="x", tags=("A",))).total == 0
    assert empty.facet_counts(Filters())["tags"] == {"A": 0, "B": 0, "C": 0, "none": 0}
    assert empty.trust_over_time(Filters()).empty
    assert empty.date_bounds() == (None, None)


def test_pages_never_exceed_the_cap(catalog):
    page = catalog.page(Filters(), page_size=1000)
    assert len(page.rows) == MAX_PAGE_SIZE and page.total == 120 and page.pages == 2


def test_newest_conversations_come_first(catalog):
    rows = catalog.page(Filters()).rows
    assert list(rows["conversation_id"][:3]) == ["c119", "c118", "c117"]


def test_tag_filter_and_counts(catalog):
    counts = catalog.facet_counts(Filters(tags=("A",)))
    assert counts["tags"] == {"A": 30, "B": 30, "C": 30, "none": 30}
    page = catalog.page(Filters(tags=("A", "none")))
    assert page.total == 60 and set(page.rows["tag"]) == {"A", "none"}


def test_reviewers_asking_for_one_new_filter_state_at_once_count_it_once(catalog, monkeypatch):
    # the list's page and its filter counts ask from threads at once (app/listing.py),
    # and so do reviewers clicking the same filter: one of them counts, the rest wait
    counted = []
    real = catalog._facet_counts

    def slow_count(f):
        counted.append(f)
        time.sleep(0.2)
        return real(f)

    monkeypatch.setattr(catalog, "_facet_counts", slow_count)
    f = Filters(tags=("B",))
    start = threading.Barrier(6)

    def ask(_: int) -> dict:
        start.wait()
        return catalog.facet_counts(f)

    with ThreadPoolExecutor(6) as pool:
        answers = list(pool.map(ask, range(6)))
    assert len(counted) == 1 and all(a == answers[0] for a in answers)
    assert answers[0]["total"]["all"] == 30
    # another state is counted on its own, and a state asked again is not counted again
    catalog.facet_counts(Filters(tags=("C",)))
    catalog.facet_counts(f)
    assert len(counted) == 2


def test_a_count_that_failed_is_tried_again_on_the_next_ask(catalog, monkeypatch):
    real = catalog._facet_counts
    calls = []

    def failing_once(f):
        calls.append(f)
        if len(calls) == 1:
            raise RuntimeError("the engine went away")
        return real(f)

    monkeypatch.setattr(catalog, "_facet_counts", failing_once)
    with pytest.raises(RuntimeError):
        catalog.facet_counts(Filters(tags=("A",)))
    assert catalog.facet_counts(Filters(tags=("A",)))["total"]["all"] == 30


def test_rejected_filter_and_count(catalog):
    assert catalog.facet_counts(Filters())["rejected"]["yes"] == 12
    assert catalog.page(Filters(rejected=True)).total == 12


def test_full_text_search_over_questions_and_answers(catalog):
    assert catalog.page(Filters(q="canopy")).total == 60
    assert catalog.page(Filters(q="answer 7")).total == 11  # 7, 70-79
    assert catalog.page(Filters(q="100%_")).total == 0  # wildcards are literal


def test_review_state_filter(catalog):
    ids = {"flagged": frozenset({"c001", "c002"}), "reviewed": frozenset({"c001", "c002"})}
    assert catalog.page(Filters(review="flagged", review_ids=ids)).total == 2
    assert catalog.page(Filters(review="unreviewed", review_ids=ids)).total == 118


def test_neighbours_follow_the_filtered_order(catalog):
    f = Filters(tags=("A",))
    prev, nxt = catalog.neighbours(f, "c112")
    assert (prev, nxt) == ("c116", "c108")
    assert catalog.neighbours(f, "not-there") == (None, "c116")


def test_answers_view_lists_one_row_per_exchange(catalog):
    page = catalog.page(replace(Filters(), view="answers"))
    assert page.total == 120 and "exchange" in page.rows


def test_page_of_finds_the_page_that_holds_a_conversation(catalog):
    assert catalog.page_of(Filters(), "c119") == 1
    assert catalog.page_of(Filters(), "c000") == 3  # 120 newest-first, 50 a page
    assert catalog.page_of(Filters(tags=("A",)), "c000") == 1  # 30 answers tagged A
    assert catalog.page_of(Filters(), "missing") == 1
    assert catalog.page_of(replace(Filters(), view="answers"), "c060") == 2


def test_a_tag_filter_shows_each_conversation_by_its_matching_answer(tmp_path):
    r = Recorder()
    r.turn("mixed", [Q("q1"), A("a1")], tag="C")
    r.turn("mixed", [Q("q1"), A("a1"), Q("q2"), A("a2")], tag="A")
    catalog = build_catalog(TraceReader.open([r.write(tmp_path / "t.jsonl")]))
    assert list(catalog.page(Filters()).rows["tag"]) == ["A"]  # unfiltered: the latest answer
    assert list(catalog.page(Filters(tags=("C",))).rows["tag"]) == ["C"]


def _all_rows(catalog: Catalog) -> list[tuple]:
    return sorted(catalog.rows("SELECT * FROM answers ORDER BY ALL"), key=repr)


def test_a_rebuild_replays_only_new_and_changed_conversations(tmp_path):
    r = Recorder()
    for i in range(6):
        r.turn(f"c{i}", [Q(f"question {i}"), A(f"answer {i}")], tag="A")
    r.write(tmp_path / "a.jsonl")
    first = build_catalog(TraceReader.open([tmp_path], cache=False))
    assert first.replayed == 6
    # the trace file grows: c2 gets a second exchange, c9 is new
    r.turn("c2", [Q("question 2"), A("answer 2"), Q("and then?"), A("then more")], tag="C")
    r.turn("c9", [Q("question 9"), A("answer 9")], tag="B")
    r.write(tmp_path / "a.jsonl")
    reader = TraceReader.open([tmp_path], cache=False)
    again = build_catalog(reader, previous=first)
    assert again.replayed == 2
    # exactly what replaying everything gives
    assert _all_rows(again) == _all_rows(build_catalog(reader))
    assert again.page(Filters(view="answers", tags=("C",))).rows["conversation_id"].tolist() == [
        "c2"
    ]


def test_other_rules_replay_everything_again(tmp_path):
    r = Recorder()
    r.turn("c1", [Q("q1"), A("Great question! The answer is sixty one percent.")], tag="A")
    r.write(tmp_path / "a.jsonl")
    reader = TraceReader.open([tmp_path], cache=False)
    first = build_catalog(reader)
    lax = tmp_path / "rules.toml"
    lax.write_text("[no-banned-phrases]\npattern = []\n")
    again = build_catalog(reader, load_rules(lax), previous=first)
    assert again.replayed == 1
    assert again.page(Filters(view="flagged")).total == 0


def test_replay_in_worker_processes_gives_the_same_answers(tmp_path, monkeypatch):
    from trajectory_review.listing import summary
    from trajectory_review_bench.generate import generate

    generate(tmp_path / "traces", conversations=120, seed=3)
    reader = TraceReader.open([tmp_path / "traces"], cache=False)
    from trajectory_review.support import workers

    monkeypatch.setattr(workers, "PARALLEL_MIN", 0)
    monkeypatch.setattr(workers, "BATCH", 16)  # several batches in flight, in order
    one = summary.build_answers(reader, workers=1)
    two = summary.build_answers(reader, workers=2)
    assert one.frame.astype(str).equals(two.frame.astype(str))
    assert (one.dropped, one.warnings) == (two.dropped, two.warnings)


def test_model_and_tool_filters_with_counts(tmp_path):
    from tests.fixtures import CALL, RESULT

    r = Recorder()
    sql = [CALL("c1", "run_sql", {"sql": "x"}), RESULT("c1", "1")]
    measure = [CALL("m1", "call_measure", {"m": "x"}), RESULT("m1", "2")]
    r.turn("sql", [Q("q1"), *sql, A("a1")], tag="C")
    r.turn("both", [Q("q2"), *sql, *measure, A("a2")], tag="B")
    r.turn("none", [Q("q3"), A("a3")], tag=None)
    cat = build_catalog(TraceReader.open([r.write(tmp_path / "t.jsonl")]))
    assert cat.select_values()["tool"] == ["call_measure", "run_sql"]
    assert cat.select_values()["model"] == ["claude-sonnet-4"]

    def ids(**kw) -> set[str]:
        return set(cat.page(Filters(**kw)).rows["conversation_id"])

    assert ids(tool="run_sql") == {"sql", "both"}
    assert ids(tool="call_measure") == {"both"}
    assert ids(tool="run") == set()  # a tool name, not a substring
    assert ids(model="claude-sonnet-4") == {"sql", "both", "none"}
    assert ids(model="gpt-x") == set()
    counts = cat.facet_counts(Filters(tool="call_measure"))
    assert counts["tools"] == {"run_sql": 2, "call_measure": 1}  # other filters applied
    assert counts["models"] == {"claude-sonnet-4": 1}


def test_the_early_list_agrees_with_the_judged_one(tmp_path, monkeypatch):
    """Served before the reply rules have run, the list never shows a count or pill that
    the judged list contradicts; judging fills in exactly the one-pass build's rules."""
    from trajectory_review_bench.generate import generate

    generate(tmp_path / "traces", conversations=60, seed=5)
    reader = TraceReader.open([tmp_path / "traces"], cache=False)
    early = build_catalog(reader, judge=False)
    assert early.judging == 0.0
    views = [
        Filters(),
        Filters(view="answers"),
        Filters(view="answers", tags=("C",)),
        Filters(tags=("A", "B")),
        Filters(view="answers", rejected=True),
        Filters(malformed=True, q="canopy"),
    ]
    not_rules = ["tags", "rejected", "malformed", "problem", "review"]

    def shown(c: Catalog) -> list:
        out = []
        for f in views:
            p = c.page(f)
            out.append((p.total, p.rows.drop(columns=["failed_rules", "blocking_rules"],
                                              errors="ignore").to_dict("records")))  # fmt: skip
            counts = c.facet_counts(f)
            out.append({k: counts[k] for k in not_rules})
        return out

    before = shown(early)
    monkeypatch.setattr("trajectory_review.listing.catalog.JUDGE_CHUNK", 10)  # a fifth each
    seen = []
    early.judge(load_rules(), lambda done, total: seen.append((done, total)))
    assert early.judging is None and seen[-1][0] == seen[-1][1] == early.conversation_count()
    assert early.judged_generation == 6  # five chunks written one by one, then done
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
    assert shown(early) == before
    full = build_catalog(reader)
    cols = "conversation_id, exchange, failed_rules, blocking_rules, na_rules, judged"
    query = f"SELECT {cols} FROM answers ORDER BY conversation_id, exchange"
    assert early.rows(query) == full.rows(query)
    assert early.page(Filters(view="flagged")).total == full.page(Filters(view="flagged")).total


def test_a_list_served_from_the_newest_conversations_is_never_contradicted(tmp_path):
    """A first start serves the list once the newest conversations are replayed and
    replays the rest behind it (Catalog.fill): every row shown early is the row the full
    replay gives, the top of the list is already final, and counts only grow."""
    from trajectory_review_bench.generate import generate

    generate(tmp_path / "traces", conversations=120, seed=5)
    reader = TraceReader.open([tmp_path / "traces"], cache=False)
    full = build_catalog(reader)
    early = build_catalog(reader, first=30)
    total = reader.stats.conversations
    assert early.replaying == pytest.approx(30 / total) and early.replayed == 30
    final_rows = _all_rows(full)
    assert 0 < early.total_answers < full.total_answers
    # each answer shown early (pill, counts, everything) is the final row for it, less
    # the rule columns, which judge() fills in later
    final_by_key = {r[:2]: r for r in _unjudged_rows(full)}
    assert all(final_by_key[r[:2]] == r for r in _unjudged_rows(early))
    for view in ("conversations", "answers"):
        first_page = early.page(Filters(view=view), page_size=10).rows
        assert first_page["conversation_id"].tolist() == (
            full.page(Filters(view=view), page_size=10).rows["conversation_id"].tolist()
        )
    early_counts, final_counts = early.facet_counts(Filters()), full.facet_counts(Filters())
    for facet, values in early_counts.items():
        for value, n in values.items():
            assert n <= final_counts[facet].get(value, 0), (facet, value)
    # the date pickers span every conversation already, so their default filters none out
    assert early.date_bounds()[0] <= full.date_bounds()[0]
    generation = early.judged_generation
    early.fill(load_rules())
    assert early.replaying is None and early.replayed == total
    assert early.judged_generation > generation  # sessions are told to draw again
    early.judge(load_rules())  # the first slice's rule columns
    assert _all_rows(early) == final_rows
    assert early.select_values() == full.select_values()
    assert early.date_bounds() == full.date_bounds()
    assert early.conversation_count() == full.conversation_count()


def _unjudged_rows(catalog: Catalog) -> list[tuple]:
    """Every row without its rule columns, keyed first by (conversation, exchange)."""
    return catalog.rows(
        "SELECT conversation_id, exchange, * EXCLUDE (failed_rules, blocking_rules, na_rules, "
        "judged) FROM answers ORDER BY conversation_id, exchange"
    )


def test_a_list_that_cannot_be_filled_in_stays_and_says_why(tmp_path, monkeypatch, capsys):
    """Conversations read in after the list is served (Loader._behind) that fail to replay
    leave the list as it is, say why on the page and in the log, and never keep a
    download waiting."""
    from trajectory_review.app.data import AppData, Loader
    from trajectory_review.listing import catalog as catalog_module
    from trajectory_review.reviews.log import ReviewLog
    from trajectory_review_bench.generate import generate

    generate(tmp_path / "traces", conversations=60, seed=7)
    reader = TraceReader.open([tmp_path / "traces"], cache=False)
    early = build_catalog(reader, first=20, judge=False)
    shown = early.total_answers

    def broken(*args, **kwargs):
        raise RuntimeError("a worker process died")

    monkeypatch.setattr(catalog_module, "stream_answers", broken)
    rules = load_rules()
    data = AppData(reader, early, ReviewLog(tmp_path / "reviews.jsonl"), [], rules)
    Loader._behind(data)
    assert early.replaying is None and early.total_answers == shown
    assert "a worker process died" in (early.judge_error or "")
    assert "a worker process died" in capsys.readouterr().err
    began = time.monotonic()
    early.wait_settled(timeout=30)  # at once: the list will not grow, a file is what there is
    assert time.monotonic() - began < 5
    assert early.page(Filters()).total > 0


def test_a_long_conversation_judged_first_leaves_the_rest_judged_too(tmp_path):
    # DuckDB types a column of lists from a sample of its rows: 20,000 answers that every
    # rule found applicable (empty `na_rules`), beside a corpus where some are not, made
    # the sample all empty lists (NULL[]): the rest could not be read, and the reply rules
    # never finished for anyone
    generate(tmp_path, conversations=1_000, seed=5)
    long_conversation(tmp_path / "long.jsonl", 20_000, START_NS + (SPAN_DAYS + 1) * 86_400 * 10**9)
    rules = load_rules(None)
    catalog = build_catalog(
        TraceReader.open([str(tmp_path)], cache=False), rules, judge=False, first=150
    )
    catalog.fill(rules)
    catalog.judge(rules)
    rows = catalog.rows(
        "SELECT count(*), count(*) FILTER (WHERE judged), "
        "count(*) FILTER (WHERE len(na_rules) > 0) FROM answers"
    )[0]
    assert rows[0] == rows[1] > 20_000 and rows[2] > 0
