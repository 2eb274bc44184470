"""Review events in PostgreSQL: a team's store, shared by every reviewer process.

One table (TABLE, its DDL in DDL and docs/connect.md), created when the role may create
it. The app only ever SELECTs and INSERTs, so a role granted just those two keeps the
history append-only by the database's own rules, not by ours. Each event is its JSON
line as the file store writes it, checked the same way when written and read.

Reading and the database being away are reviews/polled.py's. Inserts take a
transaction-scoped advisory lock, so rows commit in the order of their `seq`: a reader
that has row n has every row before it, and reading `seq > n` never skips one still in
flight. A password never reaches a message (the URL is shown without it, and errors are
scrubbed of it).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from trajectory_review.reviews.log import ReviewEvent, StoreConfigError
from trajectory_review.reviews.polled import PolledStore, Unavailable

TABLE = "trajectory_review_events"
DDL = f"""CREATE TABLE {TABLE} (
    seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id text NOT NULL UNIQUE,
    ts text NOT NULL,
    event text NOT NULL
)"""
# pg_advisory_xact_lock's key: any fixed number, the same in every process
LOCK_KEY = 7_031_946_215
CONNECT_TIMEOUT = 3  # seconds, unless the URL says otherwise
READ_BATCH = 50_000


class PostgresStore(PolledStore):
    """The ReviewStore contract over one PostgreSQL table."""

    kind = "postgresql"

    def __init__(self, url: str) -> None:
        import psycopg
        from psycopg.conninfo import conninfo_to_dict

        super().__init__()
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
        self._conns: dict[bool, Any] = {}  # writing? -> its connection
        self._seq = 0  # the newest row read
        self._table_ready = False

    def _insert(self, event: ReviewEvent, line: str) -> None:
        with self._talking(writing=True) as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK_KEY,))
            conn.execute(
                f"INSERT INTO {TABLE} (id, ts, event) VALUES (%s, %s, %s) "
                "ON CONFLICT (id) DO NOTHING",
                (event.id, event.ts, line),
            )

    def _fetch(self, writing: bool) -> list[str]:
        out: list[str] = []
        with self._talking(writing) as conn:
            while True:
                rows = conn.execute(
                    f"SELECT seq, event FROM {TABLE} WHERE seq > %s ORDER BY seq LIMIT %s",
                    (self._seq, READ_BATCH),
                ).fetchall()
                if rows:
                    out.extend(event for _seq, event in rows)
                    self._seq = rows[-1][0]
                if len(rows) < READ_BATCH:
                    return out

    def _talking(self, writing: bool) -> _Talk:
        return _Talk(self, writing)

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
                conn.close()
                raise Unavailable(
                    f"the table {TABLE} does not exist and this role may not create it "
                    "(docs/connect.md has its DDL)"
                ) from None
            except (self._psycopg.errors.DuplicateTable, self._psycopg.errors.UniqueViolation):
                pass  # another process created it a moment ago
        self._table_ready = True

    def _reason(self, exc: BaseException) -> str:
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[-1].strip()
        for secret in self._secrets:
            reason = reason.replace(secret, "***")
        return reason[:200]


class _Talk:
    """One use of the writing or the reading connection: made when there is none, and
    dropped when the database fails it (the next use connects again); psycopg's errors
    leave as Unavailable."""

    def __init__(self, store: PostgresStore, writing: bool) -> None:
        self.store, self.writing = store, writing

    def __enter__(self) -> Any:
        store = self.store
        try:
            if self.writing not in store._conns:
                store._conns[self.writing] = store._connect()
        except store._psycopg.Error as exc:
            raise Unavailable(store._reason(exc)) from None
        return store._conns[self.writing]

    def __exit__(self, kind: Any, exc: BaseException | None, tb: Any) -> None:
        store = self.store
        if exc is not None and isinstance(exc, store._psycopg.Error):
            conn = store._conns.pop(self.writing, None)
            if conn is not None:
                try:
                    conn.close()
                except Exception:
                    pass
            raise Unavailable(store._reason(exc)) from None


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
