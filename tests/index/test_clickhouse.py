"""Traces in ClickHouse, tested on chdb (ClickHouse 26.9's engine in-process) through
clickhouse-connect's chdb:// backend: the Collector's DDL, one chdb directory for the test
session (a directory opens in one process only), a database per test.

Long on purpose: one engine's index, catch-up and checks, beside the chdb session they share."""

from __future__ import annotations

import itertools
import json
import shutil
import subprocess
import sys
import zlib
from pathlib import Path

import pandas as pd
import pytest

from tests.fixtures import A, Q, Recorder
from trajectory_review.index.clickhouse import ClickHouseIndex, since_ns
from trajectory_review.listing.answer_rows import COLUMN_KINDS, COLUMNS
from trajectory_review.listing.catalog import build_catalog
from trajectory_review.listing.dialect import CLICKHOUSE, SEARCH_EXPRESSION
from trajectory_review.listing.filters import Filters
from trajectory_review.listing.queries import Catalog
from trajectory_review.model.reader import TraceReader
from trajectory_review.sources import SourceError
from trajectory_review.sources.clickhouse import client, parse_location
from trajectory_review.tools.load import load

SHIPPED = Path(__file__).resolve().parents[2] / "traces"


def rows_of(catalog: Catalog) -> pd.DataFrame:
    """Every catalog row but its fingerprint (a digest of its own source's rows)."""
    columns = ", ".join(c for c in COLUMNS if c != "fingerprint")
    return catalog.frame(f"SELECT {columns} FROM answers ORDER BY conversation_id, exchange")


def plain(values: pd.Series) -> list[str]:
    """Values as text, whichever engine gave them (DuckDB hands lists over as arrays and
    dates as timestamps)."""
    out = []
    for v in values:
        if hasattr(v, "strftime"):
            out.append(v.strftime("%Y-%m-%d"))
        elif hasattr(v, "__len__") and not isinstance(v, str):
            out.append(str(list(v)))
        else:
            out.append(str(v))
    return out


def assert_same_catalog(a: Catalog, b: Catalog) -> None:
    left, right = rows_of(a), rows_of(b)
    assert len(left) == len(right) > 0
    for col in left.columns:
        assert plain(left[col]) == plain(right[col]), col
    assert sorted(a.warnings) == sorted(b.warnings)
    assert a.dropped == b.dropped


@pytest.mark.parametrize("every", [10_000, 3], ids=["written at once", "written in parts"])
def test_a_store_replays_exactly_like_the_files_it_was_loaded_from(store, monkeypatch, every):
    """Its catalog too, whether its rows are written at once or a few conversations at a
    time while the rest is replayed (listing/clickhouse.py, WRITE_EVERY)."""
    from trajectory_review.listing import clickhouse

    monkeypatch.setattr(clickhouse, "WRITE_EVERY", every)
    stats = load([str(SHIPPED)], store)
    # the shipped bad lines, named, once (trace-latest.jsonl repeats trace-4.jsonl)
    assert stats.spans > 2000 and stats.bad_lines == 2
    from_files = TraceReader.open([str(SHIPPED)], cache=False)
    from_store = TraceReader.open([store])
    assert from_store.stats.conversations == from_files.stats.conversations
    key = lambda r: (r.trace_id, r.span_id)  # noqa: E731
    for cid in from_files.index.conversation_ids():
        assert sorted(from_store.index.chat_rows(cid), key=key) == sorted(
            from_files.index.chat_rows(cid), key=key
        ), cid
    assert_same_catalog(build_catalog(from_store), build_catalog(from_files))


def test_a_bulk_read_streams_spans_a_worker_resolves_to_the_rows_an_open_reads(store):
    import pickle

    from trajectory_review.index.rows import SpanRows, resolved

    load([str(SHIPPED)], store)
    index = TraceReader.open([store]).index
    streamed = list(index.iter_chat_rows())
    assert [cid for cid, _ in streamed] == index.conversation_ids()
    # read a few conversations a query, each conversation still whole and in its place
    in_twos = [(cid, sorted(s.spans, key=str)) for cid, s in index.iter_chat_rows(batch=2)]
    assert in_twos == [(cid, sorted(s.spans, key=str)) for cid, s in streamed]
    for cid, spans in streamed:
        assert isinstance(spans, SpanRows)  # resolved where it is replayed
        shipped = pickle.loads(pickle.dumps(spans))  # as a worker process gets them
        # (in no order: ClickHouse returns a query's rows in none)
        key = lambda r: (r.trace_id, r.span_id)  # noqa: E731
        got = sorted(resolved(cid, shipped), key=key)
        assert got and got == sorted(index.chat_rows(cid), key=key), cid


def test_load_keeps_nanoseconds_and_writes_what_the_collector_writes(store, tmp_path):
    rec = Recorder()
    rec.turn("c1", [Q("q"), A("a")], tag="B")
    path = rec.write(tmp_path / "t.jsonl")
    load([str(path)], store)
    loc = parse_location(store)
    got = (
        client(loc)
        .query(
            f"SELECT toUnixTimestamp64Nano(Timestamp), Duration, SpanKind, StatusCode, "
            "SpanAttributes['gen_ai.usage.input_tokens'], "
            "SpanAttributes['gen_ai.conversation.id'] "
            f"FROM {loc.qualified()} WHERE SpanName LIKE 'chat%'"
        )
        .result_rows
    )
    chat = next(s for s in rec.spans if s["name"].startswith("chat"))
    start, end = int(chat["startTimeUnixNano"]), int(chat["endTimeUnixNano"])
    # DateTime64(9) to the nanosecond; ints as decimal text; the enums by their names
    assert got == [(start, end - start, "Client", "Unset", "100", "")]
    tables = {r[0] for r in client(loc).query(f"SHOW TABLES FROM `{loc.database}`").result_rows}
    assert {"otel_traces", "otel_traces_trace_id_ts", "otel_traces_trace_id_ts_mv"} <= tables


def test_the_catalog_catches_up_replaying_only_what_changed(store, tmp_path):
    rec = Recorder()
    first = rec.turn("kept", [Q("q1"), A("a1")], tag="C")
    rec.turn("grows", [Q("q1"), A("a1")], tag="C")
    early = rec.write(tmp_path / "early.jsonl")
    load([str(early)], store)
    catalog = build_catalog(TraceReader.open([store]))
    assert catalog.replayed == 2 and catalog.conversation_count() == 2
    # a restart, or another process: the shared catalog is up to date, nothing replayed
    again = build_catalog(TraceReader.open([store]))
    assert again.replayed == 0 and again.total_answers == catalog.total_answers
    later = Recorder()
    later._t = rec._t
    later._ids = itertools.count(1000)
    later.turn("grows", [Q("q1"), A("a1"), Q("q2"), A("a2")], tag="B")
    later.turn("new", [Q("hello"), A("hi")], tag="A")
    load([str(later.write(tmp_path / "later.jsonl"))], store)
    caught_up = build_catalog(TraceReader.open([store]))
    assert caught_up.replayed == 2  # "grows" and "new"; "kept" is untouched
    assert caught_up.conversation_count() == 3
    both = TraceReader.open([str(early), str(tmp_path / "later.jsonl")], cache=False)
    assert_same_catalog(caught_up, build_catalog(both))
    assert first  # the first conversation's trace is still the one stored
    assert build_catalog(TraceReader.open([store])).replayed == 0


def _grow(store: str, tmp_path: Path) -> None:
    """A conversation answered once, then again after the catalog caught up."""
    rec = Recorder()
    rec.turn("grows", [Q("q1"), A("a1")], tag="C")
    load([str(rec.write(tmp_path / "early.jsonl"))], store)
    build_catalog(TraceReader.open([store]))
    later = Recorder()
    later._t, later._ids = rec._t, itertools.count(1000)
    later.turn("grows", [Q("q1"), A("a1"), Q("q2"), A("a2")], tag="B")
    load([str(later.write(tmp_path / "later.jsonl"))], store)


def stored_rows(store: str) -> int:
    loc = parse_location(store)
    table = loc.qualified("otel_traces_review_answers")
    return client(loc).query(f"SELECT count() FROM {table}").result_rows[0][0]


def test_replaced_rows_are_never_listed_and_are_deleted_after_the_grace(
    store, tmp_path, monkeypatch
):
    from trajectory_review.listing import clickhouse as shared

    _grow(store, tmp_path)
    caught_up = build_catalog(TraceReader.open([store]))
    assert caught_up.total_answers == 2  # the new replay's two answers, not three
    caught_up.settle()
    assert stored_rows(store) == 3  # the replaced answer is kept for older snapshots
    monkeypatch.setattr(shared, "GRACE_NS", 0)
    again = build_catalog(TraceReader.open([store]))
    assert again.replayed == 0 and again.total_answers == 2
    again.settle()  # the deleting runs after the catalog is current
    assert stored_rows(store) == 2  # replaced long enough ago: deleted


def test_rows_of_a_catch_up_that_never_committed_are_not_listed(store, tmp_path):
    _grow(store, tmp_path)
    loc = parse_location(store)
    table = loc.qualified("otel_traces_review_answers")
    # a process that died after writing its rows, before its mark: a copy with a newer
    # generation and another tag, never committed
    client(loc).command(
        f"INSERT INTO {table} SELECT * REPLACE (Generation + 1 AS Generation, 'A' AS tag) "
        f"FROM {table}"
    )
    catalog = build_catalog(TraceReader.open([store]))
    assert catalog.total_answers == 2
    assert catalog.facet_counts(Filters(view="answers"))["tags"]["A"] == 0


def test_other_rules_keep_a_catalog_of_their_own(store, tmp_path):
    from trajectory_review.rules.registry import load_rules

    rec = Recorder()
    rec.turn("c1", [Q("q"), A("a")], tag="C")
    load([str(rec.write(tmp_path / "t.jsonl"))], store)
    build_catalog(TraceReader.open([store]))
    strict = tmp_path / "strict.toml"
    strict.write_text("[says-something]\nmin_words = 80\n")
    other = build_catalog(TraceReader.open([store]), load_rules(str(strict)))
    assert other.replayed == 1
    assert build_catalog(TraceReader.open([store])).replayed == 0


def test_a_window_keeps_only_conversations_active_in_it(store, tmp_path):
    rec = Recorder()
    rec.turn("old", [Q("q"), A("a")], tag="C")
    rec._t += 10 * 86_400 * 10**9
    rec.turn("recent", [Q("q"), A("a")], tag="C")
    load([str(rec.write(tmp_path / "t.jsonl"))], store)
    cutoff = (rec._t - 5 * 86_400 * 10**9) / 1e9
    day = pd.Timestamp(cutoff, unit="s", tz="UTC").strftime("%Y-%m-%d")
    windowed = TraceReader.open([store], since=day)
    assert windowed.index.conversation_ids() == ["recent"]
    assert "active since" in windowed.index.origin
    assert build_catalog(windowed).conversation_count() == 1
    assert TraceReader.open([store]).stats.conversations == 2
    # a window nothing is active in: an empty list, not an error
    empty = TraceReader.open([store], since="2100-01-01")
    assert empty.stats.conversations == 0 and build_catalog(empty).total_answers == 0


def test_a_malformed_attribute_drops_its_conversation_and_the_rest_is_served(store, tmp_path):
    rec = Recorder()
    rec.turn("good", [Q("q"), A("a")], tag="C")
    bad_trace = rec.turn("bad", [Q("q"), A("a")], tag="C")
    for span in rec.spans:
        if span["traceId"] == bad_trace and span["name"].startswith("chat"):
            for kv in span["attributes"]:
                if kv["key"] == "gen_ai.input.messages":
                    kv["value"] = {"stringValue": '[{"role": "user", "parts": [{not json'}
    path = rec.write(tmp_path / "t.jsonl")
    load([str(path)], store)
    in_store = build_catalog(TraceReader.open([store]))
    from_file = build_catalog(TraceReader.open([str(path)], cache=False))
    assert_same_catalog(in_store, from_file)
    assert in_store.page(Filters()).total >= 1
    assert any(cid == "bad" for cid, _ in in_store.warnings)


def test_a_missing_table_or_columns_is_one_line_naming_where(store):
    with pytest.raises(SourceError) as err:
        TraceReader.open([store + "&table=nothing_here"])
    assert "no table" in str(err.value) and "nothing_here" in str(err.value)
    loc = parse_location(store)
    cli = client(loc)
    cli.command(f"CREATE DATABASE IF NOT EXISTS `{loc.database}`")
    cli.command(
        f"CREATE TABLE `{loc.database}`.spans_only (Timestamp DateTime64(9), TraceId String) "
        "ENGINE = MergeTree ORDER BY Timestamp"
    )
    with pytest.raises(SourceError) as err:
        TraceReader.open([store + "&table=spans_only"])
    assert "lacks column(s) SpanId" in str(err.value) and "\n" not in str(err.value)


def test_a_clickhouse_source_is_read_alone(store):
    with pytest.raises(SourceError, match="alone"):
        TraceReader.open([store, str(SHIPPED)])


@pytest.mark.parametrize(("text", "days"), [("30d", 30), ("12h", 0.5), ("2w", 14)])
def test_windows_are_counted_back_from_now(text, days):
    now = 1_800_000_000.0
    assert since_ns(text, now) == int((now - days * 86_400) * 1e9)


def test_the_command_line_loads_lints_and_exports_a_chdb_store(tmp_path):
    # its own directory: the CLI runs in other processes, and chdb opens a directory in one
    target = f"chdb://{tmp_path / 'cli-store'}"
    cli = [sys.executable, "-m", "trajectory_review.tools.cli"]
    done = subprocess.run([*cli, "load", str(SHIPPED), target], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "loaded" in done.stderr and "spans" in done.stderr
    lint = subprocess.run([*cli, "lint", "--json", "--fail-on", "never", target],
                          capture_output=True, text=True)  # fmt: skip
    files = subprocess.run([*cli, "lint", "--json", "--fail-on", "never", str(SHIPPED)],
                           capture_output=True, text=True)  # fmt: skip
    assert lint.returncode == 0, lint.stderr
    in_store, in_files = json.loads(lint.stdout), json.loads(files.stdout)
    assert in_store["per_rule"] == in_files["per_rule"]
    assert in_store["answers"] == in_files["answers"]
    csv = subprocess.run(
        [*cli, "export", "--format", "csv", target], capture_output=True, text=True
    )
    assert csv.returncode == 0 and csv.stdout.count("\n") > 300
    shutil.rmtree(tmp_path / "cli-store", ignore_errors=True)


def test_the_index_names_where_the_spans_are(store, tmp_path):
    rec = Recorder()
    rec.turn("c1", [Q("q"), A("a")], tag="C")
    load([str(rec.write(tmp_path / "t.jsonl"))], store)
    index = ClickHouseIndex.open(store)
    assert index.origin.endswith("otel_traces in ClickHouse")
    assert index.stats.conversations == 1 and index.stats.spans == 3


@pytest.fixture(scope="module")
def both_catalogs(chdb_dir):
    """The shipped traces as files and as a chdb store: two engines, one catalog."""
    store = f"chdb://{chdb_dir}?database=parity"
    load([str(SHIPPED)], store)
    return build_catalog(TraceReader.open([store])), build_catalog(
        TraceReader.open([str(SHIPPED)], cache=False)
    )


def _filters() -> list[Filters]:
    from datetime import date

    some = frozenset({"20261128t170445.459-o0zprwjv3l", "nope"})
    return [
        Filters(),
        Filters(view="answers"),
        Filters(view="flagged"),
        Filters(view="flagged", flag_kind="metric"),
        Filters(tags=("C", "none")),
        Filters(view="answers", rejected=True),
        Filters(malformed=True, problem=True),
        Filters(view="answers", q="plot_id"),
        Filters(q="50%"),
        Filters(q="it's \\ odd"),
        Filters(rule="grounded-identifiers"),
        Filters(view="answers", tool="run_sql"),
        Filters(model="claude-sonnet-4"),
        Filters(date_from=date(2026, 11, 1), date_to=date(2026, 11, 20)),
        Filters(review="flagged", review_ids={"flagged": some}),
        Filters(review="unreviewed", review_ids={"reviewed": some}),
        # searched: every count in the scan of the search (facets.counts_in_scans)
        Filters(q="plot", tags=("C",), review="flagged", review_ids={"flagged": some}),
        Filters(view="flagged", q="plot_id", tool="run_sql"),
        Filters(view="answers", page=3),
        Filters(view="flagged", done=frozenset({("20261128t170445.459-o0zprwjv3l", 1)})),
    ]


@pytest.mark.parametrize("f", _filters(), ids=lambda f: repr(f)[:60])
def test_every_list_query_answers_the_same_in_clickhouse_and_duckdb(both_catalogs, f):
    from trajectory_review.listing.queue import next_undone, progress

    ch, duck = both_catalogs
    a, b = ch.page(f, 20), duck.page(f, 20)
    assert (a.total, a.page, a.pages) == (b.total, b.page, b.pages)
    for col in b.rows.columns:
        assert plain(a.rows[col]) == plain(b.rows[col]), col
    assert ch.facet_counts(f) == duck.facet_counts(f)
    for grain in ("week", "day"):
        trend = ch.trust_over_time(f, grain), duck.trust_over_time(f, grain)
        assert plain(trend[0]["n"]) == plain(trend[1]["n"])
    assert len(ch.matching_answers(f)) == len(duck.matching_answers(f))
    if len(b.rows):
        cid = b.rows.iloc[-1]["conversation_id"]
        assert ch.page_of(f, cid, 20) == duck.page_of(f, cid, 20)
        assert ch.neighbours(f, cid) == duck.neighbours(f, cid)
    assert progress(ch, f) == progress(duck, f)
    assert next_undone(ch, f, None) == next_undone(duck, f, None)


def test_the_constants_of_a_catalog_agree_across_engines(both_catalogs):
    ch, duck = both_catalogs
    assert ch.select_values() == duck.select_values()
    assert ch.date_bounds() == duck.date_bounds()
    assert ch.conversation_count() == duck.conversation_count()
    assert ch.total_answers == duck.total_answers
    assert len(ch.rule_rows()) == len(duck.rule_rows())
    ids = list(duck.page(Filters(), 5).rows["conversation_id"])
    assert len(ch.answers_of(ids)) == len(duck.answers_of(ids))


HOSTILE = ["a'b", "%s", "{x:String}", "?", "\\", "'; DROP TABLE otel_traces; --", "%(x)s", "_%"]


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_values_are_values_in_clickhouse_queries(both_catalogs, text):
    ch, duck = both_catalogs
    f = Filters(q=text, review="flagged", review_ids={"flagged": frozenset({text})})
    assert ch.page(f).total == duck.page(f).total == 0
    assert ch.page(Filters(q=text)).total == duck.page(Filters(q=text)).total
    assert ch.page_of(Filters(), text) == 1 and ch.neighbours(Filters(), text)[0] is None
    assert len(ch.answers_of([text])) == 0
    assert ch.facet_counts(Filters(model=text, tool=text, rule=text)) == duck.facet_counts(
        Filters(model=text, tool=text, rule=text)
    )


def with_one_answer(store: str, tmp_path: Path):
    """The store loaded with one answer and its catalog built: where it is."""
    rec = Recorder()
    rec.turn("c1", [Q("Where is Plot_7?"), A("In Elk Hollow.")], tag="C")
    load([str(rec.write(tmp_path / "t.jsonl"))], store)
    build_catalog(TraceReader.open([store]))
    return parse_location(store)


def test_a_catalog_made_before_the_search_column_gets_it_and_is_searched(store, tmp_path):
    loc = with_one_answer(store, tmp_path)
    table = loc.qualified("otel_traces_review_answers")
    client(loc).command(f"ALTER TABLE {table} DROP COLUMN search_text")
    catalog = build_catalog(TraceReader.open([store]))
    assert catalog.page(Filters(q="plot_7")).total == 1  # any case, `_` as itself
    assert catalog.page(Filters(q="plot%7")).total == 0
    parts = (
        client(loc)
        .query(
            "SELECT count() FROM system.parts_columns WHERE active AND column = 'search_text' "
            "AND table = 'otel_traces_review_answers' AND database = {db:String}",
            parameters={"db": loc.database},
        )
        .result_rows[0][0]
    )
    assert parts > 0  # written out, not computed on every read


def test_a_catalog_searched_through_zstd_is_written_again_in_lz4(store, tmp_path):
    """A catalog made when the search column was ZSTD-compressed: its column is recoded
    (every searched list state read through ZSTD otherwise) and its rows written again,
    once: a start on a catalog already in LZ4 rewrites nothing."""
    loc = with_one_answer(store, tmp_path)
    table = loc.qualified("otel_traces_review_answers")
    ch = client(loc)
    where = {"db": loc.database}

    def rewrites() -> int:
        return ch.query(
            "SELECT count() FROM system.mutations WHERE is_done AND table = "
            "'otel_traces_review_answers' AND database = {db:String} "
            "AND command LIKE '%MATERIALIZE COLUMN search_text%'",
            parameters=where,
        ).result_rows[0][0]

    ch.command(
        f"ALTER TABLE {table} MODIFY COLUMN search_text String MATERIALIZED "
        f"{SEARCH_EXPRESSION} CODEC(ZSTD(3))"
    )
    before = rewrites()
    catalog = build_catalog(TraceReader.open([store]))
    assert catalog.page(Filters(q="plot_7")).total == 1
    codec = ch.query(
        "SELECT compression_codec FROM system.columns WHERE name = 'search_text' "
        "AND table = 'otel_traces_review_answers' AND database = {db:String}",
        parameters=where,
    ).result_rows
    assert codec == [("CODEC(LZ4)",)]
    assert rewrites() == before + 1
    build_catalog(TraceReader.open([store]))
    assert rewrites() == before + 1


def test_a_bulk_read_naming_conversations_by_crc32_reads_only_those_asked_for(
    store, tmp_path, monkeypatch
):
    """A bulk read names many conversations by their CRC32s (index/clickhouse.py,
    `_conversations_named`): two ids that share one are still read apart."""
    from trajectory_review.index import clickhouse
    from trajectory_review.index.rows import resolved

    a, b = "c-c50963c80102", "c-d3f504638284"
    assert zlib.crc32(a.encode()) == zlib.crc32(b.encode())
    rec = Recorder()
    rec.turn(a, [Q("Where is Plot_7?"), A("In Elk Hollow.")], tag="C")
    rec.turn(b, [Q("Where is Plot_9?"), A("In Granite Pass.")], tag="A")
    rec.turn("c-other", [Q("How many plots?"), A("Twelve.")], tag="A")
    load([str(rec.write(tmp_path / "t.jsonl"))], store)
    index = TraceReader.open([store]).index
    by_id = index.traces_of([a, b, "c-other"])
    monkeypatch.setattr(clickhouse, "FEW_IDS", 0)  # named by CRC32, however few
    monkeypatch.setattr(clickhouse, "FEW_TRACES", 0)  # the spans read by conversation
    assert index.traces_of([a, "c-other"]) == {a: by_id[a], "c-other": by_id["c-other"]}
    streamed = dict(index.iter_chat_rows(only=[a, "c-other"]))
    assert sorted(streamed) == sorted([a, "c-other"])
    questions = " ".join(r.input_messages or "" for r in resolved(a, streamed[a]))
    assert "Plot_7" in questions and "Plot_9" not in questions


def test_the_catalog_table_has_the_column_lists_types(store, tmp_path):
    """Both engines' catalog schemas come from answer_rows.COLUMN_KINDS."""
    loc = with_one_answer(store, tmp_path)
    described = (
        client(loc)
        .query(
            "SELECT name, type, compression_codec FROM system.columns "
            "WHERE table = 'otel_traces_review_answers' AND database = {db:String} "
            "ORDER BY position",
            parameters={"db": loc.database},
        )
        .result_rows
    )
    typed = [(c, CLICKHOUSE.column_types[kind]) for c, kind in COLUMN_KINDS.items()]
    search = ("search_text", "String CODEC(LZ4)")  # computed by ClickHouse (SEARCH_DDL)
    wanted = [("Rules", "String"), ("Generation", "UInt64"), *typed, search]
    assert [(n, f"{t} {codec}".strip()) for n, t, codec in described] == wanted


def extreme_rows(trace: str) -> list[list]:
    """Rows with the extreme values of every column type of the Collector's table."""
    from datetime import datetime

    big = "x" * 1_000_000
    stamps = [datetime(1900, 1, 1), datetime(2262, 4, 11, 23, 47, 16), datetime(2026, 1, 1)]
    rows = []
    for i, (ts, duration) in enumerate(
        itertools.product(stamps, [0, 2**63 - 1, 2**64 - 1]), start=1
    ):
        attrs = {"gen_ai.conversation.id": f"extreme-{i}", "gen_ai.operation.name": "chat",
                 "": "", big[:1000]: big, "\x00\ud7ff": "\U0010ffff"}  # fmt: skip
        rows.append(
            [ts, trace, f"{i:016x}", "", "", big, "Weird", "", attrs, "", "", attrs,
             duration, "Error", big, [], [], [], [], [], [], []]
        )  # fmt: skip
    return rows


def test_nothing_of_ours_runs_inside_the_collectors_inserts(store, tmp_path):
    from trajectory_review.sources.clickhouse_spans import INSERT_COLUMNS

    rec = Recorder()
    rec.turn("before", [Q("q"), A("an answer before the odd spans")], tag="A")
    load([str(rec.write(tmp_path / "t.jsonl"))], store)
    loc = parse_location(store)
    cli = client(loc)
    # a version before this one kept its lookup with a view on the Collector's table
    cli.command(
        f"CREATE MATERIALIZED VIEW `{loc.database}`.otel_traces_conversations_mv "
        f"ENGINE = Memory AS SELECT addNanoseconds(Timestamp, Duration) AS e "
        f"FROM `{loc.database}`.otel_traces"
    )
    build_catalog(TraceReader.open([store]))  # the app has run: it dropped the old view
    views = cli.query(
        "SELECT name FROM system.tables WHERE database = {d:String} AND engine LIKE '%View%'",
        parameters={"d": loc.database},
    ).result_rows
    assert [v for (v,) in views if not v.endswith("_trace_id_ts_mv")] == []  # the Collector's
    # the Collector inserts spans with the extreme values of every column: accepted
    cli.insert(f"{loc.database}.otel_traces", extreme_rows("e" * 32), column_names=INSERT_COLUMNS)
    # and the next run reads the rest, naming the spans whose end no clock can show
    reader = TraceReader.open([store])
    ids = set(reader.index.conversation_ids())
    assert "before" in ids and "extreme-1" in ids
    said = [w.message for w in reader.source_warnings()]
    assert any("Duration ends past 2262-04-11" in m for m in said)
    assert build_catalog(reader).page(Filters()).total >= 1
    again = TraceReader.open([store])  # named on every run, not only the first
    assert any("Duration ends past" in w.message for w in again.source_warnings())


def test_a_table_with_the_collectors_names_and_other_types_is_refused_on_every_run(store):
    loc = parse_location(store)
    cli = client(loc)
    cli.command(f"CREATE DATABASE IF NOT EXISTS `{loc.database}`")
    from trajectory_review.sources.clickhouse import COLUMN_KINDS

    # every name right; Timestamp and Duration as text, as a hand-made table might have
    cols = ", ".join(
        f"{c} {'Map(String, String)' if k.startswith('Map') else 'String'}"
        for c, k in COLUMN_KINDS.items()
    )
    cli.command(
        f"CREATE TABLE `{loc.database}`.lookalike ({cols}) ENGINE = MergeTree ORDER BY TraceId"
    )
    for _ in range(2):
        with pytest.raises(SourceError) as err:
            TraceReader.open([store + "&table=lookalike"])
        text = str(err.value)
        assert "Duration is String (want an integer)" in text and "Timestamp is String" in text
        assert "\n" not in text and "lookalike" in text
