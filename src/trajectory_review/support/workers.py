"""Per-conversation work (replay, the reply rules) in worker processes.

Replaying is pure Python and independent per conversation: on a machine with cores to
spare it runs in worker processes, fed batches streamed from the index in order. The
functions a worker runs live in modules that import neither DuckDB nor pandas, so a
worker is ready in a fraction of the parent's start-up (docs/performance-log.md, "worker
imports").

Workers are forked from multiprocessing's fork server: one clean process, started without
DuckDB's threads, that imports the module of the function they run once; each worker
forked from it starts with it imported; spawned, every worker imported them again
(docs/performance-log.md, "forked workers").
"""

from __future__ import annotations

import gc
import marshal
import os
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from trajectory_review import settings

# multiprocessing and the process pool are imported where workers start: the command
# line imports this module before `serve` starts its index build (cli.main), and their
# imports delayed the build's start (docs/performance-log.md, "multiprocessing imports").
if TYPE_CHECKING:
    from multiprocessing.connection import Connection
    from multiprocessing.context import BaseContext

BATCH = 250
# Below this many conversations, starting the workers costs more than it saves; measured
# with workers forked from a fork server that has the replay imported
# (docs/performance-log.md, "PARALLEL_MIN"): measure again if workers start differently.
PARALLEL_MIN = 400

# A worker started with spawn or forkserver imports the parent's main script (unless it is
# a package's __main__): safe only when that script guards itself with
# `if __name__ == "__main__"`. The CLI does and says so (cli.main sets this); under another
# host (Posit Connect's runner, a notebook) replay stays in-process unless
# TRAJECTORY_WORKERS asks for workers.
PARALLEL_SAFE = False
# The module the main script imports, which every worker then imports again (the CLI sets
# it: the `trajectory-review` script imports the command line): the server imports it once
# for them (docs/performance-log.md, "MAIN_MODULE").
MAIN_MODULE: str | None = None

# (conversation id, its chat rows, fingerprint, (slice, slices)): the pool hands the rows to
# the work function untouched (as the index streamed them: index.rows.StreamedRows), so it
# need not know their type. A conversation too big for one worker is handed out in slices
# (batches: `weigh`), each batch one slice of it: (i, k) is the i-th of k, (0, 1) whole.
Slice = tuple[int, int]
Batch = list[tuple[str, Any, str, Slice]]
WHOLE: Slice = (0, 1)
# A conversation whose rows weigh more than this (weigh: bytes of messages) is cut into
# slices, one per worker: one recorded conversation of 20,000 answers was one worker's
# whole first batch while the other cores idled, and the list waited on it.
SPLIT_WEIGHT = 4 * 1024 * 1024
R = TypeVar("R")


def default_workers() -> int:
    """TRAJECTORY_WORKERS, else (under the CLI) the CPUs this process may use, at most 8."""
    n = settings.workers()
    if n is not None:
        return n
    if not PARALLEL_SAFE:
        return 1
    return min(8, settings.usable_cores())


def batches(
    stream: Iterable[tuple[str, Any]],
    prints: dict[str, str],
    size: int | None = None,
    weigh: Callable[[Any], int] | None = None,
    slices: int = 1,
    defer: list[str] | None = None,
) -> Iterator[Batch]:
    """The conversations in batches of `size`. With `weigh`, a conversation whose rows
    weigh more than SPLIT_WEIGHT is, with `slices` > 1, handed out as `slices` batches of
    its own, each one slice of its answers (the work function builds the conversation and
    does its slice), so every worker takes a part of it; with `defer`, left out and named
    there, for a later replay in workers (the first slice of a list, replayed in the
    serving process, must not wait on one)."""
    size = size or BATCH
    # weighed only where its weight can change where it goes: replayed in one process and
    # deferring none, every conversation's rows were summed for nothing
    if slices <= 1 and defer is None:
        weigh = None
    batch: Batch = []
    for cid, chat_rows in stream:
        fingerprint = prints.get(cid, "")
        heavy = weigh is not None and weigh(chat_rows) > SPLIT_WEIGHT
        if heavy and defer is not None:
            defer.append(cid)
            continue
        if heavy and slices > 1:
            if batch:
                yield batch
                batch = []
            for i in range(slices):
                yield [(cid, chat_rows, fingerprint, (i, slices))]
            continue
        batch.append((cid, chat_rows, fingerprint, WHOLE))
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def slice_of(count: int, part: Slice) -> slice:
    """Which of `count` items (a conversation's answers) a slice takes, in order: the
    i-th of k takes the i-th k-th of them."""
    i, k = part
    return slice(count * i // k, count * (i + 1) // k)


def start_server(work: Callable[..., object], conversations: int | None = None) -> None:
    """Start the fork server now, so workers asked for later start at once: a caller with
    something else to do first (lint, building its index) overlaps the server's imports
    with it. `work`: the function the workers will run (the server imports its module).
    Nothing when replay will run in this process, for want of cores or of conversations
    (their number, when it is known)."""
    enough = conversations is None or conversations >= PARALLEL_MIN
    if enough and default_workers() > 1:
        _context(work)


def _context(work: Callable[..., object]) -> BaseContext:
    """The fork server's context, the server running; spawn's where there is none.

    Never plain fork: the parent holds DuckDB's threads, which a fork would copy
    mid-flight; the fork server forks from a process that has none. The caller names what
    its workers run, so this stage names no module of a later one; a server already
    running keeps what it imported (a worker imports anything more itself)."""
    import multiprocessing

    if "forkserver" in multiprocessing.get_all_start_methods():
        from multiprocessing import forkserver

        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload([work.__module__, *([MAIN_MODULE] if MAIN_MODULE else [])])
        try:
            forkserver.ensure_running()  # a check when it runs; started once
            return ctx
        except OSError:
            pass  # no Unix socket to be had (a locked-down host): spawn needs none
    return multiprocessing.get_context("spawn")


def parallel(total: int, workers: int | None = None) -> int:
    """How many processes run_batches works in for `total` conversations (1: this one)."""
    n = workers if workers is not None else default_workers()
    return n if n > 1 and total >= PARALLEL_MIN else 1


def run_batches(
    fn: Callable[..., R],
    work: Iterable[Batch],
    args: tuple[Any, ...],
    total: int,
    workers: int | None = None,
) -> Iterator[R]:
    """fn(batch, *args) for every batch, results in the order of the batches: in worker
    processes when there are cores to spare and enough conversations, else here."""
    n = parallel(total, workers)
    if n > 1:
        return _in_processes(fn, work, args, n)
    return (run_batch(fn, b, *args) for b in work)


def packed(batch: Batch) -> Batch | bytes:
    """A batch as it crosses to a worker process: marshal's bytes when it holds only what
    marshal writes (the DuckDB index's rows: text, numbers, None, tuples and lists), else
    the batch itself, pickled as before (a ClickHouse store's SpanRows). Both ends are
    the same interpreter, which is all marshal's format asks; it writes and reads such
    rows faster than pickle, on both sides of the pipe (docs/performance-log.md,
    "Eleventh session of #50")."""
    try:
        return marshal.dumps(batch)
    except ValueError:  # a value marshal does not write
        return batch


def run_batch(fn: Callable[..., R], batch: Batch | bytes, *args: Any) -> R:
    """fn(batch, *args) with fewer collections (fewer_collections), in a worker or here:
    every kind of batch (the catalog's, lint's, what-if's) makes and drops the same
    records. Only the catalog's had it, and lint's workers collected every 700
    allocations. A batch `packed` for a worker is read back first."""
    if isinstance(batch, bytes):
        batch = marshal.loads(batch)
    with fewer_collections():
        return fn(batch, *args)


def _in_processes(
    fn: Callable[..., R], work: Iterable[Batch], args: tuple[Any, ...], n: int
) -> Iterator[R]:
    """At most 2n batches in flight."""
    from concurrent.futures import ProcessPoolExecutor

    ctx = _context(fn)
    # Only this process holds the writing end: however it ends, the OS closes it, and
    # each worker reads the end of the pipe (_worker_start).
    alive_r, alive_w = ctx.Pipe(duplex=False)
    try:
        with ProcessPoolExecutor(
            max_workers=n, mp_context=ctx, initializer=_worker_start, initargs=(alive_r,)
        ) as pool:
            pending: deque[Any] = deque()
            for batch in work:
                pending.append(pool.submit(run_batch, fn, packed(batch), *args))
                if len(pending) >= 2 * n:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
    finally:
        alive_w.close()
        alive_r.close()


# How much lower than the process that asked for them workers run (os.nice). Workers keep
# every core busy for as long as they replay; at the same priority they took the CPU from
# the server answering the reviewers meanwhile. At 10 the page answers sooner and every
# answer is judged as soon; a lint, which waits for its workers, is as fast either way
# (docs/performance-log.md, "WORKER_NICE").
WORKER_NICE = 10


# Objects allocated between two collections of the youngest generation while
# conversations are replayed (Python's default is 700). A replay makes and drops
# thousands of short-lived records per conversation, and at 700 the collector walked
# them every few answers (docs/performance-log.md, "collections during a replay").
REPLAY_GC_THRESHOLD = 50_000
_gc_lock = threading.Lock()
_gc_depth = 0
_gc_saved: tuple[int, ...] = ()


@contextmanager
def fewer_collections() -> Iterator[None]:
    """While the block runs, the youngest generation collected every REPLAY_GC_THRESHOLD
    allocations, and what was alive before it left out of the collector's full walks;
    then as it was. Replays in several threads at once share one setting: the first to
    enter changes it, the last to leave puts it back.

    Left out (gc.freeze): a full collection walks every object the process holds (its
    modules, the app, the rows replayed so far), and one fell inside about every other
    replay (docs/performance-log.md, "Full collections during a replay"). The objects are
    put back (gc.unfreeze) when the block ends, so garbage among them is still collected
    afterwards."""
    global _gc_depth, _gc_saved
    with _gc_lock:
        if _gc_depth == 0:
            _gc_saved = gc.get_threshold()
            gc.freeze()
            gc.set_threshold(max(REPLAY_GC_THRESHOLD, _gc_saved[0]), *_gc_saved[1:])
        _gc_depth += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_depth -= 1
            if _gc_depth == 0:
                gc.set_threshold(*_gc_saved)
                gc.unfreeze()


def _worker_start(alive: Connection) -> None:
    """In each worker, first: exit once the parent is gone, and give way to it.

    A worker waits for work on a queue it holds both ends of, so a parent killed outright
    (SIGKILL after a grace period, as a hosting platform stops an app) left its workers
    waiting forever. Watching for the parent pid to change no longer tells: a forked
    worker's parent is the fork server, which outlives the process that asked for the
    worker. So each worker watches a pipe only that process holds."""

    def watch() -> None:
        try:
            while True:
                alive.recv_bytes()  # nothing is ever sent: returns at the end of the pipe
        except (EOFError, OSError):
            os._exit(0)

    threading.Thread(target=watch, name="trajectory-review-parent-watch", daemon=True).start()
    try:
        os.nice(WORKER_NICE)
    except (AttributeError, OSError):
        pass  # no priorities here (not Unix): the workers run as the parent does
