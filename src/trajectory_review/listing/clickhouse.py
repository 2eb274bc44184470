"""The answer catalog beside the spans, for a ClickHouse source.

Three tables the app creates in the spans' database, shared by every app process on every
host (none holds a lock; rows are only ever added):
- `<table>_review_answers`: the catalog rows (answer_rows.COLUMNS) of one replay of one
  conversation, tagged with the rules' fingerprint and the replay's generation;
- `<table>_review_replays`: one row per conversation per replay: its spans' fingerprint,
  whether it was dropped, its warnings;
- `<table>_review_marks`: after each catch-up, the high-water mark (the latest span start
  it saw) and how many conversations it replayed.
A catch-up's rows count once its mark is written (the mark commits them: a process that
dies mid-write leaves rows no reader takes). A reader takes a snapshot when it opens: the
committed generations up to the newest, and of each conversation replayed more than once
only its newest generation. Two processes catching up at once both append a generation:
the newer wins, and both say the same thing, since they replayed the same spans with the
same rules. Rows a newer generation replaced are deleted after GRACE_NS, by which time
every reader has moved on to a snapshot without them (readers reload when spans arrive).

Catching up: conversations with a span at or after the last mark (less LATE_NS), and
any never replayed under these rules (a wider --since window), are fingerprinted in
ClickHouse; only those whose fingerprint changed are replayed and judged, here, by the
same replay as for files (summary.stream_answers). A restart with nothing new replays
nothing.

Long on purpose: the catalog beside the spans, its schema and its catch-up.
"""

from __future__ import annotations

import hashlib
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from trajectory_review.index.clickhouse import ClickHouseIndex
from trajectory_review.listing.answer_rows import COLUMN_KINDS, COLUMNS
from trajectory_review.listing.dialect import CLICKHOUSE, SEARCH_COLUMN, SEARCH_EXPRESSION
from trajectory_review.listing.facets import Counts, counts_in_scans
from trajectory_review.listing.filters import Filters
from trajectory_review.listing.queries import Catalog, CatalogBuild
from trajectory_review.listing.summary import AnswerPart, stream_answers
from trajectory_review.model.reader import TraceReader
from trajectory_review.rules.registry import RuleConfig
from trajectory_review.sources import SourceError
from trajectory_review.sources.clickhouse import explain

# The Collector inserts a span when it ends and its batch is flushed: a span that started
# before the last mark (a turn outlives its model calls) can arrive after the catch-up
# that set it. Spans starting this long before the mark are looked at again.
LATE_NS = 3_600 * 10**9
# How long replaced rows are kept for readers still on an older snapshot.
GRACE_NS = 600 * 10**9
# Conversations replayed between two writes of catalog rows: a first catalog's rows were
# written all at once, after the last replay, while the workers idled (performance-log,
# "Third session of #50").
WRITE_EVERY = 10_000

ANSWERS_TABLE = (
    "CREATE TABLE IF NOT EXISTS {db}.`{table}_review_answers` ("
    f"Rules String, Generation UInt64, {CLICKHOUSE.columns(COLUMN_KINDS)}"
    ") ENGINE = MergeTree ORDER BY (Rules, conversation_id, Generation, exchange)"
)
# the search column (dialect.SEARCH_COLUMN), computed by ClickHouse as rows are written;
# a catalog made before it gets it, written out for its rows once (computed on every read
# instead, it made each search slower than the three pattern matches it replaces).
# LZ4, not ZSTD: a search reads every answer's text, and in ZSTD decompressing it held
# up every searched list state (docs/performance-log.md, "Third session of #50").
SEARCH_CODEC = "LZ4"
_SEARCH_DEFINITION = (
    f"{SEARCH_COLUMN} String MATERIALIZED {SEARCH_EXPRESSION} CODEC({SEARCH_CODEC})"
)
SEARCH_DDL = (
    "ALTER TABLE {db}.`{table}_review_answers` ADD COLUMN IF NOT EXISTS " + _SEARCH_DEFINITION
)
# a catalog whose search column was made with another codec: the column's rows are
# written again with this one (a changed codec alone applies to new rows only)
SEARCH_RECODE = "ALTER TABLE {db}.`{table}_review_answers` MODIFY COLUMN " + _SEARCH_DEFINITION
SEARCH_FILL = (
    "ALTER TABLE {db}.`{table}_review_answers` MATERIALIZE COLUMN "
    f"{SEARCH_COLUMN} SETTINGS mutations_sync = 1"
)
REPLAYS_TABLE = """
CREATE TABLE IF NOT EXISTS {db}.`{table}_review_replays` (
    Rules String, ConversationId String, Generation UInt64,
    Fingerprint String, Dropped Bool, Warnings Array(String)
) ENGINE = MergeTree ORDER BY (Rules, ConversationId, Generation)
"""
MARKS_TABLE = """
CREATE TABLE IF NOT EXISTS {db}.`{table}_review_marks` (
    Rules String, Generation UInt64, Mark Int64, Replayed UInt64,
    Written DateTime64(3) DEFAULT now64(3)
) ENGINE = MergeTree ORDER BY (Rules, Generation)
"""


@dataclass(frozen=True)
class CatchUp:
    replayed: int  # conversations replayed and judged by this catch-up
    seconds: float
    housekeeping: threading.Thread  # deleting replaced rows, after the catalog is current


def clickhouse_index(reader: TraceReader) -> ClickHouseIndex:
    """The reader's index, which is ClickHouse's wherever this catalog is chosen
    (catalog.ENGINES by Index.engine): said, not assumed, should the two ever disagree."""
    index = reader.index
    if not isinstance(index, ClickHouseIndex):
        raise TypeError(f"a ClickHouse catalog over a {index.engine} index")
    return index


def ensure_tables(index: ClickHouseIndex) -> None:
    names = {"db": f"`{index.loc.database}`", "table": index.loc.table}
    for ddl in (ANSWERS_TABLE, REPLAYS_TABLE, MARKS_TABLE):
        index.command(ddl.format(**names))
    codec = index.query(
        "SELECT compression_codec FROM system.columns WHERE database = {db:String} "
        "AND table = {t:String} AND name = {c:String}",
        {"db": index.loc.database, "t": f"{index.loc.table}_review_answers", "c": SEARCH_COLUMN},
    )
    if not codec or codec[0][0] != f"CODEC({SEARCH_CODEC})":
        index.command((SEARCH_RECODE if codec else SEARCH_DDL).format(**names))
        index.command(SEARCH_FILL.format(**names))


def catch_up(
    reader: TraceReader,
    rules: RuleConfig,
    progress: Callable[[int, int], None] | None = None,
) -> CatchUp:
    """Bring the shared catalog up to date with the spans."""
    started = time.perf_counter()
    generation = time.time_ns()
    index = clickhouse_index(reader)
    ensure_tables(index)
    fp = rules_key(rules.fingerprint)
    # The mark is read before the candidates: a span inserted meanwhile is after it, and
    # the next catch-up sees it.
    new_mark = index.latest_span_ns()
    mark = index.query(
        f"SELECT max(Mark), count() FROM {index.table('_review_marks')} WHERE Rules = {{r:String}}",
        {"r": fp},
    )[0]
    replays = (
        f"SELECT ConversationId FROM {index.table('_review_replays')} "
        f"WHERE Rules = '{fp}' AND Generation IN ({committed(index, fp)})"
    )
    # never replayed under these rules (all of them, the first time): replayed now. Asked
    # of ClickHouse, so a restart moves no list of every conversation into this process.
    never = [r[0] for r in index.query(
        f"SELECT conversation_id FROM ({index.conversations_sql()}) "
        f"WHERE conversation_id NOT IN ({replays})",
        {"since": index.since_ns},
    )]  # fmt: skip
    # replayed before, with spans since the last mark: replayed if their spans changed
    seen = set(index.changed_since(int(mark[0]) - LATE_NS)) - set(never) if mark[1] else set()
    stored = dict(index.query(
        f"SELECT ConversationId, argMax(Fingerprint, Generation) "
        f"FROM {index.table('_review_replays')} WHERE Rules = '{fp}' "
        f"AND Generation IN ({committed(index, fp)}) AND ConversationId IN {{s:Array(String)}} "
        "GROUP BY ConversationId",
        {"s": sorted(seen)},
    )) if seen else {}  # fmt: skip
    now = index.conversation_fingerprints(sorted(seen)) if seen else {}
    changed = never + sorted(cid for cid in seen if stored.get(cid) != now.get(cid))
    if changed:
        # the index fingerprints each conversation from the spans it fetches for the
        # replay (read_prints, filled as the rows are read): what is stored is what ran
        parts = stream_answers(
            reader, rules, progress, only=changed, prints=index.read_prints, every=WRITE_EVERY
        )
        _write(index, fp, generation, changed, index.read_prints, parts)
    # the mark commits this generation's rows
    index.command(
        f"INSERT INTO {index.table('_review_marks')} (Rules, Generation, Mark, Replayed) "
        f"VALUES ('{fp}', {generation}, {max(new_mark, int(mark[0] or 0))}, {len(changed)})"
    )
    seconds = time.perf_counter() - started
    # housekeeping after the catalog is current, off the path to the list
    housekeeping = threading.Thread(target=_prune_quietly, args=(index, fp), daemon=True)
    housekeeping.start()
    return CatchUp(len(changed), seconds, housekeeping)


def _prune_quietly(index: ClickHouseIndex, fp: str) -> None:
    try:
        _prune(index, fp)
    except SourceError as exc:  # the next catch-up prunes; the log says why not now
        print(f"warning: replaced catalog rows not deleted: {exc}", file=sys.stderr)


_PRUNED: dict[str, int] = {}  # spans table and rules -> when this process last pruned


def committed(index: ClickHouseIndex, fp: str, upto: int | None = None) -> str:
    """SQL for the generations whose rows count (their mark is written), up to `upto`."""
    until = f" AND Generation <= {int(upto)}" if upto is not None else ""
    return (
        f"SELECT Generation FROM {index.table('_review_marks')} "
        f"WHERE Rules = '{fp}' AND Replayed > 0{until}"
    )


def replaced(
    index: ClickHouseIndex, fp: str, upto: int | None = None, before: int | None = None
) -> list[tuple[str, int]]:
    """(conversation, generation) of every committed replay a newer one replaced (only
    those replaced by a generation older than `before`, when given)."""
    rows = index.query(
        f"SELECT ConversationId, groupArray(Generation) FROM {index.table('_review_replays')} "
        f"WHERE Rules = '{fp}' AND Generation IN ({committed(index, fp, upto)}) "
        "GROUP BY ConversationId HAVING count() > 1"
    )
    out: list[tuple[str, int]] = []
    for cid, gens in rows:
        newest = max(gens)
        if before is None or newest < before:
            out.extend((cid, int(g)) for g in gens if g != newest)
    return out


def _prune(index: ClickHouseIndex, fp: str) -> None:
    """Delete rows replaced more than GRACE_NS ago, and rows of catch-ups that never
    committed: the catalog's scans stay the size of one replay per conversation. Once per
    GRACE_NS per process is enough (nothing newer could be deleted anyway)."""
    key = f"{index.loc.shown}|{fp}"
    if time.time_ns() - _PRUNED.get(key, 0) < GRACE_NS:
        return
    _PRUNED[key] = time.time_ns()
    cutoff = time.time_ns() - GRACE_NS
    pairs = replaced(index, fp, before=cutoff)
    stray = index.query(
        f"SELECT count() FROM {index.table('_review_replays')} WHERE Rules = '{fp}' "
        f"AND Generation < {cutoff} AND Generation NOT IN ({committed(index, fp)})"
    )[0][0]
    for table, cid in (
        ("_review_answers", "conversation_id"),
        ("_review_replays", "ConversationId"),
    ):
        if pairs:
            index.command(
                f"DELETE FROM {index.table(table)} WHERE Rules = '{fp}' "
                f"AND ({cid}, Generation) IN {{p:Array(Tuple(String, UInt64))}}",
                {"p": pairs},
            )
        if stray:
            index.command(
                f"DELETE FROM {index.table(table)} WHERE Rules = '{fp}' "
                f"AND Generation < {cutoff} AND Generation NOT IN ({committed(index, fp)})"
            )


def _write(
    index: ClickHouseIndex,
    fp: str,
    generation: int,
    changed: list[str],
    prints: dict[str, str],
    parts: Iterable[AnswerPart],
) -> None:
    """This generation's catalog rows, each part written as soon as it is replayed (the
    rest is replayed meanwhile), then one row per conversation replayed. Nothing of it
    counts before the mark (catch_up): rows of a catch-up that stops midway are pruned."""
    answered: set[str] = set()
    warned: dict[str, list[str]] = {}
    for part in parts:
        frame = part.frame()
        for cid, message in part.warnings:
            if cid is not None:
                warned.setdefault(cid, []).append(message)
        if not len(frame):
            continue
        answered.update(frame["conversation_id"])
        frame.insert(0, "Generation", generation)
        frame.insert(0, "Rules", fp)
        frame["model"] = frame["model"].astype(object).where(frame["model"].notna(), None)
        _insert(index, "_review_answers", frame)
    replays = pd.DataFrame({
        "Rules": fp,
        "ConversationId": changed,
        "Generation": generation,
        "Fingerprint": [prints.get(cid, "") for cid in changed],
        "Dropped": [cid not in answered for cid in changed],
        "Warnings": [warned.get(cid, []) for cid in changed],
    })  # fmt: skip
    _insert(index, "_review_replays", replays)


def _insert(index: ClickHouseIndex, table: str, frame: pd.DataFrame) -> None:
    try:
        index.client.insert_df(index.table(table), frame)
    except Exception as exc:
        raise SourceError(
            f"{index.loc.shown}: catalog not written: {explain(exc, index.loc)}"
        ) from None


class ClickHouseCatalog(Catalog):
    """The lists' queries (queries.py, filters.py, queue.py), run in ClickHouse over the
    newest replay of each conversation: nothing of the catalog is held in this process
    but what a page shows and the counts remembered per filter state."""

    dialect = CLICKHOUSE

    def __init__(self, reader: TraceReader, rules_fingerprint: str, replayed: int = 0):
        index = clickhouse_index(reader)
        self.reader = reader
        self.index = index
        self.rules_fingerprint = rules_fingerprint
        self.replayed = replayed
        self.catch_up_seconds: float | None = None  # how long bringing it up to date took
        self.housekeeping: threading.Thread | None = None  # see CatchUp
        self.judging: float | None = None  # judged as they are replayed (catch_up)
        self.judged_generation = 0
        self.judge_error: str | None = None
        self._memo: dict[tuple[str, int], Any] = {}
        self._init_counts()  # facet counts by filter state (queries.py)
        fp = rules_key(rules_fingerprint)
        # the snapshot: committed generations up to the newest now, less replaced replays
        # (named by a hash of the conversation id and the generation: integers only, so
        # nothing read from a trace is ever pasted into SQL)
        upto = int(index.query(f"SELECT max(Generation) FROM ({committed(index, fp)})")[0][0] or 0)
        old = replaced(index, fp, upto)
        # the snapshot's generations written out: as a subquery, every list query built
        # its set again (docs/performance-log.md, "Third session of #50")
        generations = [int(g) for (g,) in index.query(committed(index, fp, upto))]
        self.answers_sql = (
            f"SELECT {', '.join(COLUMNS)}, {SEARCH_COLUMN} "
            f"FROM {index.table('_review_answers')} "
            f"WHERE Rules = '{fp}' "
            f"AND Generation IN ({', '.join(map(str, sorted(generations))) or 'NULL'}) "
            f"AND last_active_ns >= {int(index.since_ns)}"
        )
        if old:
            hashed = index.query(
                "SELECT arrayMap(p -> (cityHash64(p.1), p.2), {p:Array(Tuple(String, UInt64))})",
                {"p": old},
            )[0][0]
            self.answers_sql += (
                " AND (cityHash64(conversation_id), Generation) NOT IN ("
                + (", ".join(f"({int(h)}, {int(g)})" for h, g in hashed))
                + ")"
            )
        self.dropped, self.warnings = self._notes(committed(index, fp, upto), fp)
        self.total_answers = int(self.first("SELECT count() FROM answers")[0])

    def rows(self, sql: str, params: Sequence[object] = ()) -> list[tuple[Any, ...]]:
        return list(self._run(self._over_answers(sql), params).result_rows)

    def frame(self, sql: str, params: Sequence[object] = ()) -> pd.DataFrame:
        text = self._over_answers(sql)
        result = self._run(text, params)
        columns = list(result.column_names)
        if not result.result_rows and not columns:
            # chdb's backend names no columns when no row comes back; a page with no row
            # still needs them (the list says "nothing matches", it does not fail)
            columns = [r[0] for r in self._run(f"DESCRIBE ({text})", params).result_rows]
        return pd.DataFrame(result.result_rows, columns=columns)

    def _over_answers(self, sql: str) -> str:
        """The query over `answers`: the newest replay of each conversation in the window,
        as a common table expression."""
        head = f"WITH answers AS ({self.answers_sql})"
        text = sql.strip()
        text = f"{head}, {text[4:].lstrip()}" if text[:4].upper() == "WITH" else f"{head} {text}"
        # `?` becomes clickhouse-connect's client-side `%s` (it quotes and escapes each
        # value); a literal % in our SQL would otherwise be read as a placeholder. The
        # queries hold no string literal with a `?` (answers_sql: hex and integers only).
        return text.replace("%", "%%").replace("?", "%s")

    def _run(self, text: str, params: Sequence[object]) -> Any:
        try:
            return self.index.client.query(
                text,
                parameters=list(params),
                # a column keeps its name inside the query that aliases an aggregate of it
                # (`argMin(question, …) AS question`), as in DuckDB
                settings={"prefer_column_name_to_alias": 1},
            )
        except Exception as exc:
            raise SourceError(f"{self.index.loc.shown}: {explain(exc, self.index.loc)}") from None

    def _facet_counts(self, f: Filters) -> Counts:
        # each query is a scan of the catalog here: one or two for every count
        return counts_in_scans(self, f)

    @classmethod
    def build(cls, how: CatalogBuild) -> ClickHouseCatalog:
        """The shared catalog, brought up to date with the spans first (catch_up): every
        conversation replayed and judged before the list is served."""
        done = catch_up(how.reader, how.rules, how.progress)
        catalog = cls(how.reader, how.rules.fingerprint, done.replayed)
        catalog.catch_up_seconds = done.seconds
        catalog.housekeeping = done.housekeeping
        return catalog

    def settle(self) -> None:
        """Wait for the catch-up's housekeeping (tests; a server never needs to)."""
        if self.housekeeping is not None:
            self.housekeeping.join()

    def _notes(self, generations: str, fp: str) -> tuple[int, list[tuple[str | None, str]]]:
        rows = self.index.query(
            "SELECT ConversationId, argMax(Dropped, Generation) AS d, "
            f"argMax(Warnings, Generation) AS w FROM {self.index.table('_review_replays')} "
            f"WHERE Rules = '{fp}' "
            f"AND Generation IN ({generations}) GROUP BY ConversationId "
            "HAVING d OR notEmpty(w)"
        )
        window = self.index.window_ids()
        dropped = 0
        warnings: list[tuple[str | None, str]] = []
        for cid, was_dropped, messages in rows:
            if window is not None and cid not in window:
                continue
            dropped += int(bool(was_dropped))
            warnings.extend((cid, m) for m in messages)
        return dropped, warnings


def rules_key(fingerprint: str) -> str:
    """The rules' fingerprint (their whole configuration) as a short hex key: the rows of
    each rule set apart, and nothing in SQL text but hex digits."""
    return hashlib.sha256(fingerprint.encode()).hexdigest()[:32]
