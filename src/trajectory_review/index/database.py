"""The database an index is built in: made fresh (in memory or in a file, with the memory
its build may use), handed back with the limits it keeps once built, its scratch folder,
and how far this process's builds are (the progress page's bar), or interrupted when the
server stops."""

from __future__ import annotations

import shutil
import weakref
from pathlib import Path

import duckdb

from trajectory_review.support.scratch import own_folder

# Connections an index is being built on (fresh_database), for interrupt_builds.
_building: weakref.WeakSet[duckdb.DuckDBPyConnection] = weakref.WeakSet()
# Those in the first statement, the scan of the trace lines: most of a build, and the
# one DuckDB can say how far it is (docs/performance-log.md, "the scan's share of a
# build"); then those past it, until the build is done.
_scanning: weakref.WeakSet[duckdb.DuckDBPyConnection] = weakref.WeakSet()
_scanned: weakref.WeakSet[duckdb.DuckDBPyConnection] = weakref.WeakSet()
# The furthest each scan was seen to be: DuckDB's figure drops to 0 once the statement
# has returned, and a page drawn between that and the scan being marked done showed the
# bar going back from 98% to 0 (a test caught it on a loaded machine).
_furthest: weakref.WeakKeyDictionary[duckdb.DuckDBPyConnection, float] = weakref.WeakKeyDictionary()
SCAN_SHARE = 0.75


def scan_started(con: duckdb.DuckDBPyConnection) -> None:
    """The scan of the trace lines began on `con` (build_progress follows it)."""
    _scanning.add(con)


def scan_ended(con: duckdb.DuckDBPyConnection, done: bool) -> None:
    """The scan returned (done) or failed: its share of the build is in, or nothing is."""
    if done:
        _scanned.add(con)
    _scanning.discard(con)


def build_ended(con: duckdb.DuckDBPyConnection) -> None:
    """The index on `con` is built: no longer part of this process's progress."""
    _scanned.discard(con)


def build_progress() -> float | None:
    """How far this process's index build is (0-1), for the progress page: the scan's
    own progress over its share of the build, then that share until the build is done;
    None when no build is under way (the page then shows no bar)."""
    done = [SCAN_SHARE for _ in list(_scanned)]
    for con in list(_scanning):
        try:
            pct = con.query_progress()  # -1 until DuckDB has a figure
        except duckdb.Error:
            continue  # closed meanwhile
        share = SCAN_SHARE * max(0.0, min(pct, 100.0)) / 100
        _furthest[con] = share = max(share, _furthest.get(con, 0.0))
        done.append(share)
    return max(done) if done else None


def interrupt_builds() -> None:
    """Interrupt every index build of this process, each in its statement (it raises
    DuckDB's InterruptException there). For a server stopping: Python exiting while a
    thread is inside DuckDB aborts the process."""
    for con in list(_building):
        try:
            con.interrupt()
        except duckdb.Error:
            pass  # closed meanwhile: nothing to interrupt


# DuckDB's memory while an index is built in a file: up to BUILD_MEMORY where that is at
# most a quarter of the memory DuckDB sees (a container's limit included), never less than
# the limit it keeps for queries after: more built no faster and held the process past
# the memory goal (docs/performance-log.md, "Twice as fast on the hot path"). An index in
# memory (small traces) keeps its limit throughout: no faster with more, it would pay for
# setting it back (built_database).
BUILD_MEMORY = 1280 * 1024**2
BUILD_SHARE = "25%"
# Databases given more memory for their build (fresh_database), until built_database.
_more_memory: weakref.WeakSet[duckdb.DuckDBPyConnection] = weakref.WeakSet()
_UNITS = {"bytes": 1, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3, "TiB": 1024**4, "PiB": 1024**5}


def fresh_database(
    path: Path | None, memory_limit: str, spill: Path | None = None, threads: int | None = None
) -> duckdb.DuckDBPyConnection:
    """A new database at `path`, or in memory (path None) spilling past the memory limit
    to `spill`: an index nobody keeps is never written out whole (writing a file costs;
    docs/performance-log.md), yet a million chat spans of history still fit.
    threads: DuckDB's threads while it is built (default: one per core). memory_limit:
    DuckDB's once it is built (built_database); the build may use more (BUILD_MEMORY)."""
    if path is None:
        con = duckdb.connect()
        if spill is not None:
            con.execute("SET temp_directory = ?", [str(spill)])
    else:
        for stale in (path, path.with_name(path.name + ".wal")):
            if stale.exists():
                stale.unlink()
        con = duckdb.connect(str(path))
    _building.add(con)
    con.execute(f"SET memory_limit='{memory_limit}'")
    if path is not None:
        keep = _memory_limit(con)
        con.execute(f"SET memory_limit='{BUILD_SHARE}'")
        share = _memory_limit(con)
        build = min(BUILD_MEMORY, share) if share is not None else None
        if keep is not None and build is not None and build > keep:
            con.execute(f"SET memory_limit='{build}B'")
            _more_memory.add(con)
        else:  # a small machine (or a figure not understood): the limit it keeps
            con.execute(f"SET memory_limit='{memory_limit}'")
    # progress is tracked (build_progress) but never drawn on a user's terminal
    con.execute("SET enable_progress_bar=true")
    con.execute("SET enable_progress_bar_print=false")
    con.execute("SET progress_bar_time=100")  # ms before DuckDB starts counting (2,000)
    con.execute("SET preserve_insertion_order=false")
    if threads is not None:
        con.execute(f"SET threads={int(threads)}")
    return con


def built_database(con: duckdb.DuckDBPyConnection, memory_limit: str, threads: bool) -> None:
    """A database fresh_database gave, once its index is built: queried with the memory
    it keeps (and every core, when the build was given fewer threads)."""
    if con in _more_memory:  # only then: setting the limit takes DuckDB a while
        con.execute(f"SET memory_limit='{memory_limit}'")
        _more_memory.discard(con)
    if threads:
        con.execute("RESET threads")


def _memory_limit(con: duckdb.DuckDBPyConnection) -> int | None:
    """DuckDB's memory limit in bytes, from the text it shows it as ("953.6 MiB"); None
    for a text of another shape (a later DuckDB's), which then changes nothing."""
    text = str(con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0])
    number, _, unit = text.partition(" ")
    try:
        return int(float(number) * _UNITS[unit])
    except (ValueError, KeyError):
        return None


def scratch_dir() -> Path:
    """A fresh directory for an uncached index, after removing those of dead processes
    (support/scratch.py)."""
    return own_folder()


# Set for a process that ends as soon as its command is done (leave_to_the_os): the
# databases it discards are kept here, open, for the process's end to free.
_left: list[duckdb.DuckDBPyConnection] | None = None


def leave_to_the_os() -> None:
    """From now on a discarded index keeps its database open until the process ends, for
    a process about to end (tools.cli.run): closing an index in memory frees it piece by
    piece, and freeing the connection closes it just the same, where the process's end
    frees it at once (docs/performance-log.md, "Lint and export end at once"). Its
    scratch directory is still removed."""
    global _left
    if _left is None:
        _left = []


def discard(con: duckdb.DuckDBPyConnection, scratch: Path | None) -> None:
    if _left is not None:
        _left.append(con)
    else:
        con.close()
    if scratch is not None:
        shutil.rmtree(scratch, ignore_errors=True)
