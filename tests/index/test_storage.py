"""The index's storage: in memory or in a file (and the same either way), its memory
limit while it is built and after, the lookups an open reads, its scratch files."""

from __future__ import annotations

import os

import duckdb

from tests.fixtures import A, Q, Recorder
from trajectory_review.index.store import TraceIndex


def _followed_up(tmp_path, conversations: int):
    """Trace files of conversations each asked a first question, then one more."""
    r = Recorder()
    for i in range(conversations):
        r.turn(f"c{i}", [Q(f"q{i}"), A(f"a{i}")], tag="A")
        r.turn(f"c{i}", [Q(f"q{i}"), A(f"a{i}"), Q("more"), A("yes")], tag="B")
    return r.write(tmp_path / "t.jsonl")


def test_large_traces_are_indexed_in_a_file_and_read_the_same(tmp_path, monkeypatch):
    from trajectory_review.index import store

    path = _followed_up(tmp_path, 12)
    small = TraceIndex.build([path], cache=False)
    monkeypatch.setattr(store, "IN_MEMORY_BYTES", 0)  # as if the traces were large
    large = TraceIndex.build([path], cache=False)
    assert small.path is None and large.path is not None and large.path.exists()
    assert large.path.parent == large.scratch
    assert small.stats == large.stats
    assert small.conversation_fingerprints() == large.conversation_fingerprints()
    for cid in small.conversation_ids():
        assert small.chat_rows(cid) == large.chat_rows(cid)
    assert [(c, sorted(rows, key=str)) for c, rows in small.iter_chat_rows()] == [
        (c, sorted(rows, key=str)) for c, rows in large.iter_chat_rows()
    ]
    # The table in memory is made by the scan itself, the one in a file declared first
    # (its payloads stored with zstd): the same columns, of the same types, either way.
    describe = "SELECT column_name, column_type FROM (DESCRIBE spans)"
    assert small.cursor().execute(describe).fetchall() == (
        large.cursor().execute(describe).fetchall()
    )
    stored = (
        large.cursor()
        .execute(
            "SELECT DISTINCT column_name, compression FROM pragma_storage_info('spans') "
            "WHERE segment_type = 'VARCHAR' "
            "AND column_name IN ('input_messages', 'output_messages')"
        )
        .fetchall()
    )
    assert {how for _, how in stored} == {"ZSTD"}, stored
    scratch = large.scratch
    large.close()
    assert not scratch.exists()


def test_an_index_built_without_lookups_makes_them_once_at_its_first_open(tmp_path):
    """lint and what-if stream every conversation and open none: their index is built
    without what an open reads through, which the index makes when first asked for one
    conversation, once, whichever of several threads asks first."""
    from concurrent.futures import ThreadPoolExecutor

    path = _followed_up(tmp_path, 8)
    full = TraceIndex.build([path], cache=False)
    bare = TraceIndex.build([path], cache=False, lookups=False)
    indexes = "SELECT count(*) FROM duckdb_indexes()"
    assert full.cursor().execute(indexes).fetchone()[0] == 2
    assert bare.cursor().execute(indexes).fetchone()[0] == 0
    assert bare.stats == full.stats
    assert list(bare.iter_chat_rows()) == list(full.iter_chat_rows())
    ids = full.conversation_ids()
    with ThreadPoolExecutor(4) as pool:
        opened = list(pool.map(bare.chat_rows, ids * 3))
    assert opened == [full.chat_rows(cid) for cid in ids * 3]
    assert all(opened) and bare.cursor().execute(indexes).fetchone()[0] == 2


def _limit_as_shown(value: str) -> str:
    con = duckdb.connect()
    con.execute(f"SET memory_limit='{value}'")
    return con.execute("SELECT current_setting('memory_limit')").fetchone()[0]


def test_an_index_in_a_file_is_built_with_more_memory_and_queried_within_its_limit(
    tmp_path, monkeypatch
):
    from trajectory_review.index import database, store

    r = Recorder()
    r.turn("c1", [Q("q1"), A("a1")], tag="A")
    path = r.write(tmp_path / "t.jsonl")
    during: list[str] = []
    real = store.ingest

    def noting(con, files, shown=None, in_file=True, lookups=True):
        during.append(con.execute("SELECT current_setting('memory_limit')").fetchone()[0])
        return real(con, files, shown, in_file, lookups)

    monkeypatch.setattr(store, "ingest", noting)
    quarter = duckdb.connect().execute("SET memory_limit='25%'")
    quarter = int(float(quarter.execute("SELECT current_setting('memory_limit')").fetchone()[0]
                        .split()[0]) * 1024**3)  # fmt: skip
    kept, build = _limit_as_shown("1GB"), _limit_as_shown(f"{min(database.BUILD_MEMORY, quarter)}B")

    small = TraceIndex.build([path], cache=False)  # in memory: its limit throughout
    monkeypatch.setattr(store, "IN_MEMORY_BYTES", 0)
    large = TraceIndex.build([path], cache=False)  # in a file: more while it is built
    monkeypatch.setattr(database, "BUILD_SHARE", "1%")  # a small machine: never less than kept
    modest = TraceIndex.build([path], cache=False)
    assert during == [kept, build, kept]
    for index in (small, large, modest):
        assert index.cursor().execute("SELECT current_setting('memory_limit')").fetchone() == (
            kept,
        )


def test_a_memory_figure_duckdb_shows_otherwise_leaves_the_limit_as_it_was(tmp_path, monkeypatch):
    from trajectory_review.index import database, store

    r = Recorder()
    r.turn("c1", [Q("q1"), A("a1")], tag="A")
    path = r.write(tmp_path / "t.jsonl")
    monkeypatch.setattr(store, "IN_MEMORY_BYTES", 0)
    monkeypatch.setattr(database, "_UNITS", {})  # as if a later DuckDB wrote "2.0 GB"
    index = TraceIndex.build([path], cache=False)
    assert index.cursor().execute("SELECT current_setting('memory_limit')").fetchone() == (
        _limit_as_shown("1GB"),
    )
    assert index.conversation_ids() == ["c1"]


def test_an_uncached_index_leaves_no_scratch_files_behind(tmp_path, monkeypatch):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    # leftovers of a process that was killed (no such pid) and of a live one (ours)
    dead = tmp_path / "tmp" / "trajectory-review-999999999-abc"
    live = tmp_path / "tmp" / f"trajectory-review-{os.getpid()}-xyz"
    dead.mkdir(), live.mkdir()
    r = Recorder()
    r.turn("c1", [Q("q1"), A("a1")], tag="A")
    index = TraceIndex.build([r.write(tmp_path / "t.jsonl")], cache=False)
    scratch = index.scratch
    assert index.path is None  # small traces: in memory, spilling to the scratch directory
    assert scratch.exists() and not dead.exists() and live.exists()
    index.close()
    assert not scratch.exists()
