"""`serve`'s start-up (and `lint`'s): an index build started before the app (or the
rules) is imported, and the reader over it once it is done.

Importing the app (Shiny, pandas, the feature modules) takes about a second of one core,
and building the index keeps DuckDB's threads busy for about as long. One after the other,
a first start waited for both; started here, the index is built while Python imports, and
the loader takes the finished build instead of starting its own.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING

from trajectory_review import settings
from trajectory_review.index.database import interrupt_builds
from trajectory_review.index.store import TraceIndex
from trajectory_review.sources import SourceError, default_sources, open_source, trace_files
from trajectory_review.sources.files import FileSource, Snapshot, snapshot, trace_bytes

if TYPE_CHECKING:
    from trajectory_review.model.reader import TraceReader

# Traces up to about this many bytes are indexed with one core left to the imports: with
# a thread per core, DuckDB and the imports shared both cores and each took longer. Past
# it, the core left out idles once the imports are done (docs/performance-log.md,
# "SHARE_CORES_BELOW").
SHARE_CORES_BELOW = 96 * 1024 * 1024

# How soon the interpreter hands the GIL to a thread that asks for it while `serve`'s early
# build runs beside the app's imports (Python's default: 5 ms). DuckDB's client takes the
# GIL after each task of a query, to check for Ctrl-C, and each time the imports held it
# the build waited out the interval: it ended after the imports, and the list waited for
# it (docs/performance-log.md, "Ninth session of #50"). Put back when the build ends.
BUILD_SWITCH_INTERVAL = 0.0001

# source names -> (the trace files as the build began, the build): taken once
_pending: dict[tuple[str, ...], tuple[Snapshot, Future[TraceIndex]]] = {}
_threads: list[threading.Thread] = []
_lock = threading.Lock()


def start(
    sources: Sequence[str | os.PathLike[str]] | None = None,
    share_cores: bool = True,
    lookups: bool = True,
) -> bool:
    """Build the index of the sources (default: the app's) on a thread, for `take`.

    Only when every source is local files: a Connect source is synced first and a
    ClickHouse table is read in place, both by the loader, in their order.
    share_cores: leave a core to the imports when the traces are small (serve's second of
    them); lint's tenth of a second of imports is better taken from DuckDB's threads.
    lookups: TraceIndex.build's (lint streams every conversation and opens none)."""
    names = [str(s) for s in (list(sources) if sources else default_sources())]
    if not all(isinstance(open_source(n), FileSource) for n in names):
        return False
    before = _snapshot(names)
    if before is None:
        return False  # nothing to read: the loader says so, as it always has
    future: Future[TraceIndex] = Future()
    with _lock:
        if tuple(names) in _pending:
            return True
        _pending[tuple(names)] = (before, future)

    threads = _threads_beside_imports(before) if share_cores else None
    if share_cores:  # serve: the imports run beside the build (lint's are a tenth as long)
        _quick_switches(True)

    def build() -> None:
        try:
            try:
                index = TraceIndex.build(names, threads=threads, lookups=lookups)
            finally:
                if share_cores:  # put back before the result is there to be taken
                    _quick_switches(False)
        except BaseException as exc:
            future.set_exception(exc)
        else:
            future.set_result(index)

    thread = threading.Thread(target=build, name="trajectory-review-early-index", daemon=True)
    with _lock:
        _threads.append(thread)
    try:
        thread.start()
    except BaseException:  # no thread to be had: nothing will put the interval back
        if share_cores:
            _quick_switches(False)
        raise
    return True


_switching = 0  # early builds running with BUILD_SWITCH_INTERVAL
_switch_before = 0.0


def _quick_switches(on: bool) -> None:
    """BUILD_SWITCH_INTERVAL while any early build that asked for it runs: the first to
    start sets it, the last to end puts back what was set before."""
    global _switching, _switch_before
    with _lock:
        if on:
            if _switching == 0:
                _switch_before = sys.getswitchinterval()
                sys.setswitchinterval(min(BUILD_SWITCH_INTERVAL, _switch_before))
            _switching += 1
        else:
            _switching -= 1
            if _switching == 0:
                sys.setswitchinterval(_switch_before)


def running() -> list[threading.Thread]:
    """Early builds still running (a stopping app waits for them to be interrupted)."""
    with _lock:
        _threads[:] = [t for t in _threads if t.is_alive()]
        return list(_threads)


def stop(timeout: float = 10.0, also: Sequence[threading.Thread] = ()) -> None:
    """Interrupt every index build of this process (and wait, up to `timeout`, until the
    early builds and the threads `also` named are out): Python exiting while a thread is
    inside DuckDB aborts the process. A build never taken (a command that failed before
    it, Ctrl-C) must be stopped before the process exits."""
    threads = [*also, *running()]
    end = time.monotonic() + timeout
    while any(t.is_alive() for t in threads) and time.monotonic() < end:
        # again until they are out: a build still listing its files opens its connection
        # after a first interrupt, and would run its statement in full
        interrupt_builds()
        for t in threads:
            t.join(0.05)


def take(names: Sequence[str]) -> TraceIndex | None:
    """The build started for exactly these sources, once it is done (its error raised
    here, where a build started now would raise it); None when none was started, or
    when the trace files changed since it began. A build that read a file being appended
    to could hold half its new lines, and the loader's watch, which compares the files
    with how they were when it started, would never read the rest: such a build is
    dropped and the caller builds afresh. Taken once: a later open builds afresh."""
    with _lock:
        pending = _pending.pop(tuple(names), None)
    if pending is None:
        return None
    before, future = pending
    error = future.exception()  # waits for the build
    if _snapshot(list(names)) != before:
        if error is None:
            future.result().close()
        return None
    return future.result()


def building_bytes(names: Sequence[str]) -> int | None:
    """The bytes of trace files an early build of exactly these sources is reading (not
    yet taken); None when there is none."""
    with _lock:
        pending = _pending.get(tuple(names))
    return None if pending is None else sum(size for _, size, _ in pending[0])


def _threads_beside_imports(files: Snapshot) -> int | None:
    """DuckDB's threads for an early build: one core left to the imports, for traces
    small enough to be indexed while they run (SHARE_CORES_BELOW); else every core."""
    cores = settings.usable_cores()
    if cores < 2 or trace_bytes([Path(name) for name, _, _ in files]) > SHARE_CORES_BELOW:
        return None
    return cores - 1


def _snapshot(names: list[str]) -> Snapshot | None:
    """Names, sizes and modification times of the trace files: a stat each."""
    try:
        return snapshot(trace_files(names))
    except (SourceError, OSError):
        return None


def open_reader(
    sources: Sequence[str | os.PathLike[str]] | None = None, since: str | None = None
) -> TraceReader:
    """The reader of the sources: over the build started here when it read the same
    sources (taken once: a later rebuild reads the files afresh), else over an index
    opened now."""
    # the model imported only now: what `serve` imports before the build starts delays it
    from trajectory_review.model.reader import TraceReader

    names = [str(s) for s in (list(sources) if sources else default_sources())]
    taken = take(names)
    return TraceReader(taken) if taken is not None else TraceReader.open(names, since=since)
