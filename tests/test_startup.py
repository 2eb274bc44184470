"""The index `serve` starts building before it imports the app (model/startup.py)."""

from __future__ import annotations

import os
import sys

import duckdb
import pytest

from tests.fixtures import A, Q, Recorder
from trajectory_review.index.store import TraceIndex
from trajectory_review.model import startup as early
from trajectory_review.sources import SourceError


def _traces(tmp_path):
    r = Recorder()
    r.turn("c1", [Q("q1"), A("a1")], tag="A")
    r.write(tmp_path / "trace-1.jsonl")
    return r


def _counting_builds(
    monkeypatch, threads: list | None = None, lookups: list | None = None
) -> list[list[str]]:
    """The real build, with each call's sources (and DuckDB threads and lookups asked
    for) noted."""
    calls: list[list[str]] = []
    real = TraceIndex.build.__func__

    def build(cls, sources=None, **kw):
        calls.append([str(s) for s in sources or []])
        if threads is not None:
            threads.append(kw.get("threads"))
        if lookups is not None:
            lookups.append(kw.get("lookups", True))
        return real(cls, sources, **kw)

    monkeypatch.setattr(TraceIndex, "build", classmethod(build))
    return calls


def test_the_app_takes_the_index_built_while_it_was_imported(tmp_path, monkeypatch):
    _traces(tmp_path)
    lookups: list[bool] = []
    calls = _counting_builds(monkeypatch, lookups=lookups)
    monkeypatch.setenv("TRAJECTORY_TRACES", str(tmp_path))
    assert early.start()
    index = early.open_reader().index  # what the loader does once the app is imported
    assert index.conversation_ids() == ["c1"]
    assert calls == [[str(tmp_path)]]  # built once, early
    assert lookups == [True]  # the app opens conversations: built with what they read
    again = early.open_reader().index  # taken once: the watch's rebuild reads the files afresh
    assert again is not index and len(calls) == 2


def _duckdb_threads(index: TraceIndex) -> int:
    return int(index.cursor().execute("SELECT current_setting('threads')").fetchone()[0])


def test_a_small_early_build_leaves_a_core_to_the_imports_and_queries_use_every_core(
    tmp_path, monkeypatch
):
    # The imports beside it take a core; for traces it indexes in about as long, the build
    # leaves that core to them (every core for both made each wait on the other).
    _traces(tmp_path)
    asked: list = []
    _counting_builds(monkeypatch, asked)
    cores = len(os.sched_getaffinity(0))
    assert early.start([tmp_path])
    index = early.open_reader([tmp_path]).index
    assert asked == [cores - 1 if cores > 1 else None]
    # once built, its queries (conversations opened, rows for the replay) use every core
    assert _duckdb_threads(index) == int(
        duckdb.connect().execute("SELECT current_setting('threads')").fetchone()[0]
    )


def test_big_traces_are_indexed_early_on_every_core(tmp_path, monkeypatch):
    # a build much longer than the imports would leave a core idle once they are done
    _traces(tmp_path)
    asked: list = []
    _counting_builds(monkeypatch, asked)
    monkeypatch.setattr(early, "SHARE_CORES_BELOW", 10)  # bytes: these traces are bigger
    assert early.start([tmp_path])
    early.open_reader([tmp_path])
    assert asked == [None]


def test_an_early_index_of_files_that_changed_meanwhile_is_dropped(tmp_path, monkeypatch):
    r = _traces(tmp_path)
    calls = _counting_builds(monkeypatch)
    assert early.start([tmp_path])
    # a line appended while the early build ran (or after): it may hold half of it, and
    # the watch, which compares the files with how they were when the loader started,
    # would never read the rest
    r.turn("c2", [Q("q2"), A("a2")], tag="B")
    r.write(tmp_path / "trace-1.jsonl")
    index = early.open_reader([tmp_path]).index
    assert sorted(index.conversation_ids()) == ["c1", "c2"]
    assert len(calls) == 2  # the early build, dropped, and one of the files as they are


def test_an_early_build_that_failed_fails_where_the_index_is_opened(tmp_path):
    (tmp_path / "trace-1.jsonl.gz").write_bytes(b"not gzip at all")
    before = sys.getswitchinterval()
    assert early.start([tmp_path])
    with pytest.raises(SourceError, match="no readable trace file among 1"):
        early.open_reader([tmp_path])  # the error a build started now raises, not a hang
    assert sys.getswitchinterval() == before  # put back however the build ended


def test_serves_early_build_gets_the_gil_back_quickly_until_it_is_built(tmp_path, monkeypatch):
    # DuckDB's client takes the GIL after each task of a query; beside the app's imports
    # the build waited out Python's 5 ms switch interval each time, and ended after them
    _traces(tmp_path)
    before = sys.getswitchinterval()
    seen: list[float] = []
    real = TraceIndex.build.__func__

    def build(cls, sources=None, **kw):
        seen.append(sys.getswitchinterval())
        return real(cls, sources, **kw)

    monkeypatch.setattr(TraceIndex, "build", classmethod(build))
    assert early.start([tmp_path])  # serve's
    early.open_reader([tmp_path])
    assert seen == [pytest.approx(early.BUILD_SWITCH_INTERVAL)]
    assert sys.getswitchinterval() == before  # put back before the index is taken
    # lint's imports beside its build are a tenth as long: the interval is left alone
    assert early.start([tmp_path], share_cores=False)
    early.open_reader([tmp_path])
    assert seen[-1] == before


def test_remote_sources_are_not_indexed_before_the_loader_reads_them(tmp_path):
    # a Connect content is synced first, a ClickHouse table read in place: by the loader
    assert not early.start(["connect:0d5e3c47-3b7c-4b1a-9c33-0f0b5a8f1a11"])
    assert not early.start(["clickhouse://default@127.0.0.1:9/db.otel_traces"])
    assert not early.start([tmp_path / "nowhere"])  # nothing to read: the loader says so


@pytest.mark.parametrize(("threshold", "while_building"), [(10, True), (None, False)])
def test_the_fork_server_starts_while_a_big_early_build_is_still_running(
    tmp_path, monkeypatch, threshold, while_building
):
    # Big traces: the fork server's imports take the core the app's imports left, before
    # the index is in (not beside the first slice). Small ones: once the index says there
    # are conversations enough for workers.
    from trajectory_review.app import data

    _traces(tmp_path)
    monkeypatch.setenv("TRAJECTORY_TRACES", str(tmp_path))
    monkeypatch.setenv("TRAJECTORY_CACHE", "off")
    if threshold is not None:
        monkeypatch.setattr(data, "EARLY_FORK_SERVER_BYTES", threshold)
    asked: list[bool] = []

    def start_server(work, conversations=None):
        asked.append(early.building_bytes([str(tmp_path)]) is not None)

    monkeypatch.setattr(data, "start_server", start_server)
    assert early.start()
    assert early.building_bytes([str(tmp_path)]) == (tmp_path / "trace-1.jsonl").stat().st_size
    loaded = data.load_app_data()
    assert loaded.catalog is not None and loaded.catalog.conversation_count() == 1
    assert asked[0] is while_building
    assert early.building_bytes([str(tmp_path)]) is None  # taken


def test_lint_builds_its_index_early_without_the_lookups_an_open_reads(
    tmp_path, monkeypatch, capsys
):
    import json

    from trajectory_review.tools.cli import main

    _traces(tmp_path)
    lookups: list[bool] = []
    calls = _counting_builds(monkeypatch, lookups=lookups)
    monkeypatch.setenv("TRAJECTORY_CACHE", "off")
    assert main(["lint", str(tmp_path), "--json", "--fail-on", "never"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [a["conversation_id"] for a in report["answers"]] == ["c1"]
    assert calls == [[str(tmp_path)]] and lookups == [False]
