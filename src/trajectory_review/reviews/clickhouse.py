"""Review events in ClickHouse: a team that keeps its traces in ClickHouse keeps its
reviews beside them, in a table of ours in the same database (never the Collector's,
no TTL: the Collector's table expires spans, reviews must not expire).

ClickHouse has no sequence a reader can follow row by row, so each row carries the
server's time of its insert (`inserted`, nanoseconds), and a reader asks for the rows
from a little before the newest it has read (OVERLAP_NS: an insert that took its time
may become visible after a later one), keeping only ids it has not seen. An event whose
id is there already is not inserted again. Reading and the database being away are
reviews/polled.py's.
"""

from __future__ import annotations

from typing import Any

from trajectory_review.reviews.log import ReviewEvent, StoreConfigError
from trajectory_review.reviews.polled import PolledStore, Unavailable

TABLE = "trajectory_review_events"
DDL = (
    "CREATE TABLE IF NOT EXISTS {db}.`" + TABLE + "` ("
    "id String, ts String, event String, inserted DateTime64(9) DEFAULT now64(9)"
    ") ENGINE = MergeTree ORDER BY (inserted, id)"
)
OVERLAP_NS = 30 * 10**9


class ClickHouseStore(PolledStore):
    """The ReviewStore contract over one ClickHouse table (a server, or chdb in-process)."""

    kind = "clickhouse"

    def __init__(self, location: str) -> None:
        from trajectory_review.sources.base import SourceError
        from trajectory_review.sources.clickhouse import parse_location

        super().__init__()
        try:
            self.loc = parse_location(location)
        except SourceError as exc:
            raise StoreConfigError(f"review store: {exc}") from None
        base = self.loc.shown.split("?", 1)[0]
        self.shown = f"{base}?table={TABLE}" if self.loc.scheme != "chdb" else (
            f"chdb://{self.loc.path}?database={self.loc.database}&table={TABLE}"
        )  # fmt: skip
        self._client: Any = None
        self._seen: set[str] = set()
        self._newest = 0  # the newest `inserted` read (ns)

    def _cli(self) -> Any:
        from trajectory_review.sources.base import SourceError
        from trajectory_review.sources.clickhouse import client

        if self._client is None:
            try:
                cli = client(self.loc, create=self.loc.scheme == "chdb")
                if self.loc.scheme == "chdb":  # a server's database is the traces' own
                    cli.command(f"CREATE DATABASE IF NOT EXISTS `{self.loc.database}`")
                cli.command(DDL.format(db=f"`{self.loc.database}`"))
            except SourceError as exc:
                raise Unavailable(str(exc).split(": ", 1)[-1]) from None
            except Exception as exc:
                raise Unavailable(self._reason(exc)) from None
            self._client = cli
        return self._client

    def _insert(self, event: ReviewEvent, line: str) -> None:
        cli = self._cli()
        try:
            there = cli.query(
                f"SELECT count() FROM {self._table()} WHERE id = {{id:String}}",
                parameters={"id": event.id},
            ).result_rows[0][0]
            if not there:
                cli.insert(self._table(), [[event.id, event.ts, line]],
                           column_names=["id", "ts", "event"])  # fmt: skip
        except Exception as exc:
            self._client = None
            raise Unavailable(self._reason(exc)) from None

    def _fetch(self, writing: bool) -> list[str]:
        cli = self._cli()
        since = max(0, self._newest - OVERLAP_NS)
        try:
            rows = cli.query(
                f"SELECT id, event, toUnixTimestamp64Nano(inserted) FROM {self._table()} "
                "WHERE inserted >= fromUnixTimestamp64Nano({since:Int64}) "
                "ORDER BY inserted, id",
                parameters={"since": since},
            ).result_rows
        except Exception as exc:
            self._client = None
            raise Unavailable(self._reason(exc)) from None
        out = []
        for event_id, event, inserted in rows:
            if event_id in self._seen:
                continue
            self._seen.add(event_id)
            out.append(event)
            self._newest = max(self._newest, int(inserted))
        return out

    def _table(self) -> str:
        return self.loc.qualified(TABLE)

    def _reason(self, exc: BaseException) -> str:
        from trajectory_review.sources.clickhouse import explain

        return explain(exc, self.loc)[:200]
