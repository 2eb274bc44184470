"""The index of a ClickHouse traces table: queries where the spans are, nothing copied.

ClickHouse finds, counts and windows conversations; opening one fetches only its traces'
spans, and index/resolve.py turns those few into the chat rows the file index would give
(conversation ids, turn records, duplicates, title calls; a test pins the two together),
so the same model and replay follow whatever the source.

Finding a conversation's traces by reading `SpanAttributes['gen_ai.conversation.id']`
would read every span's whole attribute map — every message history — on each click. A
small lookup table, `<table>_conversations` (conversation id, trace id, first and last
time, model calls), answers that from its primary key instead. It is kept by catch-up
queries, never by a materialized view: a view on the Collector's table runs inside every
insert the Collector makes, and one span it could not handle (a Duration ending past
2262) failed the team's telemetry ingestion. Each open fills it from the traces with spans
since its last mark (`<table>_conversations_marks`), less an hour for late spans; a span
whose end no clock can show is left out and named, every run.

Long on purpose: the ClickHouse index: the lookup, its catch-up and the checks on a table.
"""

from __future__ import annotations

import datetime as dt
import time
import zlib
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from trajectory_review.index.ingest import IndexStats, unnamed_note
from trajectory_review.index.resolve import resolve
from trajectory_review.index.rows import ChatRow, SpanRows, StreamedRows
from trajectory_review.index.scan import (
    INFERENCE_OPERATIONS,
)
from trajectory_review.index.titles import clickhouse_condition
from trajectory_review.sources import SourceError
from trajectory_review.sources.clickhouse import (
    ClickHouseLocation,
    check_table,
    client,
    explain,
    parse_location,
)
from trajectory_review.sources.clickhouse_spans import (
    MARKED,
    MARKED_COLUMNS,
    READ_COLUMNS,
    SPAN_HASH,
)
from trajectory_review.sources.conventions import CONVENTIONS, SCRUBBED, SESSION_KEYS

# pandas only where a ClickHouse store is read: a file index (and `lint` on files, which
# opens its index through this module's import) started slower importing it.
if TYPE_CHECKING:
    import pandas as pd

# Conversations per query when many are read (the catalog): one spans query per group
# instead of one per conversation. Each query reads most of the table's TraceId column
# whatever the group's size, so fewer, larger groups cost a first catalog less
# (docs/performance-log.md, "Twice as fast on the hot path").
GROUP = 4000
PRINTS_GROUP = 10_000  # conversations per fingerprints query: a few columns, no messages
FEW_TRACES = 20  # reading this many traces or fewer, their time window is asked first
# Naming more conversations than this in a query, they are named by their CRC32s
# (`_conversations_named`), not by their ids
FEW_IDS = 100
_OPS = ", ".join(f"'{op}'" for op in INFERENCE_OPERATIONS)
# A model call, not a title call (index/titles.py): the app leaves title calls out, so a
# trace holding only one is no conversation.
_CALL = f"SpanAttributes['gen_ai.operation.name'] IN ({_OPS}) AND NOT " + clickhouse_condition(
    "SpanAttributes['gen_ai.system_instructions']"
)

# Calls is the count of a trace's model calls from its latest catch-up (max, not sum: a
# catch-up counts every span of each trace it touches, so a trace seen again is counted
# again in full, never added twice).
LOOKUP_TABLE = """
CREATE TABLE IF NOT EXISTS {db}.`{table}_conversations` (
    ConversationId String CODEC(ZSTD(1)),
    TraceId String CODEC(ZSTD(1)),
    Start SimpleAggregateFunction(min, DateTime64(9)),
    End SimpleAggregateFunction(max, DateTime64(9)),
    Calls SimpleAggregateFunction(max, UInt64)
) ENGINE = AggregatingMergeTree()
ORDER BY (ConversationId, TraceId)
"""
LOOKUP_MARKS = """
CREATE TABLE IF NOT EXISTS {db}.`{table}_conversations_marks` (
    Mark Int64,
    Written DateTime64(3) DEFAULT now64(3),
    Rules UInt32 DEFAULT 0
) ENGINE = MergeTree() ORDER BY Mark
"""
# Versions before 0.3 kept the lookup with this view, inside the Collector's inserts.
OLD_VIEW = "{db}.`{table}_conversations_mv`"
# A span's end as DateTime64(9) must not pass 2262-04-11 (a Duration of 2^64-1 ns is 584
# years): addNanoseconds threw DECIMAL_OVERFLOW and failed the whole read.
_END_FITS = "toInt128(toUnixTimestamp64Nano(Timestamp)) + toInt128(Duration) <= 9223372036854775807"
# Another recorder's model call its reader reads (sources/conventions.py): marked by the
# convention's keys or events, with no messages of the GenAI conventions, of no other
# operation; index/resolve.py reads it as the file index does.
_MARKED_CALL = (
    f"{MARKED} AND NOT mapContains(SpanAttributes, 'gen_ai.input.messages') "
    "AND NOT mapContains(SpanAttributes, 'gen_ai.output.messages') "
    f"AND (SpanAttributes['gen_ai.operation.name'] IN ('', {_OPS}))"
)
_CALL = f"(({_CALL}) OR ({_MARKED_CALL}))"
# A span's conversation: the first of the conventions' session keys it holds (a value
# Logfire scrubbed names none), else '' (its trace's).
_SESSION = (
    "coalesce("
    + ", ".join(
        f"if(mapContains(SpanAttributes, '{k}') AND NOT startsWith(SpanAttributes['{k}'], "
        f"'{SCRUBBED}'), SpanAttributes['{k}'], NULL)"
        for k in SESSION_KEYS
    )
    + ", '')"
)
_RELEVANT = (
    "TraceId != '' AND ("
    + " OR ".join(f"mapContains(SpanAttributes, '{k}')" for k in SESSION_KEYS)
    + f" OR SpanAttributes['gen_ai.operation.name'] IN ({_OPS}) OR {MARKED})"
)
# The rules the lookup was filled by: a lookup filled by older ones (before other
# recorders' sessions and calls were read) is filled again, whole.
LOOKUP_RULES = 2
# A span names its conversation, or is a model call that may have none (its conversation
# is then its trace, as in the file index). End is the span's end, not its start. {scope}
# narrows it to the traces a catch-up looks at (every span of each).
LOOKUP_SELECT = f"""
SELECT {_SESSION} AS ConversationId, TraceId,
       min(Timestamp) AS Start,
       max(addNanoseconds(Timestamp, Duration)) AS End,
       toUInt64(countIf({_CALL})) AS Calls
FROM {{db}}.`{{table}}`
WHERE {_RELEVANT} AND {_END_FITS} {{scope}}
GROUP BY ConversationId, TraceId
"""
LATE_NS = 3600 * 10**9  # the Collector inserts a span when it ends: a turn comes late
MAX_NAMED_SPANS = 5

# Conversations from the lookup: a trace belongs to the conversations its spans name, or,
# naming none, is a conversation of its own; a trace without a model call (a title call
# alone, a turn span whose calls never arrived) is none, as in the file index.
_CONVERSATIONS = """
WITH per_trace AS (
    SELECT TraceId, groupUniqArrayIf(ConversationId, ConversationId != '') AS ids,
           min(Start) AS s, max(End) AS e, sum(Calls) AS calls
    FROM {lookup} {traces} GROUP BY TraceId
    HAVING calls > 0
)
SELECT arrayJoin(if(empty(ids), [TraceId], ids)) AS conversation_id,
       toUnixTimestamp64Nano(max(e)) AS last_active_ns,
       toUnixTimestamp64Nano(min(s)) AS start_ns,
       toInt64(sum(calls)) AS chat_spans
FROM per_trace
GROUP BY conversation_id
HAVING max(e) >= fromUnixTimestamp64Nano({{since:Int64}})
ORDER BY last_active_ns DESC, conversation_id
"""


class ClickHouseIndex:
    """What TraceReader asks of an index, answered by ClickHouse."""

    # the catalog lives in ClickHouse (listing/clickhouse.py), not in a file
    cache_key: str | None = None
    engine: str = "clickhouse"

    def __init__(self, loc: ClickHouseLocation, since_ns: int = 0):
        self.loc = loc
        self.path = None
        self.since_ns = since_ns
        self.client = client(loc)
        check_table(loc, self.client)
        self._ensure_lookup()
        self._has_trace_times = bool(
            self.query(
                "SELECT count() FROM system.tables WHERE database = {db:String} "
                "AND name = {t:String}",
                {"db": loc.database, "t": loc.table + "_trace_id_ts"},
            )[0][0]
        )
        self.read_prints: dict[str, str] = {}  # fingerprints of what _read fetched
        self.refresh()

    @classmethod
    def open(cls, location: str, since_ns: int = 0) -> ClickHouseIndex:
        return cls(parse_location(location), since_ns)

    # -- set-up -------------------------------------------------------------------------

    def table(self, suffix: str = "") -> str:
        return self.loc.qualified(self.loc.table + suffix)

    def query(self, sql: str, parameters: dict[str, Any] | None = None) -> list[tuple[Any, ...]]:
        try:
            rows: list[tuple[Any, ...]] = self.client.query(
                sql, parameters=parameters or {}
            ).result_rows
            return rows
        except Exception as exc:
            raise SourceError(f"{self.loc.shown}: {explain(exc, self.loc)}") from None

    def command(self, sql: str, parameters: dict[str, Any] | None = None) -> None:
        try:
            self.client.command(sql, parameters=parameters or {})
        except Exception as exc:
            raise SourceError(f"{self.loc.shown}: {explain(exc, self.loc)}") from None

    def _ensure_lookup(self) -> None:
        """The lookup tables, made or brought to this version's shape."""
        names = {"db": f"`{self.loc.database}`", "table": self.loc.table}
        # nothing of ours may run inside the Collector's inserts
        self.command("DROP VIEW IF EXISTS " + OLD_VIEW.format(**names))
        calls = self.query(
            "SELECT type FROM system.columns WHERE database = {db:String} "
            "AND table = {t:String} AND name = 'Calls'",
            {"db": self.loc.database, "t": self.loc.table + "_conversations"},
        )
        if calls and "max" not in calls[0][0]:  # the view's table: counted by sum
            self.command(f"DROP TABLE IF EXISTS {self.table('_conversations')}")
            self.command(f"DROP TABLE IF EXISTS {self.table('_conversations_marks')}")
        self.command(LOOKUP_TABLE.format(**names))
        self.command(LOOKUP_MARKS.format(**names))
        marks = self.table("_conversations_marks")
        self.command(f"ALTER TABLE {marks} ADD COLUMN IF NOT EXISTS Rules UInt32 DEFAULT 0")
        older = self.query(f"SELECT count() FROM {marks} WHERE Rules < {LOOKUP_RULES}")
        if older[0][0]:
            self.command(f"TRUNCATE TABLE {self.table('_conversations')}")
            self.command(f"TRUNCATE TABLE {marks}")

    def _catch_up_lookup(self) -> None:
        """The lookup brought up to the newest span: every span of each trace with a span
        since the last mark (less LATE_NS), or of every trace the first time. The mark is
        written only once the insert is in, so a failed catch-up is done again, whole,
        by the next open (a failed first fill once left an empty lookup: 0 conversations,
        silently, on every run after)."""
        names = {"db": f"`{self.loc.database}`", "table": self.loc.table}
        newest = self.latest_span_ns()
        mark = self.query(f"SELECT max(Mark), count() FROM {self.table('_conversations_marks')}")
        scope, params = "", {}
        if mark[0][1]:
            scope = (
                f"AND TraceId IN (SELECT DISTINCT TraceId FROM {self.table()} "
                "WHERE Timestamp >= fromUnixTimestamp64Nano({since:Int64}))"
            )
            params = {"since": max(0, int(mark[0][0]) - LATE_NS)}
        self.command(
            f"INSERT INTO {self.table('_conversations')} "
            + LOOKUP_SELECT.format(**names, scope=scope),
            params,
        )
        self.command(
            f"INSERT INTO {self.table('_conversations_marks')} (Mark, Rules) "
            f"VALUES ({{m:Int64}}, {LOOKUP_RULES})",
            {"m": newest},
        )

    def _unnamed(self) -> int:
        """Conversations (in the window) that are a trace of their own: no span names one."""
        return int(
            self.query(
                "SELECT count() FROM (SELECT TraceId FROM "
                f"{self.table('_conversations')} GROUP BY TraceId "
                "HAVING countIf(ConversationId != '') = 0 AND sum(Calls) > 0 "
                "AND max(End) >= fromUnixTimestamp64Nano({since:Int64}))",
                {"since": self.since_ns},
            )[0][0]
        )

    def _unread_calls(self) -> tuple[tuple[str, int], ...]:
        """(convention, spans) of model calls of conventions no reader reads, in the window,
        as the file index counts them: said, never a silent empty. (A call of a read
        convention whose content was not recorded is found only when it is read.)"""
        unread = [c for c in CONVENTIONS if c.read is None and c.keys]
        if not unread:
            return ()
        which = ", ".join(
            f"hasAny(mapKeys(SpanAttributes), {list(c.keys)!r}), {c.name!r}" for c in unread
        )
        rows = self.query(
            f"SELECT multiIf({which}, '') AS convention, count() FROM {self.table()} "
            f"WHERE convention != '' AND NOT mapContains(SpanAttributes, "
            "'gen_ai.input.messages') AND NOT mapContains(SpanAttributes, "
            f"'gen_ai.output.messages') AND SpanAttributes['gen_ai.operation.name'] "
            f"IN ('', {_OPS}) AND Timestamp >= fromUnixTimestamp64Nano({{since:Int64}}) "
            "GROUP BY convention ORDER BY convention",
            {"since": self.since_ns},
        )
        return tuple((str(name), int(n)) for name, n in rows)

    def _overflowing_spans(self) -> list[str]:
        """Spans left out of the lookup because their end passes what a clock can show:
        named on every run, not only on the one that met them."""
        n, named = self.query(
            f"SELECT count(), groupArray({MAX_NAMED_SPANS})(concat(TraceId, '/', SpanId)) "
            f"FROM {self.table()} WHERE {_RELEVANT} AND NOT ({_END_FITS})"
        )[0]
        if not n:
            return []
        return [
            f"{self.loc.shown}: {n:,} span(s) whose Duration ends past 2262-04-11 are left out "
            f"of the conversation lookup ({', '.join(str(x)[:80] for x in named)})"
        ]

    def conversations_sql(self, traces: str = "") -> str:
        """The conversations (in the window) as SQL, newest first; `traces` narrows the
        lookup (a WHERE clause). Takes the parameter {since:Int64}."""
        return _CONVERSATIONS.format(lookup=self.table("_conversations"), traces=traces)

    def refresh(self) -> None:
        """Count the conversations again (after new spans arrived). The list itself is
        read only when asked for: the app serves pages from the catalog, and a process
        holding every id of a large store would grow with it."""
        self._catch_up_lookup()
        n, calls = self.query(
            f"SELECT count(), sum(chat_spans) FROM ({self.conversations_sql()})",
            {"since": self.since_ns},
        )[0]
        spans = self.query(f"SELECT count() FROM {self.table()}")[0][0]
        self._conversations: pd.DataFrame | None = None
        self.stats = IndexStats(
            files=0,
            lines=0,
            bad_lines=0,
            spans=int(spans),
            chat_spans=int(calls or 0),
            title_calls=0,
            conversations=int(n),
            chat_spans_without_messages=0,
            span_warnings=tuple(self._overflowing_spans()) + unnamed_note(self._unnamed()),
            foreign_calls=self._unread_calls(),
        )

    def _frame(self, sql: str, parameters: dict[str, Any]) -> pd.DataFrame:
        try:
            return self.client.query_df(sql, parameters=parameters)
        except Exception as exc:
            raise SourceError(f"{self.loc.shown}: {explain(exc, self.loc)}") from None

    def close(self) -> None:
        """Nothing to release: the client is shared per location."""

    @property
    def origin(self) -> str:
        """Where the spans are, for the header (no password)."""
        where = f"{self.loc.database}.{self.loc.table} in ClickHouse"
        if self.since_ns:
            day = dt.datetime.fromtimestamp(self.since_ns / 1e9, dt.UTC).strftime("%Y-%m-%d %H:%M")
            where += f" · active since {day} UTC"
        return where

    # -- what the reader asks -------------------------------------------------------------

    def conversations(self) -> pd.DataFrame:
        if self._conversations is None:
            frame = self._frame(self.conversations_sql(), {"since": self.since_ns})
            if frame.empty:  # no rows come back without their columns
                import pandas as pd

                frame = pd.DataFrame(columns=["conversation_id", "last_active_ns", "start_ns",
                                              "chat_spans"])  # fmt: skip
            self._conversations = frame
        return self._conversations.copy()

    def window_ids(self) -> set[str] | None:
        """The conversations in the window, or None when there is no window."""
        return set(self.conversation_ids()) if self.since_ns else None

    def conversation_ids(self) -> list[str]:
        return list(self.conversations()["conversation_id"])

    def time_span(self) -> tuple[int | None, int | None]:
        frame = self.conversations()
        if frame.empty:
            return None, None
        return int(frame["start_ns"].min()), int(frame["last_active_ns"].max())

    def latest_span_ns(self) -> int:
        row = self.query(f"SELECT toUnixTimestamp64Nano(max(Timestamp)) FROM {self.table()}")
        return int(row[0][0] or 0)

    def traces_of(self, conversation_ids: Sequence[str]) -> dict[str, list[str]]:
        """Conversation id -> its trace ids (a conversation of its own trace: itself)."""
        ids = list(conversation_ids)
        named, params = _conversations_named(ids)
        rows = self.query(
            f"SELECT DISTINCT ConversationId, TraceId FROM {self.table('_conversations')} "
            f"WHERE {named}",
            params,
        )
        out: dict[str, list[str]] = {cid: [] for cid in ids}
        for cid, trace in rows:
            if cid in out:  # not another conversation sharing a CRC32
                out[cid].append(trace)
        for cid, traces in out.items():
            if not traces:
                traces.append(cid)  # no span names it: a trace that is its own conversation
        return out

    def conversation_fingerprints(self, only: Sequence[str] | None = None) -> dict[str, str]:
        """Conversation id -> a digest of its traces' spans (ids, times, status): equal
        digests mean nothing a replay reads has changed."""
        ids = list(only) if only is not None else self.conversation_ids()
        out: dict[str, str] = {}
        for start in range(0, len(ids), PRINTS_GROUP):
            traces = self.traces_of(ids[start : start + PRINTS_GROUP])
            pairs = [(cid, t) for cid, ts in traces.items() for t in ts]
            rows = self.query(
                f"""
                WITH pairs AS (SELECT tupleElement(p, 1) AS cid, tupleElement(p, 2) AS tid
                               FROM (SELECT arrayJoin({{pairs:Array(Tuple(String, String))}}) AS p))
                SELECT cid, concat(toString(count()), '-', hex(sum(h)))
                FROM (SELECT TraceId, {SPAN_HASH} AS h
                      FROM {self.table()} WHERE TraceId IN {{t:Array(String)}}
                      {self._time_bounds()}
                      LIMIT 1 BY TraceId, SpanId) s
                JOIN pairs ON pairs.tid = s.TraceId
                GROUP BY cid
                """,
                # the traces' days only: a catch-up asks this of recent conversations
                {"pairs": pairs, "t": sorted({t for _, t in pairs})},
            )
            out.update({cid: fp for cid, fp in rows})
        return out

    def changed_since(self, mark_ns: int) -> list[str]:
        """Conversations (in the window) with a span that started at or after `mark_ns`."""
        recent = (
            f"WHERE TraceId IN (SELECT DISTINCT TraceId FROM {self.table()} "
            "WHERE Timestamp >= fromUnixTimestamp64Nano({m:Int64}))"
        )
        rows = self.query(
            f"SELECT conversation_id FROM ({self.conversations_sql(recent)})",
            {"m": int(mark_ns), "since": self.since_ns},
        )
        return [r[0] for r in rows]

    def chat_rows(self, conversation_id: str) -> list[ChatRow]:
        for cid, rows in self._read([conversation_id]):
            if cid == conversation_id:
                return rows
        return []

    def iter_chat_rows(
        self, batch: int = GROUP, only: Sequence[str] | None = None
    ) -> Iterator[tuple[str, StreamedRows]]:
        """Every conversation's spans, newest first (or only these, in their order), as
        SpanRows: resolved to chat rows by whoever replays them (rows.resolved), in the
        worker processes of a bulk replay."""
        ids = list(only) if only is not None else self.conversation_ids()
        for start in range(0, len(ids), batch):
            group = ids[start : start + batch]
            traces, rows = self._spans(group)
            by_trace: dict[str, list[tuple[Any, ...]]] = {}
            for r in rows:
                by_trace.setdefault(r[1], []).append(r)
            for cid in group:
                spans = tuple(r for t in traces.get(cid, ()) for r in by_trace.get(t, ()))
                if spans:
                    yield cid, SpanRows(spans)

    def _read(self, ids: list[str]) -> Iterator[tuple[str, list[ChatRow]]]:
        """These conversations' chat rows, in this order, resolved here."""
        found = resolve(self._spans(ids)[1])
        for cid in ids:
            if found.get(cid):
                yield cid, found[cid]

    def _spans(self, ids: list[str]) -> tuple[dict[str, list[str]], list[tuple[Any, ...]]]:
        """These conversations' traces, and their spans: one query.

        Each conversation read is fingerprinted from the spans fetched (`read_prints`),
        as conversation_fingerprints would in ClickHouse: a replay stores the fingerprint
        of exactly what it replayed."""
        traces = self.traces_of(ids)
        wanted = sorted({t for ts in traces.values() for t in ts})
        if len(wanted) <= FEW_TRACES:
            # a few traces: their days only (docs/performance-log.md, "a few traces' days")
            which, params = "TraceId IN {t:Array(String)}" + self._time_bounds(), {"t": wanted}
        else:
            # many: named by their conversations, looked up in ClickHouse, not by every
            # trace id, each escaped in Python as the query is written, which held up a
            # first catalog's reading (docs/performance-log.md, "Second session of #50");
            # for many, the window is most of the table and only costs
            # (another conversation sharing a CRC32 adds spans that no one asked for, and
            # that are read past: only the traces of `traces` are taken)
            own = [cid for cid, ts in traces.items() if ts == [cid]]
            named, params = _conversations_named(list(traces))
            which = (
                f"(TraceId IN (SELECT TraceId FROM {self.table('_conversations')} "
                f"WHERE {named}) OR TraceId IN {{o:Array(String)}})"
            )
            params["o"] = own
        # each span once: the exporter (or a file loaded twice) may have stored copies
        rows = self.query(
            f"SELECT {', '.join(READ_COLUMNS)} FROM {self.table()} WHERE {which} "
            "LIMIT 1 BY TraceId, SpanId",
            params,
        )
        marked = [(r[1], r[2]) for r in rows if r[-1]]
        if marked:
            rows = self._with_marked(rows, marked)
        hashes: dict[str, list[int]] = {}
        for r in rows:
            hashes.setdefault(r[1], []).append(r[9])
        for cid, ts in traces.items():
            mine = [h for t in ts for h in hashes.get(t, ())]
            self.read_prints[cid] = fingerprint(len(mine), sum(mine))
        return traces, rows

    def _with_marked(
        self, rows: list[tuple[Any, ...]], marked: list[tuple[str, str]]
    ) -> list[tuple[Any, ...]]:
        """The rows with each marked span's map and events in place of its mark."""
        extra = {
            (r[0], r[1]): r[2:]
            for r in self.query(
                f"SELECT {', '.join(MARKED_COLUMNS)} FROM {self.table()} "
                "WHERE TraceId IN {t:Array(String)} AND (TraceId, SpanId) IN "
                "{p:Array(Tuple(String, String))} LIMIT 1 BY TraceId, SpanId",
                {"t": sorted({t for t, _ in marked}), "p": marked},
            )
        }
        return [r[:-1] + extra.get((r[1], r[2]), ({}, [], [])) if r[-1] else r for r in rows]

    def _time_bounds(self) -> str:
        """A time window for the spans of the traces in {t:…}, from the Collector's own
        `<table>_trace_id_ts` lookup (first and last span of every trace, to the second):
        ClickHouse then reads only the days' partitions that hold them."""
        if not self._has_trace_times:
            return ""
        # a trace missing from the lookup (spans stored before its view existed) lifts the
        # window instead of hiding its spans
        span = (
            "(SELECT if(uniqExact(TraceId) = length({t:Array(String)}), "
            "(toDateTime64(min(Start), 9), toDateTime64(addSeconds(max(End), 1), 9)), "
            "(toDateTime64(0, 9), toDateTime64('2262-04-11 00:00:00', 9))) "
            f"FROM {self.table('_trace_id_ts')} WHERE TraceId IN {{t:Array(String)}})"
        )
        return f" AND Timestamp BETWEEN tupleElement({span}, 1) AND tupleElement({span}, 2)"


def fingerprint(count: int, total: int) -> str:
    """`count-HEX` as conversation_fingerprints' SQL writes it: ClickHouse's sum of UInt64
    wraps, and its hex() of an integer is upper case in whole bytes."""
    digits = format(total % 2**64, "X")
    return f"{count}-{'0' * (len(digits) % 2)}{digits}"


def latest_span_ns(location: str) -> int:
    """The newest span's start in a ClickHouse source (0 when it has none)."""
    loc = parse_location(location)
    cli = client(loc)
    try:
        row = cli.query(
            f"SELECT toUnixTimestamp64Nano(max(Timestamp)) FROM {loc.qualified()}"
        ).result_rows
    except Exception as exc:
        raise SourceError(f"{loc.shown}: {explain(exc, loc)}") from None
    return int(row[0][0] or 0)


def since_ns(value: str | None, now: float | None = None) -> int:
    """`30d`, `12h`, `90m` or an ISO date as nanoseconds since 1970 (0: no window)."""
    if not value:
        return 0
    text = value.strip().lower()
    units = {"d": 86_400, "h": 3_600, "m": 60, "w": 604_800}
    if text[:-1].isdigit() and text[-1:] in units and len(text) <= 12:
        seconds = int(text[:-1]) * units[text[-1]]
        return max(0, int(((now if now is not None else time.time()) - seconds) * 1e9))
    try:
        day = dt.datetime.fromisoformat(value.strip())
        if day.tzinfo is None:
            day = day.replace(tzinfo=dt.UTC)
        return max(0, int(day.timestamp() * 1e9))
    except ValueError:
        raise SourceError(
            f"--since {value[:40]!r}: not a window (30d, 12h, 90m, 2w) or a date (2026-11-01)"
        ) from None


def _conversations_named(ids: list[str]) -> tuple[str, dict[str, Any]]:
    """A condition on the lookup's ConversationId naming these conversations, and its
    parameters. A few are named by their ids, which the lookup's key finds. Many are
    named by their CRC32s, integers: clickhouse-connect escapes each string it binds a
    character at a time in Python, and the ids of a bulk read, bound twice, held up a
    first catalog's reading (docs/performance-log.md, "Third session of #50"). A CRC32
    can be shared: the caller keeps only the conversations it named."""
    if len(ids) <= FEW_IDS:
        return "ConversationId IN {ids:Array(String)}", {"ids": ids}
    crcs = sorted({zlib.crc32(cid.encode("utf-8", "surrogatepass")) for cid in ids})
    return "CRC32(ConversationId) IN {ids:Array(UInt32)}", {"ids": crcs}
