"""Work that must never stall the server: run in fresh interpreters, stopped at a limit.

What a reviewer hands the server to run (a candidate rules profile over every recorded
answer) runs here, never in the server's own process: a what-if run on the event loop's
process once held the GIL through one slow match and no other reviewer's page answered.
Each worker is a new `python -m trajectory_review.support.isolated`: it imports only the
module of the function it runs (never the host's main script, as multiprocessing's
workers would, which is unsafe under Posit Connect's runner), runs at a lower priority,
and is killed outright when the wall-clock limit passes, whatever it is doing.

Frames on the workers' standard input and output: an 8-byte length, then a pickle. The
first frame is (function, arguments); then one batch in, one result out, until the
input ends. Each batch runs as a worker's of support/workers does (run_batch).
"""

from __future__ import annotations

import importlib
import os
import pickle
import queue
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any, TypeVar

from trajectory_review.support.errors import one_line
from trajectory_review.support.workers import packed, run_batch

R = TypeVar("R")
_LENGTH = struct.Struct("!Q")
# as support/workers.WORKER_NICE: the server answers reviewers first
NICE = 10


class TimeLimit(Exception):
    """The work ran past its limit; its workers are gone and no result stands."""


class WorkerFailed(Exception):
    """A worker raised or died; the message is one line."""


def _write(fh: IO[bytes], payload: bytes) -> None:
    fh.write(_LENGTH.pack(len(payload)))
    fh.write(payload)
    fh.flush()


def _read(fh: IO[bytes]) -> bytes | None:
    head = fh.read(_LENGTH.size)
    if len(head) < _LENGTH.size:
        return None
    (size,) = _LENGTH.unpack(head)
    body = fh.read(size)
    return body if len(body) == size else None


# Workers started ahead (start), taken first by the next run_isolated.
_started: list[subprocess.Popen[bytes]] = []


def start(workers: int, module: str) -> None:
    """Start `workers` workers now, each importing `module` (the one its function will
    come from), for the next run_isolated to take: a caller with something else to do
    first (`lint --compare` builds its index) overlaps their start with it. A worker
    never taken ends with this process: its input ends."""
    _started.extend(_worker(module) for _ in range(max(0, workers - len(_started))))


def drop_started() -> None:
    """End the workers started ahead that no run took (the caller stopped before its
    run: a profile that cannot be read, a source that is not there)."""
    while _started:
        proc = _started.pop()
        proc.kill()
        proc.wait()
        for fh in (proc.stdin, proc.stdout):
            if fh is not None:
                fh.close()


def _worker(module: str | None = None) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    return subprocess.Popen(
        [sys.executable, "-m", __name__, *([module] if module else [])],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
    )


def run_isolated(
    fn: Callable[..., R],
    work: Iterable[Any],
    args: tuple[Any, ...],
    *,
    workers: int,
    seconds: float,
) -> Iterator[R]:
    """fn(item, *args) for every item of `work`, in `workers` fresh processes, results as
    they finish (in no set order). TimeLimit once `seconds` have passed since the call;
    WorkerFailed when the function raised in a worker. Either way, and when the caller
    stops early, every worker is killed before this returns."""
    deadline = time.monotonic() + seconds
    header = pickle.dumps((fn, args), protocol=pickle.HIGHEST_PROTOCOL)
    items = iter(work)
    take = threading.Lock()
    results: queue.Queue[tuple[str, Any]] = queue.Queue()
    started, _started[:] = _started[:workers], _started[workers:]
    procs = started + [_worker() for _ in range(max(1, workers) - len(started))]

    threads = [
        threading.Thread(target=_drive, args=(p, header, items, take, results), daemon=True)
        for p in procs
    ]
    for t in threads:
        t.start()
    try:
        running = len(threads)
        while running:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeLimit(f"stopped at its {seconds:g} s limit")
            try:
                kind, value = results.get(timeout=remaining)
            except queue.Empty:
                raise TimeLimit(f"stopped at its {seconds:g} s limit") from None
            if kind == "done":
                running -= 1
            elif kind == "error":
                raise WorkerFailed(value)
            else:
                yield value
    finally:
        _stop(procs, threads, items)


def _drive(
    proc: subprocess.Popen[bytes],
    header: bytes,
    items: Iterator[Any],
    take: threading.Lock,
    results: queue.Queue[tuple[str, Any]],
) -> None:
    """One worker's feeder: the next item in, its result out, until the work ends."""
    assert proc.stdin is not None and proc.stdout is not None
    try:
        _write(proc.stdin, header)
        while True:
            with take:
                item = next(items, None)
            if item is None:
                break
            _write(proc.stdin, pickle.dumps(packed(item), protocol=pickle.HIGHEST_PROTOCOL))
            frame = _read(proc.stdout)
            if frame is None:
                results.put(("error", f"a worker ended (exit status {proc.poll()})"))
                return
            results.put(pickle.loads(frame))
    except (OSError, ValueError, pickle.PickleError) as exc:
        results.put(("error", f"a worker could not be reached ({type(exc).__name__})"))
    except Exception as exc:  # reading the work itself failed
        results.put(("error", one_line(exc)))
    finally:
        results.put(("done", None))


def _stop(
    procs: list[subprocess.Popen[bytes]], threads: list[threading.Thread], items: Iterator[Any]
) -> None:
    for p in procs:
        p.kill()
    for p in procs:
        p.wait()
    # A driver may be reading the next batch from the work (a DuckDB cursor): it
    # finishes that read, fails to send it and ends. Left running, a process that
    # exits right after a time limit tore DuckDB down under it and aborted.
    for t in threads:
        t.join()
    close = getattr(items, "close", None)
    if close is not None:
        close()
    for p in procs:
        for fh in (p.stdin, p.stdout):
            try:
                fh.close() if fh is not None else None
            except OSError:
                pass


def main() -> None:
    """A worker: read (function, arguments), then answer each batch until input ends."""
    try:
        os.nice(NICE)
    except (AttributeError, OSError):
        pass
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # a print in the work must not corrupt the frames
    if len(sys.argv) > 1:  # started ahead: its function's module, imported while it waits
        importlib.import_module(sys.argv[1])
    header = _read(inp)
    if header is None:
        return
    fn, args = pickle.loads(header)
    while (frame := _read(inp)) is not None:
        try:
            reply: tuple[str, Any] = ("ok", run_batch(fn, pickle.loads(frame), *args))
        except Exception as exc:
            reply = ("error", one_line(exc))
        _write(out, pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL))


if __name__ == "__main__":
    main()
