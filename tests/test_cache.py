"""The on-disk cache: a restart reuses the index and catalog; any change rebuilds."""

from __future__ import annotations

import os

from tests.fixtures import A, Q, Recorder
from trajectory_review.catalog import Catalog, Filters
from trajectory_review.reader import TraceReader
from trajectory_review.rules import load_rules


def sample(tmp_path, tag="A"):  # noqa: ANN001, ANN201
    r = Recorder()
    r.turn("c1", [Q("q1"), A("Great question! The answer is sixty one percent.")], tag=tag)
    return r.write(tmp_path / "t.jsonl", extra_lines=["{bad"])


def test_restart_reuses_index_and_catalog(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("TRAJECTORY_CACHE", str(cache))
    path = sample(tmp_path)
    first = TraceReader.open([path])
    cat1 = Catalog.build(first)
    assert first.index.cache_key is not None
    entries = sorted(p.suffix for p in cache.iterdir())
    assert entries == [".duckdb", ".json", ".json", ".parquet"]
    second = TraceReader.open([path])  # a restart: read-only, from the cache
    assert second.stats == first.stats and second.stats.bad_lines == 1
    assert second.conversation("c1").exchanges[0].tag == "A"
    cat2 = Catalog.build(second)
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
    assert Catalog.build(reader).page(Filters(view="flagged")).total == 1
    lax = tmp_path / "rules.toml"
    lax.write_text("[no-banned-phrases]\npattern = []\n")
    assert Catalog.build(reader, load_rules(lax)).page(Filters(view="flagged")).total == 0


def test_cache_off_builds_a_private_index(tmp_path, monkeypatch):
    monkeypatch.setenv("TRAJECTORY_CACHE", "off")
    reader = TraceReader.open([sample(tmp_path)])
    assert reader.index.cache_key is None
