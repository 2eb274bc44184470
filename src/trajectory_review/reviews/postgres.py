"""Review events in PostgreSQL: a team's store, shared by every reviewer process.

One table (TABLE, its DDL in DDL and docs/connect.md), created when the role may create
it. The app only ever SELECTs and INSERTs, so a role granted just those two keeps the
history append-only by the database's own rules, not by ours. Each event is its JSON
line as the file store writes it, checked the same way when written and read.

Every process sees every event: a thread polls for rows past the newest it has (an
index lookup that returns nothing while nobody writes), and a writer reads its own
insert back at once. Inserts take a transaction-scoped advisory lock, so rows commit in
the order of their `seq`: a reader that has row n has every row before it, and reading
`seq > n` never skips one still in flight.

The database may be away: a page then says "Not saved: …" in one line and keeps its
text; the next save or poll connects again, without a restart. A password never
reaches a message (the URL is shown without it, and errors are scrubbed of it).
"""

from __future__ import annotations

import threading
import time
from typing import Any
from urllib.parse import quote

from trajectory_review.reviews.log import (
    ReviewEvent,
    ReviewLogError,
    ReviewState,
    StoreConfigError,
    checked_line,
    events_csv,
)

TABLE = "trajectory_review_events"
DDL = f"""CREATE TABLE {TABLE} (
    seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id text NOT NULL UNIQUE,
    ts text NOT NULL,
    event text NOT NULL
)"""
# pg_advisory_xact_lock's key: any fixed number, the same in every process
LOCK_KEY = 7_031_946_215
POLL_SECONDS = 0.5
CONNECT_TIMEOUT = 3  # seconds, unless the URL says otherwise
READ_BATCH = 50_000


class PostgresStore:
    """The ReviewStore contract (reviews/store.py) over one PostgreSQL table."""

    kind = "postgresql"
    lasting = True

    def __init__(self, url: str) -> None:
        import psycopg
        from psycopg.conninfo import conninfo_to_dict

        self._psycopg = psycopg
        try:
            params = conninfo_to_dict(url)
        except psycopg.Error:
            raise StoreConfigError(
                "review store postgresql://…: not a URL libpq can read (a password with "
                "@ / : # ? % must be percent-encoded)"
            ) from None
        self.url = url
        self._secrets = _secrets(str(params.get("password") or ""))
        self.shown = _shown(params)
        self._extra: dict[str, Any] = {"autocommit": True}
        if "connect_timeout" not in params:
            self._extra["connect_timeout"] = CONNECT_TIMEOUT
        self._lock = threading.Lock()  # the state and the newest seq
        self._write_lock = threading.Lock()  # the writing connection
        self._read_lock = threading.Lock()  # the reading connection
        self._writer: Any = None
        self._reader: Any = None
        self._state = ReviewState()
        self._seq = 0
        self._loaded = False
        self._error: str | None = None
        self._table_ready = False
        self._poller: threading.Thread | None = None

    # -- the contract ------------------------------------------------------------------

    def append(self, event: ReviewEvent) -> ReviewEvent:
        line = checked_line(event)
        with self._write_lock:
            try:
                conn = self._writer = self._writer or self._connect()
                with conn.transaction():
                    conn.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK_KEY,))
                    conn.execute(
                        f"INSERT INTO {TABLE} (id, ts, event) VALUES (%s, %s, %s) "
                        "ON CONFLICT (id) DO NOTHING",
                        (event.id, event.ts, line),
                    )
                self._catch_up(conn)
            except (self._psycopg.Error, StoreTableMissing) as exc:
                self._writer = _closed(self._writer)
                said = self._said(exc, "saved")
                with self._lock:
                    self._error = said  # the page says so until the store answers again
                raise ReviewLogError(said) from None
        with self._lock:
            self._error = None
        return event

    def state(self) -> ReviewState:
        """Everything the table says, as last read. Never raises: while the database is
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
        """What sessions poll: the newest row read, and whether the store answers. No
        query: the poller thread reads, so a session's timer never waits on the
        network."""
        self._start_polling()
        with self._lock:
            return (self._seq, self._error is None)

    def writable_problem(self) -> str | None:
        with self._lock:
            return self._error

    def to_csv(self) -> str:
        return events_csv(self.state())

    def all_events(self) -> list[ReviewEvent]:
        """Every event, read now (a copy between stores reads the whole history)."""
        self._poll_once(raise_errors=True)
        return list(self._state.events)

    # -- reading -----------------------------------------------------------------------

    def _start_polling(self) -> None:
        if self._poller is None:
            self._poller = threading.Thread(
                target=self._poll, name="trajectory-review-pg-poll", daemon=True
            )
            self._poller.start()

    def _poll(self) -> None:
        while True:
            failed = not self._poll_once()
            # away: ask again, less often, until it answers
            time.sleep(min(5.0, POLL_SECONDS * 6) if failed else POLL_SECONDS)

    def _poll_once(self, raise_errors: bool = False) -> bool:
        with self._read_lock:
            try:
                conn = self._reader = self._reader or self._connect()
                self._catch_up(conn)
                with self._lock:
                    self._error = None
                return True
            except (self._psycopg.Error, StoreTableMissing) as exc:
                self._reader = _closed(self._reader)
                said = self._said(exc, "read")
                with self._lock:
                    self._error = said
                    self._loaded = True
                if raise_errors:
                    raise ReviewLogError(said) from None
                return False

    def _catch_up(self, conn: Any) -> None:
        """Fold in the rows past the newest read (on whichever connection has one)."""
        while True:
            with self._lock:
                after = self._seq
            rows = conn.execute(
                f"SELECT seq, event FROM {TABLE} WHERE seq > %s ORDER BY seq LIMIT %s",
                (after, READ_BATCH),
            ).fetchall()
            with self._lock:
                fresh = [(seq, event) for seq, event in rows if seq > self._seq]
                if fresh:
                    state = self._state.copy()
                    for _seq, event in fresh:
                        state.add_line(event)
                    self._state, self._seq = state, fresh[-1][0]
                self._loaded = True
            if len(rows) < READ_BATCH:
                return

    # -- connections -------------------------------------------------------------------

    def _connect(self) -> Any:
        conn = self._psycopg.connect(self.url, **self._extra)
        if not self._table_ready:
            self._ensure_table(conn)
        return conn

    def _ensure_table(self, conn: Any) -> None:
        exists = conn.execute("SELECT to_regclass(%s)", (TABLE,)).fetchall()[0][0]
        if exists is None:
            try:
                conn.execute(DDL)
            except self._psycopg.errors.InsufficientPrivilege:
                raise StoreTableMissing(
                    f"review store {self.shown}: the table {TABLE} does not exist and this "
                    "role may not create it (docs/connect.md has its DDL)"
                ) from None
            except (self._psycopg.errors.DuplicateTable, self._psycopg.errors.UniqueViolation):
                pass  # another process created it a moment ago
        self._table_ready = True

    def _said(self, exc: BaseException, what: str) -> str:
        if isinstance(exc, StoreTableMissing):
            return str(exc)
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[-1].strip()
        for secret in self._secrets:
            reason = reason.replace(secret, "***")
        return f"review store {self.shown}: cannot be {what} ({reason[:200]})"


class StoreTableMissing(Exception):
    """The table is not there and cannot be made: a message of its own (psycopg.Error
    is caught as the database being away)."""


def _closed(conn: Any) -> None:
    if conn is not None:
        try:
            conn.close()
        except Exception:
            pass
    return None


def _secrets(password: str) -> list[str]:
    """The password as it may appear in a message: as given, and percent-encoded."""
    return [s for s in {password, quote(password, safe="")} if len(s) >= 3]


def _shown(params: dict[str, Any]) -> str:
    """The store as it may be printed: user, host, port and database; never the
    password, whatever it holds."""
    user = params.get("user") or ""
    host = params.get("host") or "localhost"
    port = f":{params['port']}" if params.get("port") else ""
    db = params.get("dbname") or ""
    return f"postgresql://{user + '@' if user else ''}{host}{port}/{db}"
