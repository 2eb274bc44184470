"""What a database review store shares, whichever database: the events read so far, a
thread that reads what other processes added, and the store's state when it is away.

Every process sees every event: the poller asks for rows past the newest it has read
(`POLL_SECONDS`, an index lookup that returns nothing while nobody writes), and a writer
reads its own insert back at once. Sessions poll `signature()`, which never touches the
network, so a session's timer never waits on the database. While the database is away,
the last state read stands with `error` saying why, saving says so in one line, and the
next save or poll after it is back works, without a restart.
"""

from __future__ import annotations

import threading
import time

from trajectory_review.reviews.log import (
    ReviewEvent,
    ReviewLogError,
    ReviewState,
    checked_line,
    events_csv,
)

POLL_SECONDS = 0.5
AWAY_SECONDS = 3.0  # between polls while the database does not answer


class Unavailable(Exception):
    """The database did not answer or refused; the message is one line, scrubbed of any
    credential, saying why."""


class PolledStore:
    """The ReviewStore contract (reviews/store.py) over a database: a subclass says how
    one event is inserted and how the rows not yet read are fetched."""

    kind = "database"
    shown = ""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # the state, the cursor, the error
        self._write_lock = threading.Lock()
        # a fetch and its fold, whichever thread: two at once would fold the same rows
        self._sync_lock = threading.Lock()
        self._state = ReviewState()
        self._version = 0  # events folded in so far: what sessions poll
        self._loaded = False
        self._error: str | None = None
        self._poller: threading.Thread | None = None

    # -- what a database says --------------------------------------------------------

    def _insert(self, event: ReviewEvent, line: str) -> None:
        """Write one event (nothing when its id is there already); Unavailable."""
        raise NotImplementedError

    def _fetch(self, writing: bool) -> list[str]:
        """The event lines not read yet, in order, on the writing or the reading
        connection; Unavailable."""
        raise NotImplementedError

    # -- the contract ----------------------------------------------------------------

    def append(self, event: ReviewEvent) -> ReviewEvent:
        line = checked_line(event)
        with self._write_lock:
            try:
                self._insert(event, line)
                self._catch_up(writing=True)
            except Unavailable as exc:
                said = f"review store {self.shown}: cannot be saved ({exc})"
                with self._lock:
                    self._error = said  # the page says so until the store answers again
                raise ReviewLogError(said) from None
        with self._lock:
            self._error = None
        return event

    def state(self) -> ReviewState:
        """Everything the store says, as last read. Never raises: while the database is
        away, the last state read, with `error` saying why it may be behind."""
        if not self._loaded:
            self._poll_once()
        with self._lock:
            if self._error is None:
                return self._state
            shown = self._state.copy()
            shown.error = self._error
            return shown

    def signature(self) -> tuple[int, bool]:
        self._start_polling()
        with self._lock:
            return (self._version, self._error is None)

    def writable_problem(self) -> str | None:
        with self._lock:
            return self._error

    def to_csv(self) -> str:
        return events_csv(self.state())

    def all_events(self) -> list[ReviewEvent]:
        if not self._poll_once():
            raise ReviewLogError(self._error or f"review store {self.shown}: cannot be read")
        with self._lock:
            return list(self._state.events)

    # -- reading ---------------------------------------------------------------------

    def _start_polling(self) -> None:
        if self._poller is None:
            self._poller = threading.Thread(
                target=self._poll, name=f"trajectory-review-{self.kind}-poll", daemon=True
            )
            self._poller.start()

    def _poll(self) -> None:
        while True:
            time.sleep(POLL_SECONDS if self._poll_once() else AWAY_SECONDS)

    def _poll_once(self) -> bool:
        try:
            self._catch_up(writing=False)
        except Unavailable as exc:
            with self._lock:
                self._error = f"review store {self.shown}: cannot be read ({exc})"
                self._loaded = True
            return False
        with self._lock:
            self._error = None
        return True

    def _catch_up(self, writing: bool) -> None:
        with self._sync_lock:
            self._fold(self._fetch(writing))

    def _fold(self, lines: list[str]) -> None:
        with self._lock:
            if lines:
                state = self._state.copy()  # sessions hold the old one: never changed
                for line in lines:
                    state.add_line(line)
                self._state = state
                self._version += len(lines)
            self._loaded = True
