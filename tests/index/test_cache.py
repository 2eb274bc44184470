"""The on-disk cache: a restart reuses the index and catalog; any change rebuilds."""

from __future__ import annotations

import os

from tests.fixtures import A, Q, Recorder
from trajectory_review.listing.catalog import build_catalog
from trajectory_review.listing.filters import Filters
from trajectory_review.model.reader import TraceReader
from trajectory_review.rules.registry import load_rules


def sample(tmp_path, tag="A"):
    r = Recorder()
    r.turn("c1", [Q("q1"), A("Great question! The answer is sixty one percent.")], tag=tag)
    return r.write(tmp_path / "t.jsonl", extra_lines=["{bad"])


def test_restart_reuses_index_and_catalog(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("TRAJECTORY_CACHE", str(cache))
    path = sample(tmp_path)
    first = TraceReader.open([path])
    cat1 = build_catalog(first)
    assert first.index.cache_key is not None
    entries = sorted(p.suffix for p in cache.iterdir() if p.is_file())
    assert entries == [".duckdb", ".json", ".json", ".parquet"]
    second = TraceReader.open([path])  # a restart: read-only, from the cache
    assert second.stats == first.stats and second.stats.bad_lines == 1
    assert second.conversation("c1").exchanges[0].tag == "A"
    cat2 = build_catalog(second)
    assert cat2.page(Filters()).total == cat1.page(Filters()).total == 1
    assert list(cat2.rule_rows()["failed_rules"][0]) == ["no-banned-phrases"]
    assert not any(p.name.endswith(".tmp") for p in cache.iterdir())


def test_a_changed_trace_file_rebuilds(tmp_path, monkeypatch):
    monkeypatch.setenv("TRAJECTORY_CACHE", str(tmp_path / "cache"))
    path = sample(tmp_path, tag="A")
    assert TraceReader.open([path]).conversation("c1").exchanges[0].tag == "A"
    sample(tmp_path, tag="C")
    os.utime(path, ns=(1, 1))  # even with an older mtime, the size or mtime differs
    assert TraceReader.open([path]).conversation("c1").exchanges[0].tag == "C"


def test_other_rules_rebuild_the_catalog(tmp_path, monkeypatch):
    monkeypatch.setenv("TRAJECTORY_CACHE", str(tmp_path / "cache"))
    reader = TraceReader.open([sample(tmp_path)])
    assert build_catalog(reader).page(Filters(view="flagged")).total == 1
    lax = tmp_path / "rules.toml"
    lax.write_text("[no-banned-phrases]\npattern = []\n")
    assert build_catalog(reader, load_rules(lax)).page(Filters(view="flagged")).total == 0


def test_cache_off_builds_a_private_index(tmp_path, monkeypatch):
    monkeypatch.setenv("TRAJECTORY_CACHE", "off")
    reader = TraceReader.open([sample(tmp_path)])
    assert reader.index.cache_key is None


def test_traces_that_keep_growing_never_pile_up_cache_entries(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("TRAJECTORY_CACHE", str(cache))
    r = Recorder()
    path = tmp_path / "t.jsonl"
    for i in range(5):  # a live trace file: every rebuild sees new lines
        r.turn(f"c{i}", [Q(f"q{i}"), A(f"a{i}")], tag="A")
        r.write(path)
        os.utime(path, ns=(i + 10**18, i + 10**18))
        reader = TraceReader.open([path])
        assert build_catalog(reader).conversation_count() == i + 1
    names = sorted(p.name.split(".", 1)[0] for p in cache.iterdir())
    assert len({n for n in names if n.startswith("index-")}) == 2
    assert len({n for n in names if n.startswith("answers-")}) == 2
    # the newest entries are the ones kept: a restart reads them without rebuilding
    again = TraceReader.open([path])
    assert again.index.cache_key == reader.index.cache_key


def test_two_processes_starting_at_once_build_the_cache_once(tmp_path):
    import subprocess
    import sys

    cache = tmp_path / "cache"
    path = sample(tmp_path)
    script = (
        "import sys; from trajectory_review.model.reader import TraceReader; "
        "from trajectory_review.listing.catalog import build_catalog; "
        "r = TraceReader.open([sys.argv[1]]); c = build_catalog(r); "
        "print(r.index.cache_key, c.replayed, c.conversation_count())"
    )
    env = {**os.environ, "TRAJECTORY_CACHE": str(cache)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(path)], env=env, stdout=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=120)[0].split() for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert outs[0][0] == outs[1][0]  # the same index entry
    replayed = sorted(int(o[1]) for o in outs)
    assert replayed == [0, int(outs[0][2])]  # one replayed them all, the other reused it
    assert len(list(cache.glob("index-*.duckdb"))) == 1
    assert len(list(cache.glob("answers-*.parquet"))) == 1


def test_a_catalog_read_from_the_cache_has_the_same_date_bounds(tmp_path, monkeypatch):
    from datetime import date

    monkeypatch.setenv("TRAJECTORY_CACHE", str(tmp_path / "cache"))
    path = sample(tmp_path)
    fresh = build_catalog(TraceReader.open([path])).date_bounds()
    cached = build_catalog(TraceReader.open([path])).date_bounds()
    assert fresh == cached and all(type(d) is date for d in cached)
