"""The list behind the sidebar: answers in DuckDB, filtered, counted and paged in SQL
(DuckDBCatalog), and `build_catalog`, which builds the catalog an index asks for (its
`engine`: one entry of ENGINES).

The browser only ever receives one page; every filter, facet count and search runs here.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Sequence
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd

from trajectory_review.index.cache import building, prune, publish, text_key
from trajectory_review.listing.answer_rows import COLUMN_KINDS, RULE_COLUMNS
from trajectory_review.listing.clickhouse import ClickHouseCatalog
from trajectory_review.listing.dialect import DUCKDB
from trajectory_review.listing.facets import Counts, counts_by_query
from trajectory_review.listing.filters import Filters
from trajectory_review.listing.queries import Catalog, CatalogBuild, Step
from trajectory_review.listing.summary import Answers, build_answers, stream_answers
from trajectory_review.model.reader import TraceReader
from trajectory_review.rules.registry import RuleConfig, load_rules
from trajectory_review.settings import cache_dir

# Conversations judged at least per chunk (Catalog.judge).
JUDGE_CHUNK = 5_000
# A first start serves the list once the newest conversations are replayed; the rest are
# replayed behind it, newest first, and added this many at a time (Catalog.fill), the
# list saying so meanwhile. Replaying all of them first kept a reviewer on the progress
# page for the whole replay. 150 are the first three pages of the default list and, in
# the bench corpus, a full first page of each trust tag but the untagged; the fill
# completes the rest. 500 (every view's first page) kept the list up longer
# (docs/performance-log.md, "FIRST_SLICE").
FIRST_SLICE = 150
FILL_CHUNK = 2_000

# A frame's rows typed as the catalog's column list says, not as pandas infers them: before
# judging every rule column is an empty list, which pandas hands over as a list of nothing.
_TYPED_ROWS = "SELECT " + ", ".join(
    f"CAST({c} AS {DUCKDB.column_types[k]}) AS {c}" for c, k in COLUMN_KINDS.items()
)

# The shape of a catalog row (answer_rows.COLUMNS): part of the cache's name, so a catalog
# cached by an older version (without `judged`, say) is built again, not misread.
ROWS_VERSION = "2"


class DuckDBCatalog(Catalog):
    def __init__(self, reader: TraceReader, built: Answers, kept: Path | None = None):
        """kept: a parquet file of rows reused from an earlier catalog of the same rules."""
        self.reader = reader
        self.dropped = built.dropped
        self.warnings = built.warnings
        self.rules_fingerprint: str | None = None  # set by build()
        self.replayed = 0  # conversations replayed to build this catalog (0: from cache)
        # Judging (the reply rules over every answer) may follow the build: how far it is
        # (None: every answer judged), bumped `judged_generation` once it is done.
        self.judging: float | None = None
        self.judged_generation = 0
        self.judge_error: str | None = None  # the rules could not run (one line)
        self._unreplayed: list[str] = []  # conversations still to replay (fill), newest first
        self.replaying: float | None = None
        self._cache_target: tuple[Path, str] | None = None  # written once all are judged
        answers = built.frame
        self._con = duckdb.connect()
        # DuckDB types a pandas column of lists from a sample of its rows: a long
        # conversation whose answers are all judged applicable by every rule made the
        # sample's `na_rules` all empty lists, typed NULL[], and the rows after it could
        # not be read (the reply rules never finished). Every row is looked at instead.
        self._con.execute("SET GLOBAL pandas_analyze_sample = 1000000000")
        self._lock = threading.Lock()
        self._memo: dict[tuple[str, int], Any] = {}
        self._init_counts()  # facet counts by filter state (queries.py)
        self._con.register("answers_df", answers)
        if kept is None:
            self._con.execute(f"CREATE TABLE answers AS {_TYPED_ROWS} FROM answers_df")
        else:
            # The reused rows carry the exact column types; new rows are cast onto them.
            self._con.execute(
                f"CREATE TABLE answers AS SELECT * FROM read_parquet('{_sql_path(kept)}')"
            )
            if len(answers):
                self._con.execute(f"INSERT INTO answers BY NAME {_TYPED_ROWS} FROM answers_df")
        self._con.unregister("answers_df")
        self.total_answers = int(self.first("SELECT count(*) FROM answers")[0])
        if self.first("SELECT count(*) FROM answers WHERE NOT judged")[0]:
            self.judging = 0.0

    def _cursor(self) -> duckdb.DuckDBPyConnection:
        """A cursor of its own for the caller (DuckDB cursors are not shared across threads)."""
        with self._lock:
            return self._con.cursor()

    def rows(self, sql: str, params: Sequence[object] = ()) -> list[tuple[Any, ...]]:
        return self._cursor().execute(sql, list(params)).fetchall()

    def frame(self, sql: str, params: Sequence[object] = ()) -> pd.DataFrame:
        return self._cursor().execute(sql, list(params)).df()

    def _facet_counts(self, f: Filters) -> Counts:
        # a small query each: in this process, DuckDB answers them faster than two scans
        return counts_by_query(self, f)

    def behind_the_list(self, rules: RuleConfig) -> tuple[Step, ...]:
        steps = []
        if self.replaying is not None:
            steps.append(Step(self.fill, "not every conversation could be replayed", shown=True))
        if self.judging is not None or self.replaying is not None:
            steps.append(Step(self.judge, "the reply rules did not run", shown=False))
        return tuple(steps)

    def judge(self, rules: RuleConfig, progress: Callable[[int, int], None] | None = None) -> None:
        """Run the reply rules over every answer not judged yet, and fill in their rule
        columns. The rows are those a one-pass build gives (the same build_answers, the
        same replay); only the rule columns are taken from it. Sessions keep querying
        meanwhile (DuckDB's MVCC); `judged_generation` tells them the rules are in."""
        cur = self._cursor()
        # newest first, as the lists show them: the top of the queue fills in first
        ids = [r[0] for r in self.rows(
            "SELECT conversation_id FROM answers WHERE NOT judged GROUP BY 1 "
            "ORDER BY max(answered_ns) DESC, 1"
        )]  # fmt: skip
        # In a few chunks, each written as it is judged: the lists fill in while the rest
        # is judged (a chunk per call keeps the worker processes' start-up rare).
        size = max(JUDGE_CHUNK, -(-len(ids) // 5))
        for start in range(0, len(ids), size):
            chunk = ids[start : start + size]

            def step(done: int, total: int, before: int = start) -> None:
                self.judging = (before + done) / len(ids)
                if progress is not None:
                    progress(before + done, len(ids))

            built = build_answers(self.reader, rules, step, only=chunk).frame
            judged = built[["conversation_id", "exchange", *RULE_COLUMNS]]
            cur.register("judged_df", judged)
            cur.execute(
                "UPDATE answers SET failed_rules = j.failed_rules, "
                "blocking_rules = j.blocking_rules, na_rules = j.na_rules, judged = true "
                "FROM judged_df j WHERE answers.conversation_id = j.conversation_id "
                "AND answers.exchange = j.exchange"
            )
            cur.unregister("judged_df")
            self.judged_generation += 1  # sessions draw what is judged so far
        self.judging = None
        self.judged_generation += 1
        if self._cache_target is not None:
            self._write_cache(*self._cache_target)

    def fill(self, rules: RuleConfig, progress: Callable[[int, int], None] | None = None) -> None:
        """Replay the conversations a first slice left out (build(first=...)), newest
        first, adding their rows to the list as they come. The reply rules run in the
        same pass: judge() is left only the first slice, instead of replaying everything
        a second time."""
        later, self._unreplayed = self._unreplayed, []
        if not later:
            self.replaying = None
            return
        total = self.replayed + len(later)
        unjudged = self.replayed  # the first slice: judge() runs the rules over it after
        cur = self._cursor()
        try:
            for part in stream_answers(self.reader, rules, progress, only=later, every=FILL_CHUNK):
                cur.register("part_df", part.frame())
                cur.execute(f"INSERT INTO answers BY NAME {_TYPED_ROWS} FROM part_df")
                cur.unregister("part_df")
                self.dropped += part.dropped
                self.warnings.extend(part.warnings)
                self.replayed += part.conversations
                self.replaying = self.replayed / total if self.replayed < total else None
                self.judging = (self.replayed - unjudged) / total
                self._rows_changed()
        finally:
            self.replaying = None  # done, or given up on (the caller says why)

    def date_bounds(self) -> tuple[date | None, date | None]:
        # While conversations are still read in, the answers so far would bound the date
        # pickers, and as their default value filter out the older days still to come:
        # the index knows the days of every conversation.
        if self.replaying is None:
            return super().date_bounds()
        lo, hi = self.reader.index.time_span()
        return _day(lo), _day(hi)

    def _rows_changed(self) -> None:
        """Rows were added: what was remembered of the table is dropped, sessions are told
        (their lists and counts are drawn again)."""
        self._memo.clear()
        with self._counts_lock:
            self._counts.clear()
        self.total_answers = int(self.first("SELECT count(*) FROM answers")[0])
        self.judged_generation += 1

    @classmethod
    def cached(
        cls,
        reader: TraceReader,
        rules: RuleConfig,
        progress: Callable[[int, int], None] | None,
        previous: DuckDBCatalog | None,
        cdir: Path,
        name: str,
        judge: bool = True,
        first: int | None = None,
    ) -> DuckDBCatalog:
        """The catalog cached beside the index as `name`; else replayed, and cached once
        every answer in it is judged."""
        parquet, meta = cdir / f"{name}.parquet", cdir / f"{name}.json"
        if parquet.exists() and meta.exists():
            info = json.loads(meta.read_text())
            frame = duckdb.execute(f"SELECT * FROM read_parquet('{_sql_path(parquet)}')").df()
            warnings = [(w[0], w[1]) for w in info["warnings"]]
            catalog = cls(reader, Answers(frame, info["dropped"], warnings))
            catalog.rules_fingerprint = rules.fingerprint
            return catalog
        catalog = cls.replayed_from(reader, rules, progress, previous, judge, first)
        if catalog.judging is None and catalog.replaying is None:
            catalog._write_cache(cdir, name)
        else:  # a catalog is cached only once every answer in it is judged
            catalog._cache_target = (cdir, name)
        return catalog

    def _write_cache(self, cdir: Path, name: str) -> None:
        parquet, meta = cdir / f"{name}.parquet", cdir / f"{name}.json"
        tmp = cdir / f"{name}.{os.getpid()}.tmp"
        self._cursor().execute(f"COPY answers TO '{_sql_path(tmp)}' (FORMAT parquet)")
        tmp_meta = tmp.with_suffix(".json.tmp")
        tmp_meta.write_text(json.dumps({"dropped": self.dropped, "warnings": self.warnings}))
        publish(tmp, parquet)
        publish(tmp_meta, meta)
        prune(cdir, "answers")

    @classmethod
    def replayed_from(
        cls,
        reader: TraceReader,
        rules: RuleConfig,
        progress: Callable[[int, int], None] | None,
        previous: DuckDBCatalog | None,
        judge: bool = True,
        first: int | None = None,
    ) -> DuckDBCatalog:
        """The catalog replayed from the reader: all of it, its newest `first`, or (with
        `previous`, under the same rules) only the new and changed conversations."""
        total = reader.stats.conversations
        # The first slice (or a corpus no bigger) is replayed here, on the way to the list:
        # in two workers it was up later, the fork server having been started only once
        # the index was in and still importing (docs/performance-log.md, "the first
        # slice in-process").
        listing = 1 if first is not None else None
        if previous is None and first is not None and total > first:
            ids = reader.index.conversation_ids()  # newest first, as the lists show them
            now, later = ids[:first], ids[first:]
            # a conversation too big for one worker waits for the fill, which cuts it
            # over the workers: replayed here, one of 20,000 answers held the list back
            # (docs/performance-log.md, "Twice as fast on the hot path")
            deferred: list[str] = []
            built = build_answers(
                reader, rules, progress, only=now, judge=judge, workers=listing, defer=deferred
            )
            catalog = cls(reader, built)
            catalog.replayed = len(now) - len(deferred)
            catalog._unreplayed = deferred + later
            catalog.replaying = catalog.replayed / len(ids)
        elif previous is None or previous.rules_fingerprint != rules.fingerprint:
            built = build_answers(reader, rules, progress, judge=judge, workers=listing)
            catalog = cls(reader, built)
            catalog.replayed = total
        else:
            # Rows of a conversation whose fingerprint is unchanged are what a replay would
            # produce again: reuse them; replay the new and the changed ones.
            prints = reader.index.conversation_fingerprints()
            before = dict(
                previous.rows("SELECT DISTINCT conversation_id, fingerprint FROM answers")
            )
            kept = {cid for cid, fp in before.items() if fp and prints.get(cid) == fp}
            changed = [cid for cid in prints if cid not in kept]
            built = build_answers(reader, rules, progress, only=changed, judge=judge)
            scratch = Path(tempfile.mkdtemp(prefix="trajectory-review-catalog-"))
            try:
                rows = scratch / "kept.parquet"
                cur = previous._cursor()
                cur.register("kept_ids", pd.DataFrame({"conversation_id": sorted(kept)}))
                cur.execute(
                    "COPY (SELECT a.* FROM answers a SEMI JOIN kept_ids USING (conversation_id)) "
                    f"TO '{_sql_path(rows)}' (FORMAT parquet)"
                )
                warnings = [w for w in previous.warnings if w[0] in kept] + built.warnings
                catalog = cls(reader, Answers(built.frame, built.dropped, warnings), rows)
            finally:
                shutil.rmtree(scratch, ignore_errors=True)
            catalog.replayed = len(changed)
        catalog.rules_fingerprint = rules.fingerprint
        return catalog

    @classmethod
    def build(cls, how: CatalogBuild) -> DuckDBCatalog:
        """The catalog of the trace files: cached beside their index, where there is one."""
        reader, rules, progress, judge, first = (
            how.reader,
            how.rules,
            how.progress,
            how.judge,
            how.first,
        )
        # an earlier catalog of these files is one of ours (the same index engine)
        before = how.previous if isinstance(how.previous, DuckDBCatalog) else None
        cdir, key = cache_dir(), reader.index.cache_key
        if cdir is None or key is None:
            return cls.replayed_from(reader, rules, progress, before, judge, first)
        # The catalog follows the index and the rules: cache it beside the index.
        name = f"answers-{text_key(key, rules.fingerprint, ROWS_VERSION)}"
        with building(cdir, name):  # another process building it: wait, then reuse
            return cls.cached(reader, rules, progress, before, cdir, name, judge, first)


# The catalog each index engine (Index.engine) is listed by: a new engine is one entry.
ENGINES: dict[str, type[DuckDBCatalog] | type[ClickHouseCatalog]] = {
    "duckdb": DuckDBCatalog,
    "clickhouse": ClickHouseCatalog,
}


def build_catalog(
    reader: TraceReader,
    rules: RuleConfig | None = None,
    progress: Callable[[int, int], None] | None = None,
    previous: Catalog | None = None,
    judge: bool = True,
    first: int | None = None,
) -> Catalog:
    """The catalog of a reader's index: beside the spans for a ClickHouse table (shared by
    every process, brought up to date and judged before it is served), else in DuckDB
    here. With `previous` (an earlier catalog, e.g. before the traces grew) only
    conversations whose fingerprint changed are replayed.

    judge=False: the rows without the reply rules, so the list can be served sooner;
    `judge()` then fills them in (the app runs it in the background). first: replay only
    the newest `first` conversations now; `fill()` replays the rest."""
    engine = ENGINES[reader.index.engine]
    return engine.build(
        CatalogBuild(reader, rules or load_rules(), progress, previous, judge, first)
    )


def _day(ns: int | None) -> date | None:
    return None if ns is None else datetime.fromtimestamp(ns / 1e9, UTC).date()


def _sql_path(path: Path) -> str:
    return str(path).replace("'", "''")
