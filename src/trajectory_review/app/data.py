"""What every session shares: the index, the answer catalog and the review log.

Built once per process (not per session); sessions only read it, each through its own
DuckDB cursor.
"""

from __future__ import annotations

import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from trajectory_review import settings
from trajectory_review.app.rows import RowCache
from trajectory_review.index.clickhouse import latest_span_ns
from trajectory_review.index.database import build_progress
from trajectory_review.listing.answer_rows import answer_batch
from trajectory_review.listing.catalog import FIRST_SLICE, build_catalog
from trajectory_review.listing.queries import Catalog, Step
from trajectory_review.model import startup
from trajectory_review.model.reader import TraceReader
from trajectory_review.reviews.store import ReviewStore, default_store, review_location
from trajectory_review.rules.qa import default_rules_path
from trajectory_review.rules.registry import RuleConfig, RulesError, load_rules
from trajectory_review.sources import (
    SourceError,
    default_sources,
    shown,
    sync_sources,
    trace_files,
)
from trajectory_review.sources.files import snapshot
from trajectory_review.sources.locations import is_clickhouse
from trajectory_review.support.errors import Said, one_line
from trajectory_review.support.workers import start_server

# Traces from which an early index build (model/startup.py) starts the fork server before
# the index is in: enough for the conversations worth workers (support/workers.py's
# PARALLEL_MIN, ~11-13 KB of traces each in the bench corpus and the shipped traces).
# Started there rather than beside the first slice, the list is up sooner
# (docs/performance-log.md, "EARLY_FORK_SERVER_BYTES").
EARLY_FORK_SERVER_BYTES = 8 * 1024 * 1024

# How far a step is (0-1): a figure, one to ask for when it is shown, or None (unknown).
Fraction = float | Callable[[], float | None] | None


class Stopped(BaseException):
    """The app is stopping: the loader's work ends where it is. A BaseException, as
    asyncio's CancelledError, so that no `except Exception` on the way reports it as a
    failure."""


@dataclass
class AppData:
    reader: TraceReader | None
    catalog: Catalog | None
    reviews: ReviewStore
    sources: list[str]
    rules: RuleConfig
    error: str | None = None
    source_warnings: tuple[str, ...] = ()  # e.g. a Connect page given up on
    # list rows drawn once for every session of this data (app/rows.py)
    rows: RowCache = field(default_factory=RowCache)


# How long the fill behind the list waits for the first app page to be asked for, once
# the first slice is in. The fill's share of the server process (its rows fetched,
# packed and sent to the workers, their answers taken back) holds the GIL the page is
# drawn under, so it waits until the page is built (docs/performance-log.md,
# "FIRST_PAGE_WAIT"), and every answer is judged no later. A progress page notices within
# PROGRESS_POLL_SECONDS and asks at once; with nobody asking, the fill begins this much
# later.
FIRST_PAGE_WAIT = 0.5


class SourcesUnreadable(Said):
    """No source could be read (Connect unreachable, a folder gone). The progress page
    says why, and so does the log: served as an app without data, the page spun for as
    long as one watched, its "No traces" drawn into an output the page did not have, and
    the log said nothing."""


class Loader:
    """Builds the app's data on a background thread, so the server answers at once.

    Indexing a large corpus takes minutes the first time; a server that only starts
    listening afterwards looks dead to a browser and is killed by Posit Connect's start-up
    timeout (before the cache is ever written). Until the data is ready the page is a
    progress report that reloads itself.

    `stop` (the app's shutdown) ends that thread before Python exits: a thread still
    inside DuckDB then took the process down ("terminate called after throwing an
    instance of ''", SIGABRT), and one replaying printed warnings about answers that
    "could not be replayed" and rules that "did not run" when nothing had gone wrong.
    """

    def __init__(self, watch_seconds: float | None = None) -> None:
        self.data: AppData | None = None
        self.failure: str | None = None
        self.generation = 0  # bumped each time newer traces replace the data
        self._watch = watch_seconds if watch_seconds is not None else _watch_seconds()
        self._status = "Starting"
        self._fraction: Fraction = None
        self._started = time.monotonic()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._first_page = threading.Event()  # set once the app page is first served
        self._thread = threading.Thread(
            target=self._run, name="trajectory-review-load", daemon=True
        )
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop building and watching, and wait (up to `timeout`) until the loader's
        thread and any early index build are out: the statement each is in is
        interrupted, a replay stops at its next batch."""
        self._stopping.set()
        self._first_page.set()  # a fill waiting for the first page goes on to stop
        startup.stop(timeout, also=[self._thread])

    def page_served(self) -> None:
        """The app page (not the progress page) went out: the fill may begin."""
        self._first_page.set()

    def status(self) -> str:
        with self._lock:
            return self._status

    def fraction(self) -> float | None:
        """How far the current step is, when it can tell."""
        with self._lock:
            fraction = self._fraction
        return fraction() if callable(fraction) else fraction

    def elapsed(self) -> float:
        return time.monotonic() - self._started

    def _set(self, status: str, fraction: Fraction = None) -> None:
        _check(self._stopping)
        with self._lock:
            self._status = status
            self._fraction = fraction

    def _run(self) -> None:
        key = _sources_key()
        try:
            data = load_app_data(self._set, first=FIRST_SLICE)
            if data.catalog is None:
                raise SourcesUnreadable(data.error or "no traces could be read")
            self.data = data
            self._first_page.wait(FIRST_PAGE_WAIT)
            _check(self._stopping)
            self._behind(self.data, self._stopping)
        except Stopped:
            return
        except Exception as exc:
            if self._stopping.is_set():  # an interrupted statement, not a failure
                return
            self._report(exc)
        # Keep watching even after a failed start: a trace file that vanished mid-read or
        # was half-written is fixed by the next change, and the page recovers by itself.
        if self._watch > 0:
            self._follow(key)

    def _report(self, exc: Exception) -> None:
        if isinstance(exc, RulesError | SourcesUnreadable):  # one line says it all
            self.failure = str(exc)
            print(f"error: {exc}", file=sys.stderr)
        else:  # shown on the page, traceback in the log
            self.failure = f"{type(exc).__name__}: {exc}"
            traceback.print_exception(exc)

    @staticmethod
    def _behind(data: AppData, stopping: threading.Event | None = None) -> None:
        """What the catalog has left once the list is served (the conversations a first
        slice left out, the reply rules over every answer), while reviewers browse: the
        list, the QA queue and the rule filters fill in and say how far they are."""
        catalog = data.catalog
        if catalog is not None:
            for step in catalog.behind_the_list(data.rules):
                _behind_the_list(catalog, partial(step.run, data.rules), stopping, step)

    def _follow(self, key: tuple[Any, ...] | None) -> None:
        """Rebuild when the trace files change (new lines, rotation); sessions are told.

        The current data keeps serving while the new one is built; a failed rebuild keeps
        it and says why in the log, in one line.
        """
        pause = self._watch
        while not self._stopping.wait(pause):
            now = _sources_key()
            if now == key:
                continue
            key = now
            began = time.monotonic()
            try:
                data = load_app_data(lambda *_: _check(self._stopping), previous=self.data)
            except Stopped:
                return
            except Exception as exc:
                if self._stopping.is_set():
                    return
                print(f"warning: traces changed but were not re-read: {exc}", file=sys.stderr)
                continue
            finally:
                # Traces that never stop growing would keep a core rebuilding: rest at
                # least twice as long as the last rebuild took.
                pause = max(self._watch, 2 * (time.monotonic() - began))
            if data.catalog is None:  # still unreadable: said, the current data kept
                print(f"warning: traces changed but cannot be read: {data.error}", file=sys.stderr)
                if self.data is None:
                    self.failure = data.error or "no traces could be read"
                continue
            self.data = data
            self.failure = None
            self.generation += 1
            try:
                self._behind(data, self._stopping)
            except Stopped:
                return
            print(
                f"traces changed: replayed {data.catalog.replayed:,} of "
                f"{data.catalog.conversation_count():,} conversations "
                f"in {time.monotonic() - began:.1f} s",
                file=sys.stderr,
            )


def _behind_the_list(
    catalog: Catalog,
    run: Callable[[Callable[[int, int], None]], None],
    stopping: threading.Event | None,
    step: Step,
) -> None:
    """A catalog step run after the list is served (fill, judge). A failure leaves the
    list as it is: the log says why, and so does the page where the step says so, each in
    one line; stopped, it ends quietly."""
    try:
        run(lambda *_: _check(stopping))
    except Exception as exc:
        if stopping is not None and stopping.is_set():
            raise Stopped from exc
        detail = one_line(exc)
        catalog.judge_error = f"{step.failed}: {detail}" if step.shown else detail
        print(f"warning: {step.failed}: {detail}", file=sys.stderr)


def _check(stopping: threading.Event | None) -> None:
    """Called at each step and batch of the loader's work: ends it once the app stops."""
    if stopping is not None and stopping.is_set():
        raise Stopped


def _watch_seconds() -> float:
    try:
        return settings.watch_seconds()
    except ValueError:
        return 60.0


def _sources_key() -> tuple[Any, ...] | None:
    """Names, sizes and modification times of the trace files: a stat each, no reading.
    Connect contents are asked for what is new first (written to their cached files)."""
    sources = default_sources()
    if any(is_clickhouse(s) for s in sources):
        return _store_key(sources[0])
    try:
        sync_sources(sources)
    except Exception as exc:
        print(f"warning: {one_line(exc)}", file=sys.stderr)
    # A review log kept inside the traces folder changes with every note: not a trace.
    log = Path(review_location(sources)).resolve()  # a URL resolves to no trace file
    try:
        return snapshot(f for f in trace_files(sources) if f.resolve() != log)
    except (SourceError, OSError):
        return None


def _store_key(location: str) -> tuple[Any, ...] | None:
    """A ClickHouse table's newest span: it moves when the Collector inserts spans."""
    try:
        return ("clickhouse", latest_span_ns(location))
    except SourceError as exc:
        print(f"warning: {exc}", file=sys.stderr)
        return None


def load_app_data(
    status: Callable[[str, Fraction], None] = lambda text, fraction: None,
    previous: AppData | None = None,
    first: int | None = None,
) -> AppData:
    """Index and catalog of the traces. With `previous` (the data being replaced) only
    new and changed conversations are replayed. first: only the newest `first`
    conversations are replayed before it returns (Catalog.fill replays the rest)."""
    sources = default_sources()
    # the same store when the traces are read again: a database store's poller and
    # connections are made once per process, not once per refresh
    if previous is not None and previous.sources == sources:
        reviews = previous.reviews
    else:
        reviews = default_store(sources)
    status("Reading the reviews", None)
    # read here, on the loader's thread: a database store's first read (a team's whole
    # history) would otherwise fall to the first page drawn, on the event loop
    reviews.state()
    status("Reading the reply rules", None)
    rules = load_rules(default_rules_path())  # a bad rules file stops the start, loudly
    synced: list[str] = []
    try:
        synced = sync_sources(
            sources,
            lambda done, total: status(
                f"Reading traces from Connect: {done:,} of {total:,} spans",
                done / total if total else None,
            ),
        )
        if any(is_clickhouse(s) for s in sources):
            status(f"Finding conversations in {shown(sources[0])}", None)
        else:
            files = trace_files(sources)
            size = sum(f.stat().st_size for f in files)
            status(
                f"Indexing {len(files)} trace file{'s' if len(files) != 1 else ''} "
                f"({size / 1e6:,.1f} MB)",
                build_progress,  # asked of DuckDB each time the page is drawn
            )
        building = startup.building_bytes(sources)
        if building is not None and building >= EARLY_FORK_SERVER_BYTES:
            # The app's imports are done and the index is still being built on one
            # thread: the fork server's own imports take the core the imports left,
            # instead of competing with the first slice's replay once the index is in.
            start_server(answer_batch)
        reader = startup.open_reader(sources)  # takes the early build, once it is done
        total = reader.stats.conversations
        # Otherwise started beside the first slice's replay (a no-op when it runs): the
        # workers that replay and judge the rest behind the list fork from it at once.
        start_server(answer_batch, total)
        newest = "the newest " if first is not None and total > first else ""
        status(f"Replaying {newest}conversations", 0.0)
        catalog = build_catalog(
            reader,
            rules,
            lambda done, n: status(
                f"Replaying {newest}conversations: {done:,} of {n:,}", done / n if n else None
            ),
            previous.catalog if previous is not None else None,
            judge=False,  # the rules run after the list is up (Loader._judge)
            first=first,
        )
    except SourceError as exc:
        # The app still starts and says what is wrong, instead of a traceback.
        # with what the sync said first: "no traces read from Posit Connect yet" alone hid
        # that the server never answered
        why = "; ".join(dict.fromkeys(synced))
        return AppData(None, None, reviews, sources, rules, f"{exc} ({why})" if why else str(exc))
    return AppData(reader, catalog, reviews, sources, rules, source_warnings=tuple(synced))


def static_dir() -> Path:
    """The page's assets: static/ at the top of a checkout or a Connect bundle; in an
    installed wheel, the same files as package data (pyproject's force-include), so an
    installed package serves them too. TRAJECTORY_STATIC overrides, for trying a theme."""
    env = settings.static()
    if env:
        return Path(env)
    here = Path(__file__).resolve().parent
    packaged = here / "static"
    return packaged if packaged.is_dir() else here.parents[2] / "static"
