"""Per-conversation work (replay, the reply rules) in worker processes.

Replaying is pure Python and independent per conversation: on a machine with cores to
spare it runs in worker processes, fed batches streamed from the index in order. The
functions a worker runs live in modules that import neither DuckDB nor pandas, so a
worker is ready in a fraction of the parent's start-up (it was ~0.8 s of imports per
worker, a third of the replay of a 5,000-conversation corpus on two cores).
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from typing import Any, TypeVar

from trajectory_review import settings
from trajectory_review.index.rows import ChatRow, PackedRow

BATCH = 250
# Below this many conversations, starting the workers costs more than it saves: at 1,000
# a lint replayed in 0.56-0.67 s here and in 0.58-0.70 s in two workers (which start in
# ~0.2 s now that they import neither DuckDB nor pandas). It was 5,000 when a worker took
# 0.8 s to start, which kept the 4,500 conversations read in after a first list
# (Catalog.fill) in one process: 2.6-2.7 s instead of 1.8.
PARALLEL_MIN = 1_500

# Worker processes are started with spawn, which imports the parent's main script in each
# worker: safe only when that script guards itself with `if __name__ == "__main__"`. The
# CLI does and says so (cli.main sets this); under another host (Posit Connect's runner,
# a notebook) replay stays in-process unless TRAJECTORY_WORKERS asks for workers.
PARALLEL_SAFE = False

# (conversation id, chat rows, fingerprint); rows packed or not (index.rows.chat_row)
Batch = list[tuple[str, list[ChatRow] | list[PackedRow], str]]
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
    stream: Iterable[tuple[str, list]], prints: dict[str, str], size: int | None = None
) -> Iterator[Batch]:
    size = size or BATCH
    batch: Batch = []
    for cid, chat_rows in stream:
        batch.append((cid, chat_rows, prints.get(cid, "")))
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def run_batches(
    fn: Callable[..., R],
    work: Iterable[Batch],
    args: tuple[Any, ...],
    total: int,
    workers: int | None = None,
) -> Iterator[R]:
    """fn(batch, *args) for every batch, results in the order of the batches: in worker
    processes when there are cores to spare and enough conversations, else here."""
    n = workers if workers is not None else default_workers()
    if n > 1 and total >= PARALLEL_MIN:
        return _in_processes(fn, work, args, n)
    return (fn(b, *args) for b in work)


def _in_processes(
    fn: Callable[..., R], work: Iterable[Batch], args: tuple[Any, ...], n: int
) -> Iterator[R]:
    """At most 2n batches in flight."""
    # spawn, not fork: the parent holds DuckDB's threads, which a fork would copy mid-flight
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(
        max_workers=n, mp_context=ctx, initializer=_exit_with, initargs=(os.getpid(),)
    ) as pool:
        pending: deque = deque()
        for batch in work:
            pending.append(pool.submit(fn, batch, *args))
            if len(pending) >= 2 * n:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()


def _exit_with(parent: int) -> None:
    """In each worker: exit once the parent is gone. A worker waits for work on a queue
    it holds both ends of, so a parent killed outright (SIGKILL after a grace period, as
    a hosting platform stops an app) left its workers waiting forever."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(0)

    threading.Thread(target=watch, name="trajectory-review-parent-watch", daemon=True).start()
