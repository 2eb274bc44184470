"""The catalog (`Catalog`: what every engine's catalog is to the rest of the program) and
what the lists ask of it: a page, the page holding a conversation, the counts
beside each filter value, neighbours for j / k, the trend, and the constants (models,
tools, dates) asked once. Every query is SQL over the `answers` table, under the filters'
conditions (filters.py).

Long on purpose: the catalog's contract, and every query the list asks of it, written once
for both engines."""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import date
from typing import TYPE_CHECKING, Any

import pandas as pd

from trajectory_review.listing.dialect import DUCKDB, Dialect
from trajectory_review.listing.facets import Counts
from trajectory_review.listing.filters import (
    FILTERS,
    MAX_PAGE_SIZE,
    PAGE_SIZE,
    FilterField,
    Filters,
    Page,
    sql_where,
)

if TYPE_CHECKING:
    from trajectory_review.model.reader import TraceReader
    from trajectory_review.rules.registry import RuleConfig

# Filter states whose counts are kept (a few hundred small dicts).
COUNTS_REMEMBERED = 256

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class CatalogBuild:
    """What a catalog is built from, as build_catalog hands it to the engine's `build`.
    previous, judge and first shorten the way to a list of files (an earlier catalog's
    rows reused, the rules run after the list is up, the newest conversations first);
    an engine that does everything before the list is served (ClickHouse) reads none."""

    reader: TraceReader
    rules: RuleConfig
    progress: Progress | None = None
    previous: Catalog | None = None
    judge: bool = True
    first: int | None = None


@dataclass(frozen=True)
class Step:
    """Work a catalog has left once the list is served (Catalog.behind_the_list)."""

    run: Callable[[RuleConfig, Progress | None], None]
    failed: str  # what a failure means, for the reviewer ("the reply rules did not run")
    shown: bool  # a failure is said on the page (the list is short), not only in the log


class Catalog(ABC):
    """The answer catalog as the app, the downloads and the QA tools read it: every list
    query (written here once, in SQL over an `answers` table), how far the catalog is
    while it fills in and is judged, and what was dropped on the way. Two engines answer
    it: `catalog.DuckDBCatalog` (a table in this process, from trace files) and
    `clickhouse.ClickHouseCatalog` (a table beside the spans, shared by every process).
    `catalog.build_catalog` picks the one the index asks for."""

    _memo: dict[tuple[str, int], Any]
    rules_fingerprint: str | None  # the reply rules the rows were judged by
    dropped: int  # conversations with no exchange, left out
    warnings: list[tuple[str | None, str]]  # (conversation id or None, message)
    replayed: int  # conversations replayed to build it (0: all from a cache)
    total_answers: int
    # how far the list is while conversations are still replayed into it (fill);
    # None: every conversation is in it
    replaying: float | None = None
    # how far the reply rules are (None: every answer judged); judged_generation is bumped
    # each time more answers are judged; judge_error: the rules could not run (one line)
    judging: float | None = None
    judged_generation: int = 0
    judge_error: str | None = None
    _counts: OrderedDict[tuple[Any, ...], Counts]
    _counts_lock: threading.Lock
    _counts_gates: dict[tuple[Any, ...], threading.Lock]
    dialect: Dialect = DUCKDB  # the engine the `answers` table lives in

    # The engine's query interface: SQL over the `answers` table, `?` parameters bound by
    # the engine (never pasted in). Each engine implements it natively, from any thread.
    @abstractmethod
    def rows(self, sql: str, params: Sequence[object] = ()) -> list[tuple[Any, ...]]:
        """The result's rows."""

    @abstractmethod
    def frame(self, sql: str, params: Sequence[object] = ()) -> pd.DataFrame:
        """The result as a table, its columns named even when no row came back."""

    @abstractmethod
    def _facet_counts(self, f: Filters) -> dict[str, dict[str, int]]:
        """Every facet's counts (facets.FACETS) and the list's total, counted the way the
        engine answers fastest (facets.counts_by_query, facets.counts_in_scans)."""

    def behind_the_list(self, rules: RuleConfig) -> tuple[Step, ...]:
        """The work left once the list is served, in order (the app runs it in the
        background): none where the engine did it all before (ClickHouse's catch-up)."""
        return ()

    def first(self, sql: str, params: Sequence[object] = ()) -> tuple[Any, ...]:
        """The result's first row (a query that always gives one: an aggregate)."""
        return self.rows(sql, params)[0]

    def _init_counts(self) -> None:
        """The facet counts remembered by filter state (facet_counts), and a gate per
        state being counted."""
        self._counts = OrderedDict()
        self._counts_lock = threading.Lock()
        self._counts_gates = {}

    def where(self, f: Filters, skip: str = "") -> tuple[str, list[Any]]:
        return sql_where(f, skip, self.dialect)

    def wait_settled(self, timeout: float = 900.0) -> None:
        """Until every conversation is in the list and every answer judged (or the rules
        gave up): what leaves the app as a file is whole, not the part read so far."""
        end = time.monotonic() + timeout
        while time.monotonic() < end and self.judge_error is None:
            if self.replaying is None and self.judging is None:
                return
            time.sleep(0.2)

    def page(self, f: Filters, page_size: int = PAGE_SIZE) -> Page:
        page_size = min(page_size, MAX_PAGE_SIZE)
        where, params = self.where(f)
        # the count comes with the facet counts (one scan for both, remembered per state)
        total = self.facet_counts(f)["total"]["all"]
        if f.view in ("answers", "flagged"):
            pages = max(1, -(-total // page_size))
            page = min(max(1, f.page), pages)
            rows = self.frame(
                f"SELECT conversation_id, exchange, n_exchanges, question, tag, rejected, "
                f"malformed, problem, finish, answered_ns AS time_ns, failed_rules, "
                f"blocking_rules "
                f"FROM answers WHERE {where} "
                f"ORDER BY answered_ns DESC, conversation_id, exchange LIMIT ? OFFSET ?",
                [*params, page_size, (page - 1) * page_size],
            )
        else:
            pages = max(1, -(-total // page_size))
            page = min(max(1, f.page), pages)
            rows = self._conversation_page(f, page_size, (page - 1) * page_size)
        return Page(rows, int(total), page, pages)

    def _conversation_page(self, f: Filters, size: int, offset: int) -> pd.DataFrame:
        """A page of conversations in two steps: the page's conversations in order, with
        the answer that matched (one scan under the filters), then what the row shows of
        each of those few (looked up by id: no second scan under the filters)."""
        d = self.dialect
        where, params = self.where(f)
        # the pill is the latest answer that matches: filtering on tag C lists each
        # conversation with the pill of its C answer (each answer carries its
        # conversation's last activity, so the order needs no other row)
        pick = self.rows(
            f"SELECT conversation_id, max(last_active_ns) AS t, "
            f"{d.argmax}(tag, exchange) AS hit_tag, max(exchange) AS match_exchange "
            f"FROM answers WHERE {where} GROUP BY conversation_id "
            "ORDER BY t DESC, conversation_id LIMIT ? OFFSET ?",
            [*params, size, offset],
        )
        columns = ["conversation_id", "exchange", "n_exchanges", "question", "tag",
                   "match_exchange", "rejected", "malformed", "problem", "time_ns",
                   "branches"]  # fmt: skip
        if not pick:
            return pd.DataFrame(columns=columns)
        marks = ", ".join("?" for _ in pick)
        rest = {
            r[0]: r
            for r in self.rows(
                f"SELECT conversation_id, max(exchange), {d.any_value}(n_exchanges), "
                f"{d.argmin}(question, exchange), CAST(sum(rejected) AS INT), "
                f"CAST(sum(malformed) AS INT), CAST(sum(problem) AS INT), "
                f"max(last_active_ns), {d.any_value}(branches) "
                f"FROM answers WHERE conversation_id IN ({marks}) GROUP BY conversation_id",
                [p[0] for p in pick],
            )
        }
        rows = []
        for cid, _t, hit_tag, match in pick:
            _, ex, n, question, rej, mal, prob, time_ns, branches = rest[cid]
            rows.append((cid, ex, n, question, hit_tag, match, rej, mal, prob, time_ns, branches))
        return pd.DataFrame(rows, columns=columns)

    def page_of(self, f: Filters, conversation_id: str, page_size: int = PAGE_SIZE) -> int:
        """The list page (in these filters) that holds a conversation; 1 if it is absent."""
        where, params = self.where(f)
        if f.view == "conversations":
            sql = (
                f"WITH c AS (SELECT conversation_id, max(last_active_ns) AS t FROM answers "
                f"WHERE {where} GROUP BY conversation_id), "
                f"o AS (SELECT conversation_id, row_number() OVER "
                f"(ORDER BY t DESC, conversation_id) AS n FROM c) "
                f"SELECT min(n) FROM o WHERE conversation_id = ?"
            )
        else:
            sql = (
                f"WITH o AS (SELECT conversation_id, row_number() OVER (ORDER BY "
                f"answered_ns DESC, conversation_id, exchange) AS n FROM answers "
                f"WHERE {where}) SELECT min(n) FROM o WHERE conversation_id = ?"
            )
        n = self.first(sql, [*params, conversation_id])[0]
        # absent: DuckDB gives NULL, ClickHouse 0 (its min of nothing)
        return 1 if not n else (int(n) - 1) // min(page_size, MAX_PAGE_SIZE) + 1

    def facet_counts(self, f: Filters) -> dict[str, dict[str, int]]:
        """Counts next to each filter value, with the other filters applied.

        Remembered per filter state (the page number aside, the review state and the
        rules' progress included): reviewers on one server mostly ask the same few, and
        paging never changes them. About ten scans of the table each, at 100k answers
        this was most of what a click on a filter cost."""
        key = (
            replace(f, page=1),
            tuple(sorted(f.review_ids.items())),
            f.done,
            self.judged_generation,
        )
        with self._counts_lock:
            hit: Counts | None = self._counts.get(key)
            if hit is not None:
                self._counts.move_to_end(key)
                return hit
            gate = self._counts_gates.setdefault(key, threading.Lock())
        # One count per state at a time: the list's page and the filter counts ask for the
        # same new state at once, from threads (app/listing.py), and reviewers on one
        # server click the same filters; each counted it again (docs/performance-log.md).
        with gate:
            with self._counts_lock:
                hit = self._counts.get(key)  # counted while this one waited
            if hit is not None:
                return hit
            try:
                counts = self._facet_counts(f)
                with self._counts_lock:
                    self._counts[key] = counts
                    while len(self._counts) > COUNTS_REMEMBERED:
                        self._counts.popitem(last=False)
            finally:
                with self._counts_lock:
                    self._counts_gates.pop(key, None)
        return counts

    def matching_answers(self, f: Filters) -> pd.DataFrame:
        """Every answer the filters match (all pages), newest first: what a download of
        the current list holds."""
        where, params = self.where(f)
        return self.frame(
            "SELECT conversation_id, exchange, answered_ns, question, tag, rejected, "
            "malformed, problem, finish, model, tools, failed_rules, blocking_rules "
            f"FROM answers WHERE {where} "
            "ORDER BY answered_ns DESC, conversation_id, exchange",
            params,
        )

    # The table's rows change only while the list fills in (a new generation each time):
    # what is the same for every filter is asked of DuckDB once per generation, not on
    # every click of every reviewer.

    def _once(self, name: str, compute: Callable[[], Any]) -> Any:
        # By generation: rows added while the list fills in (Catalog.fill) must not leave
        # a value computed from fewer rows remembered as current.
        key = (name, self.judged_generation)
        value = self._memo.get(key)
        if value is None:
            value = compute()
            self._memo[key] = value
        return value

    def values(self, entry: FilterField) -> list[str]:
        """Every value the answers hold for a select filter (its facet's array of each
        answer's values): the models that answered, the tools called."""
        if entry.known or entry.facet is None or entry.facet.values is None:
            return list(entry.known)
        values = entry.facet.values(self.dialect)
        return list(self._once(f"values-{entry.name}", lambda: [str(r[0]) for r in self.rows(
            f"SELECT DISTINCT v FROM (SELECT {self.dialect.unnest}({values}) AS v "
            "FROM answers) WHERE v IS NOT NULL AND v <> '' ORDER BY v"
        )]))  # fmt: skip

    def select_values(self) -> dict[str, list[str]]:
        """The values of every select filter whose values are the answers' own."""
        return {e.name: self.values(e) for e in FILTERS if e.input == "select" and e.any_label}

    def rule_rows(self) -> pd.DataFrame:
        """Every judged answer's rule outcome, for the rule quality panel."""
        return self.frame(
            "SELECT conversation_id, exchange, failed_rules, blocking_rules, na_rules "
            "FROM answers WHERE complete"
        )

    def neighbours(self, f: Filters, conversation_id: str) -> tuple[str | None, str | None]:
        """Previous and next conversation in the filtered order (for j / k)."""
        where, params = self.where(f)
        d = self.dialect
        rows = self.rows(
            f"""
            WITH c AS (SELECT conversation_id, max(last_active_ns) AS t FROM answers
                       WHERE {where} GROUP BY conversation_id),
            o AS (SELECT conversation_id,
                         {d.lag}(conversation_id) OVER w AS prev,
                         {d.lead}(conversation_id) OVER w AS next
                  FROM c WINDOW w AS (ORDER BY t DESC, conversation_id{d.frame}))
            SELECT prev, next FROM o WHERE conversation_id = ?
            """,
            [*params, conversation_id],
        )
        if not rows:
            first = self.page(replace(f, view="conversations", page=1), 1).rows
            return None, (first.iloc[0]["conversation_id"] if len(first) else None)
        # ClickHouse's lag/lead give '' past either end where DuckDB gives NULL
        return rows[0][0] or None, rows[0][1] or None

    def trust_over_time(self, f: Filters, grain: str = "week") -> pd.DataFrame:
        where, params = self.where(f, skip="tags")
        grain = "week" if grain == "week" else "day"
        return self.frame(
            f"SELECT {self.dialect.period(grain)} AS period, tag, count(*) AS n "
            f"FROM answers WHERE {where} GROUP BY ALL ORDER BY period, tag",
            params,
        )

    def date_bounds(self) -> tuple[date | None, date | None]:
        # CAST: a catalog read back from its parquet cache holds `day` as a timestamp, and a
        # datetime never equals the date pickers' dates (every link then named both bounds)
        lo, hi = self._once("dates", lambda: self.first(
            "SELECT CAST(min(day) AS DATE), CAST(max(day) AS DATE) FROM answers"
        ))  # fmt: skip
        return lo, hi

    def conversation_count(self) -> int:
        return int(self._once("conversations", lambda: self.first(
            "SELECT count(DISTINCT conversation_id) FROM answers"
        )[0]))  # fmt: skip

    def answers_of(self, conversation_ids: Sequence[str]) -> pd.DataFrame:
        if not conversation_ids:
            return pd.DataFrame()
        marks = ", ".join("?" for _ in conversation_ids)
        return self.frame(
            f"SELECT * FROM answers WHERE conversation_id IN ({marks})", list(conversation_ids)
        )
