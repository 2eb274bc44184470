"""The reviews step: the PostgreSQL review store against the file store, in one run.

- reviews_pg_save_p50_vs_file / _p95_: one save (an append a reviewer waits for), the
  PostgreSQL store's over the file's (each fsyncs; the database answers over loopback)
- reviews_start_100k_seconds: a new process's first read of 100,000 events from
  PostgreSQL (goal <= 1.0 s: a start, or a redeploy, does not wait on the history)
- detail: the same read from the file, and each store's save latencies in ms
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SAVES = 400
HISTORY = 100_000

# a fresh process's first read, timed inside it (the interpreter's start left out)
_READ = r"""
import sys, time
t = time.perf_counter()
from trajectory_review.reviews.store import open_store
n = len(open_store(sys.argv[1]).state().events)
print(n, time.perf_counter() - t)
"""


def _event(i: int):
    from trajectory_review.reviews.log import ReviewEvent

    return ReviewEvent("note", f"c{i % 997}", f"r{i % 7}", 1 + i % 5, f"note number {i}",
                       identity="declared")  # fmt: skip


def _save_ms(location: str) -> list[float]:
    from trajectory_review.reviews.store import open_store

    store = open_store(location)
    store.state()
    out = []
    for i in range(SAVES):
        t = time.perf_counter()
        store.append(_event(i))
        out.append((time.perf_counter() - t) * 1000)
    return out


def _first_read(location: str) -> float:
    done = subprocess.run([sys.executable, "-c", _READ, location], capture_output=True,
                          text=True, check=True)  # fmt: skip
    n, seconds = done.stdout.split()
    assert int(n) >= HISTORY, n
    return float(seconds)


def _fill(pg_url: str, file: Path) -> None:
    """HISTORY events into both stores, written in bulk (what a team's months leave)."""
    import psycopg

    from trajectory_review.reviews.postgres import TABLE
    from trajectory_review.reviews.store import open_store

    lines = [(e.id, e.ts, e.to_json()) for e in map(_event, range(HISTORY))]
    file.write_text("".join(line + "\n" for _, _, line in lines), encoding="utf-8")
    open_store(pg_url).state()  # the table
    with psycopg.connect(pg_url, autocommit=True) as conn:
        with conn.cursor().copy(f"COPY {TABLE} (id, ts, event) FROM STDIN") as copy:
            for row in lines:
                copy.write_row(row)


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1]


def bench_reviews() -> dict[str, float]:
    from trajectory_review_bench.pg import PgServer

    server = PgServer()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            file_ms = _save_ms(str(root / "saves.jsonl"))
            pg_ms = _save_ms(server.database("bench_saves"))
            history_url, history_file = server.database("bench_history"), root / "h.jsonl"
            _fill(history_url, history_file)
            pg_read = min(_first_read(history_url) for _ in range(3))
            file_read = min(_first_read(str(history_file)) for _ in range(3))
    finally:
        server.close()
    return {
        "reviews_pg_save_p50_vs_file": statistics.median(pg_ms) / statistics.median(file_ms),
        "reviews_pg_save_p95_vs_file": p95(pg_ms) / p95(file_ms),
        "reviews_start_100k_seconds": pg_read,
        "reviews_start_100k_file_seconds": file_read,
        "reviews_start_100k_pg_vs_file": pg_read / file_read,
        "reviews_file_save_p50_ms": statistics.median(file_ms),
        "reviews_file_save_p95_ms": p95(file_ms),
        "reviews_pg_save_p50_ms": statistics.median(pg_ms),
        "reviews_pg_save_p95_ms": p95(pg_ms),
    }
