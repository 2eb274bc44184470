"""The ClickHouse steps of the bench (issue #13), on chdb stores loaded with `load`:

- clickhouse_open_p95_ms: open one conversation (its traces' spans fetched, replayed),
  cold, at ~1M spans (goal <= 150)
- clickhouse_list_p95_ms: a list page with its facet counts under a new filter state
  (nothing remembered), at ~1M spans (goal <= 150)
- clickhouse_rss_1m_vs_10k: peak memory of an app process that starts, lists, filters and
  opens conversations, on ~1M spans / on ~10k (goal <= 1.3: memory follows what is shown)
- clickhouse_ready_seconds_1m / _10k: reader and catalog (up to date) to a first page and
  its counts (goal <= 2 s at both sizes; an absolute figure, asked for as one)
- clickhouse_first_build_seconds_1m: the first start on a new ~1M-span store, which
  replays, judges and writes every answer to the catalog (goal <= 30 s)
- clickhouse_catchup_vs_replay: catching the catalog up after ~10k new spans / replaying
  and judging those conversations from files with the same code (goal <= 3)

Every measurement runs in a child process: a chdb directory is open in one process at a
time, and peak memory is per process. Results come back in a file, never on stdout.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from trajectory_review_bench.generate import START_NS

SPANS_PER_CONVERSATION = 11.7  # the generator's average, measured
# the later spans' first: a year past the generator's start (the stores hold a few months)
LATER_NS = START_NS + 365 * 86_400 * 10**9

_CHILD = r"""
import json, random, resource, statistics, sys, time
from dataclasses import replace
mode, store, out = sys.argv[1], sys.argv[2], sys.argv[3]
from trajectory_review.support import workers
workers.PARALLEL_SAFE = True
from trajectory_review.listing.catalog import build_catalog
from trajectory_review.listing.filters import Filters
from trajectory_review.model.reader import TraceReader
result = {}
if mode == "replay":  # the baseline: the same conversations replayed from their files
    from trajectory_review.listing.summary import build_answers
    reader = TraceReader.open([store], cache=False)
    t = time.perf_counter()
    built = build_answers(reader)
    result = {"seconds": time.perf_counter() - t, "answers": len(built.frame)}
else:
    t = time.perf_counter()
    reader = TraceReader.open([store])
    catalog = build_catalog(reader)
    page = catalog.page(Filters())
    catalog.facet_counts(Filters())
    result["ready_seconds"] = time.perf_counter() - t
    result["replayed"] = catalog.replayed
    result["conversations"] = reader.stats.conversations
    result["spans"] = reader.stats.spans
    if mode == "catchup":
        result["catchup_seconds"] = getattr(catalog, "catch_up_seconds", None)
    rnd = random.Random(5)
    ids = reader.index.conversation_ids()
    opens, lists = [], []
    states = [Filters(view=v, tags=tuple(t), q=q, page=p) for v in ("conversations", "answers")
              for t in ((), ("C",), ("A", "B")) for q in ("", "canopy", "plot_id")
              for p in (1, 3)]
    rnd.shuffle(states)
    samples = 40 if mode == "ops" else 10
    for i in range(samples):
        reader._cache.clear()  # a cold open, not the reader's cache
        t = time.perf_counter()
        conv = reader.conversation(rnd.choice(ids))
        opens.append(time.perf_counter() - t)
        f = states[i % len(states)]
        catalog._counts.clear()  # a filter state no one asked for yet
        t = time.perf_counter()
        catalog.page(f)
        catalog.facet_counts(f)
        lists.append(time.perf_counter() - t)
    q = lambda xs: statistics.quantiles(xs, n=20)[-1] * 1e3
    result["open_p95_ms"] = q(opens)
    result["list_p95_ms"] = q(lists)
    result["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
with open(out, "w") as fh:
    json.dump(result, fh)
"""


def _child(mode: str, store: str) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        result = Path(tmp) / "result.json"
        subprocess.run(
            [sys.executable, "-c", _CHILD, mode, store, str(result)],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        return json.loads(result.read_text())


def _cli(*args: str) -> None:
    subprocess.run(
        [sys.executable, "-m", "trajectory_review.tools.cli", *args],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _store(workdir: Path, spans: int, seed: int, corpus) -> str:
    """A chdb store holding a generated corpus of about `spans` spans (built once)."""
    conversations = max(1, round(spans / SPANS_PER_CONVERSATION))
    folder = workdir / f"chdb-{spans}-{seed}"
    store = f"chdb://{folder}"
    if not (folder / ".complete").exists():
        files = corpus(workdir, conversations, seed)
        print(f"loading {files} into {store} …", file=sys.stderr)
        _cli("load", str(files), store)
        (folder / ".complete").write_text("ok")
    return store


# Takes the later spans out of a store again, with all the catch-ups on them left: the
# lookup's and the catalog's marks at or past their first span too; the tables merged,
# so that no part is left with rows masked as deleted. A store that kept its
# mark at the later spans' newest saw the next run's reload of them as an hour of late
# spans: every run after the first timed a catch-up of the last hour's few conversations
# instead of all the later ones (docs/performance-log.md, "Second session of #50").
_REMOVE = r"""
import sys
from trajectory_review.index.clickhouse import ClickHouseIndex
from trajectory_review.model.reader import TraceReader
from trajectory_review.tools.load import trace_ids
store, files, first_ns = sys.argv[1], sys.argv[2], int(sys.argv[3])
added = TraceReader.open([files], cache=False).index.conversation_ids()
traces = sorted(trace_ids([files]))
index = ClickHouseIndex.open(store)
p = {"t": traces, "c": added}
for table, column, key in (("", "TraceId", "t"), ("_conversations", "TraceId", "t"),
                           ("_review_answers", "conversation_id", "c"),
                           ("_review_replays", "ConversationId", "c")):
    where = f"{column} IN {{{key}:Array(String)}}"
    index.client.command(f"DELETE FROM {index.table(table)} WHERE {where}", parameters=p)
for table in ("_conversations_marks", "_review_marks"):
    index.client.command(f"DELETE FROM {index.table(table)} WHERE Mark >= {first_ns}")
# the deletes applied and the parts merged: deleted rows are only masked until a merge,
# and every list query of the next run scanned the catalog's masked parts
for table in ("", "_conversations", "_review_answers", "_review_replays",
              "_conversations_marks", "_review_marks"):
    index.client.command(f"OPTIMIZE TABLE {index.table(table)} FINAL")
"""


# Empties a store's answer catalog: its next start builds one as a new store's first does.
_FORGET = r"""
import sys
from trajectory_review.index.clickhouse import ClickHouseIndex
index = ClickHouseIndex.open(sys.argv[1])
for table in ("_review_answers", "_review_replays"):
    index.client.command(f"DROP TABLE IF EXISTS {index.table(table)}")
"""


def _first_build(store: str) -> float:
    """Seconds of a first start on the store as it would be new to the app: on a copy with
    its catalog emptied (the store itself keeps the catalog an earlier run built, and a
    start on it only checks that catalog)."""
    import shutil

    folder = Path(store.removeprefix("chdb://"))
    with tempfile.TemporaryDirectory(dir=folder.parent) as tmp:
        copy = Path(tmp) / folder.name
        shutil.copytree(folder, copy, symlinks=True)  # its own links, within it
        subprocess.run([sys.executable, "-c", _FORGET, f"chdb://{copy}"], check=True)
        return _child("start", f"chdb://{copy}")["ready_seconds"]


def _later(workdir: Path, conversations: int) -> Path:
    """New spans as a Collector appends them: dated after everything stored (a year past
    the generator's start; the stores hold a few months)."""
    from trajectory_review_bench.generate import generate

    out = workdir / f"corpus-{conversations}-203-later"
    if not (out / ".complete").exists():
        generate(out, conversations=conversations, seed=203, start_ns=LATER_NS)
        (out / ".complete").write_text("ok")
    return out


def _take_out(store: str, extra: Path) -> None:
    subprocess.run([sys.executable, "-c", _REMOVE, store, str(extra), str(LATER_NS)], check=True)


def bench_clickhouse(workdir: Path, corpus, small_spans: int, big_spans: int) -> dict:
    small = _store(workdir, small_spans, 201, corpus)
    big = _store(workdir, big_spans, 202, corpus)
    extra = _later(workdir, max(1, round(10_000 / SPANS_PER_CONVERSATION)))
    detail: dict = {}
    # a first start on a store new to the app builds its whole catalog; the figures after
    # it are taken on the store with its catalog built
    for name, store in (("10k", small), ("1m", big)):
        detail[f"clickhouse_first_build_seconds_{name}"] = _first_build(store)
        _child("start", store)  # the store's own catalog, up to date
        run = _child("ops" if name == "1m" else "start", store)
        detail[f"clickhouse_ready_seconds_{name}"] = run["ready_seconds"]
        detail[f"clickhouse_rss_mb_{name}"] = run["rss_mb"]
        detail[f"clickhouse_spans_{name}"] = run["spans"]
        detail[f"clickhouse_conversations_{name}"] = run["conversations"]
        if name == "1m":
            detail["clickhouse_open_p95_ms"] = run["open_p95_ms"]
            detail["clickhouse_list_p95_ms"] = run["list_p95_ms"]
    rss = detail["clickhouse_rss_mb_1m"], detail["clickhouse_rss_mb_10k"]
    detail["clickhouse_rss_1m_vs_10k"] = rss[0] / rss[1]
    # ~10k new spans into the big store, caught up, then taken out again (the store stays
    # what it was for the next run); the baseline replays the same conversations from files
    _take_out(big, extra)  # a store an earlier version of this step left them in
    _cli("load", str(extra), big)
    try:
        caught = _child("catchup", big)
    finally:
        _take_out(big, extra)
    baseline = min(_child("replay", str(extra))["seconds"] for _ in range(2))
    detail["clickhouse_catchup_seconds"] = caught["catchup_seconds"]
    detail["clickhouse_catchup_replayed"] = caught["replayed"]
    detail["clickhouse_replay_seconds"] = baseline
    detail["clickhouse_catchup_vs_replay"] = caught["catchup_seconds"] / baseline
    return detail


def describe(d: dict) -> str:
    """The ClickHouse step's detail in one line, for the bench's table."""
    return (
        f"ClickHouse (chdb): {d['clickhouse_spans_1m']:,} spans / "
        f"{d['clickhouse_conversations_1m']:,} conversations: first catalog build "
        f"{d['clickhouse_first_build_seconds_1m']:.0f} s, then ready in "
        f"{d['clickhouse_ready_seconds_1m']:.2f} s ({d['clickhouse_rss_mb_1m']:.0f} MB); "
        f"{d['clickhouse_spans_10k']:,} spans: ready in "
        f"{d['clickhouse_ready_seconds_10k']:.2f} s ({d['clickhouse_rss_mb_10k']:.0f} MB); "
        f"catch-up of {d['clickhouse_catchup_replayed']} new conversations "
        f"{d['clickhouse_catchup_seconds']:.1f} s vs {d['clickhouse_replay_seconds']:.1f} s "
        "to replay them from files."
    )
