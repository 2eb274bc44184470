"""Worker processes never outlive the process that started them, and give way to it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# A parent that hands two workers a batch each that never ends, prints their pids, and
# waits to be killed.
PARENT = r"""
import os, sys, time
from tests.support.test_workers import pid_then_wait
from trajectory_review.support import workers

if __name__ == "__main__":
    workers.PARALLEL_MIN = 0  # two batches are enough to start workers
    results = workers.run_batches(pid_then_wait, iter([[("a", [], "")], [("b", [], "")]]),
                                  (sys.argv[1],), total=2, workers=2)
    next(results)  # never returns: the batches wait forever
"""


def pid_then_wait(batch: list, folder: str) -> None:
    """Runs in a worker: says who it is, then waits (as a worker busy with a long batch)."""
    Path(folder, f"{os.getpid()}.pid").write_text("")
    while True:
        time.sleep(0.1)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is gone too (its parent, now init, reaps it when it gets to it); reaped
    # between the two looks, its stat is gone (ENOENT, or ESRCH mid-read): gone as well
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return not stat.split(") ")[-1].startswith("Z")


def test_workers_exit_when_their_parent_is_killed_outright(tmp_path):
    parent = subprocess.Popen([sys.executable, "-c", PARENT, str(tmp_path)], cwd=ROOT)
    try:
        deadline = time.time() + 60
        while len(list(tmp_path.glob("*.pid"))) < 2 and time.time() < deadline:
            time.sleep(0.1)
        pids = [int(p.stem) for p in tmp_path.glob("*.pid")]
        assert len(pids) == 2 and all(alive(p) for p in pids)
    finally:
        parent.send_signal(signal.SIGKILL)  # no clean-up runs in the parent
        parent.wait()
    deadline = time.time() + 10
    while any(alive(p) for p in pids) and time.time() < deadline:
        time.sleep(0.2)
    assert not any(alive(p) for p in pids)


# A parent that starts the fork server for lint's workers, then runs a function of its
# own in them, which says whether lint's modules were there before it.
PRELOADED = r"""
import sys
from tests.support.test_workers import preloaded
from trajectory_review.support import workers
from trajectory_review.rules.qa import lint_batch

if __name__ == "__main__":
    workers.PARALLEL_SAFE = True
    workers.PARALLEL_MIN = 0
    workers.start_server(lint_batch)
    work = iter([[("a", [], "")], [("b", [], "")]])
    print(list(workers.run_batches(preloaded, work, (), total=2, workers=2)))
"""


def preloaded(batch: list) -> bool:
    """Runs in a worker: did it start with the rules and the replay imported?"""
    return "trajectory_review.rules.qa" in sys.modules


def test_workers_start_with_the_replay_modules_already_imported():
    # forked from a server that imported them once, not each importing them again
    out = subprocess.run(
        [sys.executable, "-c", PRELOADED], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[True, True]"


def whose(batch: list) -> tuple[str, int]:
    """Runs in a worker: the batch's conversation and the process that replayed it."""
    return batch[0][0], os.getpid()


def test_replay_still_uses_workers_where_no_fork_server_can_start(monkeypatch):
    # a host that refuses the server its Unix socket: workers are spawned instead
    from multiprocessing import forkserver

    def refuse() -> None:
        raise PermissionError("no Unix sockets here")

    from trajectory_review.support import workers

    monkeypatch.setattr(forkserver, "ensure_running", refuse)
    monkeypatch.setattr(workers, "PARALLEL_MIN", 0)
    work = iter([[(cid, [], "")] for cid in "abcd"])
    got = list(workers.run_batches(whose, work, (), total=4, workers=2))
    assert [cid for cid, _ in got] == list("abcd")
    assert os.getpid() not in {pid for _, pid in got}


def niceness(batch: list) -> int:
    """Runs in a worker: its priority (the higher, the more it gives way)."""
    return os.nice(0)


def test_workers_give_way_to_the_process_that_asked_for_them(monkeypatch):
    # the server answers reviewers while the workers replay behind the list
    from trajectory_review.support import workers

    monkeypatch.setattr(workers, "PARALLEL_MIN", 0)
    work = iter([[(cid, [], "")] for cid in "ab"])
    got = list(workers.run_batches(niceness, work, (), total=2, workers=2))
    here = os.nice(0)
    assert workers.WORKER_NICE > 0
    assert got == [min(19, here + workers.WORKER_NICE)] * 2


def collector(batch: list) -> tuple[int, int]:
    """Runs where a batch runs: the youngest generation's threshold, and how many objects
    the collector's full walks leave out meanwhile."""
    import gc

    return gc.get_threshold()[0], gc.get_freeze_count()


@pytest.mark.parametrize("workers", [1, 2])
def test_every_kind_of_batch_runs_with_fewer_collections(monkeypatch, workers):
    # lint's and what-if's batches make and drop the same records as the catalog's: they
    # ran at the collector's default, in their workers too
    from trajectory_review.support import workers as w

    monkeypatch.setattr(w, "PARALLEL_MIN", 0)
    work = iter([[(cid, [], "")] for cid in "ab"])
    got = list(w.run_batches(collector, work, (), total=2, workers=workers))
    assert all(threshold >= w.REPLAY_GC_THRESHOLD and frozen > 0 for threshold, frozen in got)


def test_a_batch_in_an_isolated_worker_runs_with_fewer_collections_too():
    # what-if's batches run in fresh interpreters of their own (support/isolated.py)
    from trajectory_review.support import workers as w
    from trajectory_review.support.isolated import run_isolated

    work = iter([[(cid, [], "")] for cid in "ab"])
    got = list(run_isolated(collector, work, (), workers=1, seconds=60))
    assert len(got) == 2
    assert all(threshold >= w.REPLAY_GC_THRESHOLD and frozen > 0 for threshold, frozen in got)


def test_replays_in_several_threads_leave_the_collector_as_they_found_it(tmp_path):
    """A replay collects young objects less often while it runs, and leaves what was
    alive before it out of full collections (workers.fewer_collections); however replays
    overlap in a server's threads, or one fails, the process's thresholds are as they
    were and nothing is left out of collections once none runs."""
    import gc
    import threading

    from tests.fixtures import A, Q, Recorder
    from trajectory_review.listing import answer_rows
    from trajectory_review.listing.summary import build_answers
    from trajectory_review.model.reader import TraceReader

    r = Recorder()
    for n in range(30):
        r.turn(f"conv-{n}", [Q(f"Question {n}?"), A(f"Answer {n}.")])
    reader = TraceReader.open([r.write(tmp_path / "t.jsonl")], cache=False)
    seen: list[tuple[int, ...]] = []
    frozen: list[int] = []
    failed: list[Exception] = []
    real = answer_rows.conversations

    counted = threading.Lock()

    def watched(batch):  # the thresholds while a batch is replayed; the third fails
        with counted:  # exactly one thread is the third
            seen.append(gc.get_threshold())
            frozen.append(gc.get_freeze_count())
            third = len(seen) == 3
        if third:
            raise RuntimeError("the index went away mid-replay")
        return real(batch)

    def replay() -> None:
        try:
            build_answers(reader, workers=1)
        except RuntimeError as exc:
            failed.append(exc)

    before = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)
        answer_rows.conversations = watched
        threads = [threading.Thread(target=replay) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        after = gc.get_threshold()
    finally:
        answer_rows.conversations = real
        gc.set_threshold(*before)
        reader.index.close()
    assert len(failed) == 1 and len(seen) == 4
    assert all(s[0] >= 50_000 for s in seen)
    assert after == (700, 10, 10)
    assert all(n > 0 for n in frozen)  # the reader, the modules: out of full walks
    assert gc.get_freeze_count() == 0  # and back in once no replay runs


def own_pid(batch: list) -> int:
    """Runs in a worker: which process it is."""
    return os.getpid()


def test_isolated_workers_started_ahead_are_the_ones_a_run_takes(monkeypatch):
    # lint --compare starts what-if's workers as its index builds (isolated.start); the
    # run takes them instead of starting its own, and starts only those still missing
    from trajectory_review.support import isolated

    isolated.start(1, __name__)
    ahead = [p.pid for p in isolated._started]
    real, started = isolated._worker, []

    def counted(module=None):
        started.append(module)
        return real(module)

    monkeypatch.setattr(isolated, "_worker", counted)
    work = iter([[(cid, [], "")] for cid in "abcdefgh"])
    pids = set(isolated.run_isolated(own_pid, work, (), workers=2, seconds=60))
    assert len(ahead) == 1 and ahead[0] in pids and len(pids) <= 2
    assert started == [None]  # the one missing, started by the run
    assert isolated._started == []


def test_an_isolated_worker_started_ahead_and_never_taken_ends_with_its_parent():
    code = (
        "import os, sys\n"
        "from trajectory_review.support import isolated\n"
        "isolated.start(1, 'tests.support.test_workers')\n"
        "print(isolated._started[0].pid, flush=True)\n"
        "os._exit(0)\n"  # as lint ends: no clean-up of any kind
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    pid = int(run.stdout)
    deadline = time.monotonic() + 30
    while _running(pid):
        assert time.monotonic() < deadline, "the worker outlived its parent"
        time.sleep(0.05)


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"  # a zombie has ended; only its parent's reaping is left


def test_conversations_are_weighed_only_where_their_weight_can_change_where_they_go():
    from trajectory_review.support.workers import SPLIT_WEIGHT, WHOLE, batches

    weighed: list[str] = []

    def weigh(rows: list[str]) -> int:
        weighed.append(rows[0])
        return SPLIT_WEIGHT + 1 if rows[0] == "heavy" else 0

    stream = [("a", ["light"]), ("b", ["heavy"])]
    # one process, nothing deferred: every conversation goes whole into the batches as it
    # comes, whatever it weighs, and none is weighed
    assert list(batches(stream, {}, weigh=weigh)) == [
        [("a", ["light"], "", WHOLE), ("b", ["heavy"], "", WHOLE)]
    ]
    assert weighed == []
    # in slices for two workers, or deferred, the heavy one goes otherwise
    assert list(batches(stream, {}, weigh=weigh, slices=2)) == [
        [("a", ["light"], "", WHOLE)],
        [("b", ["heavy"], "", (0, 2))],
        [("b", ["heavy"], "", (1, 2))],
    ]
    deferred: list[str] = []
    assert list(batches(stream, {}, weigh=weigh, defer=deferred)) == [[("a", ["light"], "", WHOLE)]]
    assert deferred == ["b"] and weighed == ["light", "heavy", "light", "heavy"]


def test_a_batch_crosses_to_a_worker_as_marshals_bytes_when_it_can_and_reads_the_same():
    from trajectory_review.index.rows import SpanRows
    from trajectory_review.support.workers import WHOLE, packed, run_batch

    def identity(batch):
        return batch

    # the index's rows: text, numbers past 64 bits, None, booleans, tuples and lists
    rows = [("c1", "t", "s", 1, 2**70, None, True, '[{"role":"user"}]', [3, 4])]
    index_batch = [("c1", rows, "print", WHOLE), ("c2", [], "", (1, 2))]
    crossing = packed(index_batch)
    assert isinstance(crossing, bytes)
    assert run_batch(identity, crossing) == index_batch
    # what marshal does not write (a ClickHouse store's spans, still to resolve) crosses
    # as it is, pickled
    store_batch = [("c1", SpanRows(((1, "x"),)), "", WHOLE)]
    assert packed(store_batch) is store_batch
    assert run_batch(identity, packed(store_batch)) == store_batch
