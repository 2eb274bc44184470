"""The list behind the sidebar: answers in DuckDB, filtered, counted and paged in SQL.

The browser only ever receives one page; every filter, facet count and search runs here.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import date
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd

from trajectory_review.index.cache import building, cache_dir, prune, publish, text_key
from trajectory_review.listing.filters import (
    MAX_PAGE_SIZE,
    PAGE_SIZE,
    Filters,
    Page,
    review_clause,
    sql_where,
)
from trajectory_review.listing.summary import Answers, build_answers
from trajectory_review.model.reader import TraceReader
from trajectory_review.replay.provenance import FILTER_KEYS
from trajectory_review.rules.registry import RuleConfig, load_rules


class Catalog:
    def __init__(self, reader: TraceReader, built: Answers, kept: Path | None = None):
        """kept: a parquet file of rows reused from an earlier catalog of the same rules."""
        self.reader = reader
        self.dropped = built.dropped
        self.warnings = built.warnings
        self.rules_fingerprint: str | None = None  # set by build()
        self.replayed = 0  # conversations replayed to build this catalog (0: from cache)
        answers = built.frame
        self._con = duckdb.connect()
        self._lock = threading.Lock()
        self._memo: dict[str, Any] = {}
        self._con.register("answers_df", answers)
        if kept is None:
            self._con.execute("CREATE TABLE answers AS SELECT * FROM answers_df")
        else:
            # The reused rows carry the exact column types; new rows are cast onto them.
            self._con.execute(
                f"CREATE TABLE answers AS SELECT * FROM read_parquet('{_sql_path(kept)}')"
            )
            if len(answers):
                self._con.execute("INSERT INTO answers BY NAME SELECT * FROM answers_df")
        self._con.unregister("answers_df")
        self.total_answers = int(self._con.execute("SELECT count(*) FROM answers").fetchone()[0])

    @classmethod
    def build(
        cls,
        reader: TraceReader,
        rules: RuleConfig | None = None,
        progress: Callable[[int, int], None] | None = None,
        previous: Catalog | None = None,
    ) -> Catalog:
        """The catalog of a reader's index. With `previous` (an earlier catalog, e.g. before
        the traces grew) only conversations whose fingerprint changed are replayed."""
        rules = rules or load_rules()
        cdir, key = cache_dir(), reader.index.cache_key
        if cdir is None or key is None:
            return cls._replay(reader, rules, progress, previous)
        # The catalog follows the index and the rules: cache it beside the index.
        name = f"answers-{text_key(key, rules.fingerprint)}"
        with building(cdir, name):  # another process building it: wait, then reuse
            return cls._cached(reader, rules, progress, previous, cdir, name)

    @classmethod
    def _cached(
        cls,
        reader: TraceReader,
        rules: RuleConfig,
        progress: Callable[[int, int], None] | None,
        previous: Catalog | None,
        cdir: Path,
        name: str,
    ) -> Catalog:
        parquet, meta = cdir / f"{name}.parquet", cdir / f"{name}.json"
        if parquet.exists() and meta.exists():
            info = json.loads(meta.read_text())
            frame = duckdb.sql(f"SELECT * FROM read_parquet('{_sql_path(parquet)}')").df()
            warnings = [(w[0], w[1]) for w in info["warnings"]]
            catalog = cls(reader, Answers(frame, info["dropped"], warnings))
            catalog.rules_fingerprint = rules.fingerprint
            return catalog
        catalog = cls._replay(reader, rules, progress, previous)
        tmp = cdir / f"{name}.{os.getpid()}.tmp"
        catalog.cursor().execute(f"COPY answers TO '{_sql_path(tmp)}' (FORMAT parquet)")
        tmp_meta = tmp.with_suffix(".json.tmp")
        tmp_meta.write_text(json.dumps({"dropped": catalog.dropped, "warnings": catalog.warnings}))
        publish(tmp, parquet)
        publish(tmp_meta, meta)
        prune(cdir, "answers")
        return catalog

    @classmethod
    def _replay(
        cls,
        reader: TraceReader,
        rules: RuleConfig,
        progress: Callable[[int, int], None] | None,
        previous: Catalog | None,
    ) -> Catalog:
        if previous is None or previous.rules_fingerprint != rules.fingerprint:
            catalog = cls(reader, build_answers(reader, rules, progress))
            catalog.replayed = reader.stats.conversations
        else:
            # Rows of a conversation whose fingerprint is unchanged are what a replay would
            # produce again: reuse them; replay the new and the changed ones.
            now = reader.index.conversation_fingerprints()
            before = dict(
                previous.cursor()
                .execute("SELECT DISTINCT conversation_id, fingerprint FROM answers")
                .fetchall()
            )
            kept = {cid for cid, fp in before.items() if fp and now.get(cid) == fp}
            changed = [cid for cid in now if cid not in kept]
            built = build_answers(reader, rules, progress, only=changed)
            scratch = Path(tempfile.mkdtemp(prefix="trajectory-review-catalog-"))
            try:
                rows = scratch / "kept.parquet"
                cur = previous.cursor()
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

    def cursor(self) -> duckdb.DuckDBPyConnection:
        """A cursor of its own for the caller (DuckDB cursors are not shared across threads)."""
        with self._lock:
            return self._con.cursor()

    def page(self, f: Filters, page_size: int = PAGE_SIZE) -> Page:
        page_size = min(page_size, MAX_PAGE_SIZE)
        where, params = sql_where(f)
        cur = self.cursor()
        if f.view in ("answers", "flagged"):
            total = cur.execute(f"SELECT count(*) FROM answers WHERE {where}", params).fetchall()[
                0
            ][0]
            pages = max(1, -(-total // page_size))
            page = min(max(1, f.page), pages)
            rows = cur.execute(
                f"SELECT conversation_id, exchange, n_exchanges, question, tag, rejected, "
                f"malformed, problem, finish, answered_ns AS time_ns, failed_rules, "
                f"blocking_rules "
                f"FROM answers WHERE {where} "
                f"ORDER BY answered_ns DESC, conversation_id, exchange LIMIT ? OFFSET ?",
                [*params, page_size, (page - 1) * page_size],
            ).fetchdf()
        else:
            total = cur.execute(
                f"SELECT count(DISTINCT conversation_id) FROM answers WHERE {where}", params
            ).fetchall()[0][0]
            pages = max(1, -(-total // page_size))
            page = min(max(1, f.page), pages)
            rows = cur.execute(
                f"""
                WITH hit AS (
                    -- the pill is the latest answer that matches: filtering on tag C
                    -- lists each conversation with the pill of its C answer
                    SELECT conversation_id, arg_max(tag, exchange) AS tag,
                           max(exchange) AS match_exchange
                    FROM answers WHERE {where} GROUP BY conversation_id
                )
                SELECT a.conversation_id, max(a.exchange) AS exchange,
                       any_value(a.n_exchanges) AS n_exchanges,
                       arg_min(a.question, a.exchange) AS question,
                       any_value(hit.tag) AS tag,
                       any_value(hit.match_exchange) AS match_exchange,
                       sum(a.rejected)::INT AS rejected, sum(a.malformed)::INT AS malformed,
                       sum(a.problem)::INT AS problem,
                       max(a.last_active_ns) AS time_ns, any_value(a.branches) AS branches
                FROM answers a JOIN hit USING (conversation_id)
                GROUP BY a.conversation_id
                ORDER BY time_ns DESC, a.conversation_id LIMIT ? OFFSET ?
                """,
                [*params, page_size, (page - 1) * page_size],
            ).fetchdf()
        return Page(rows, int(total), page, pages)

    def page_of(self, f: Filters, conversation_id: str, page_size: int = PAGE_SIZE) -> int:
        """The list page (in these filters) that holds a conversation; 1 if it is absent."""
        where, params = sql_where(f)
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
        n = self.cursor().execute(sql, [*params, conversation_id]).fetchall()[0][0]
        return 1 if n is None else (int(n) - 1) // min(page_size, MAX_PAGE_SIZE) + 1

    def facet_counts(self, f: Filters) -> dict[str, dict[str, int]]:
        """Counts next to each filter value, with the other filters applied."""
        unit = "count(*)" if f.view in ("answers", "flagged") else "count(DISTINCT conversation_id)"
        cur = self.cursor()
        where, params = sql_where(f, skip="tags")
        tags = dict(
            cur.execute(
                f"SELECT tag, {unit} FROM answers WHERE {where} GROUP BY tag", params
            ).fetchall()
        )
        out = {"tags": {k: int(tags.get(k, 0)) for k in FILTER_KEYS}}
        for name, col in (
            ("rejected", "rejected"),
            ("malformed", "malformed"),
            ("problem", "problem"),
        ):
            where, params = sql_where(replace(f, **{name: False}))
            out[name] = {
                "yes": int(
                    cur.execute(
                        f"SELECT {unit} FROM answers WHERE {where} AND {col} > 0", params
                    ).fetchall()[0][0]
                )
            }
        where, params = sql_where(f, skip="review")
        review = {}
        for state in ("flagged", "noted", "reviewed", "unreviewed"):
            p2 = list(params)
            clause = review_clause(replace(f, review=state), p2)
            review[state] = int(
                cur.execute(
                    f"SELECT {unit} FROM answers WHERE {where} AND {clause}", p2
                ).fetchall()[0][0]
            )
        out["review"] = review
        where, params = sql_where(f, skip="rule")
        rules = dict(
            cur.execute(
                f"SELECT r, {unit} FROM (SELECT *, unnest(failed_rules) AS r FROM answers "
                f"WHERE {where}) GROUP BY r",
                params,
            ).fetchall()
        )
        out["rules"] = {k: int(v) for k, v in rules.items()}
        where, params = sql_where(f, skip="model")
        out["models"] = {
            str(k): int(v)
            for k, v in cur.execute(
                f"SELECT model, {unit} FROM answers WHERE {where} AND model IS NOT NULL "
                "GROUP BY model",
                params,
            ).fetchall()
        }
        where, params = sql_where(f, skip="tool")
        out["tools"] = {
            str(k): int(v)
            for k, v in cur.execute(
                f"SELECT t, {unit} FROM (SELECT *, unnest(string_split(tools, ',')) AS t "
                f"FROM answers WHERE {where}) WHERE t <> '' GROUP BY t",
                params,
            ).fetchall()
        }
        return out

    def matching_answers(self, f: Filters) -> pd.DataFrame:
        """Every answer the filters match (all pages), newest first: what a download of
        the current list holds."""
        where, params = sql_where(f)
        return (
            self.cursor()
            .execute(
                "SELECT conversation_id, exchange, answered_ns, question, tag, rejected, "
                "malformed, problem, finish, model, tools, failed_rules, blocking_rules "
                f"FROM answers WHERE {where} "
                "ORDER BY answered_ns DESC, conversation_id, exchange",
                params,
            )
            .fetchdf()
        )

    # The table's rows never change after the build: what is the same for every filter
    # is asked of DuckDB once, not on every click of every reviewer.

    def _once(self, name: str, compute: Callable[[], Any]) -> Any:
        if name not in self._memo:
            self._memo[name] = compute()
        return self._memo[name]

    def models(self) -> list[str]:
        """Every model that answered, for the model filter."""
        return list(self._once("models", lambda: [str(r[0]) for r in self.cursor().execute(
            "SELECT DISTINCT model FROM answers WHERE model IS NOT NULL ORDER BY model"
        ).fetchall()]))  # fmt: skip

    def tool_names(self) -> list[str]:
        """Every tool an answer called, for the tool filter."""
        return list(self._once("tools", lambda: [str(r[0]) for r in self.cursor().execute(
            "SELECT DISTINCT t FROM (SELECT unnest(string_split(tools, ',')) AS t FROM answers) "
            "WHERE t <> '' ORDER BY t"
        ).fetchall()]))  # fmt: skip

    def rule_rows(self) -> pd.DataFrame:
        """Every judged answer's rule outcome, for the rule quality panel."""
        return (
            self.cursor()
            .execute(
                "SELECT conversation_id, exchange, failed_rules, blocking_rules, na_rules "
                "FROM answers WHERE complete"
            )
            .fetchdf()
        )

    def neighbours(self, f: Filters, conversation_id: str) -> tuple[str | None, str | None]:
        """Previous and next conversation in the filtered order (for j / k)."""
        where, params = sql_where(f)
        rows = (
            self.cursor()
            .execute(
                f"""
            WITH c AS (SELECT conversation_id, max(last_active_ns) AS t FROM answers
                       WHERE {where} GROUP BY conversation_id),
            o AS (SELECT conversation_id,
                         lag(conversation_id) OVER w AS prev,
                         lead(conversation_id) OVER w AS next
                  FROM c WINDOW w AS (ORDER BY t DESC, conversation_id))
            SELECT prev, next FROM o WHERE conversation_id = ?
            """,
                [*params, conversation_id],
            )
            .fetchall()
        )
        if not rows:
            first = self.page(replace(f, view="conversations", page=1), 1).rows
            return None, (first.iloc[0]["conversation_id"] if len(first) else None)
        return rows[0][0], rows[0][1]

    def trust_over_time(self, f: Filters, grain: str = "week") -> pd.DataFrame:
        where, params = sql_where(f, skip="tags")
        grain = "week" if grain == "week" else "day"
        return (
            self.cursor()
            .execute(
                f"SELECT date_trunc('{grain}', day) AS period, tag, count(*) AS n FROM answers "
                f"WHERE {where} GROUP BY ALL ORDER BY period, tag",
                params,
            )
            .fetchdf()
        )

    def date_bounds(self) -> tuple[date | None, date | None]:
        # CAST: a catalog read back from its parquet cache holds `day` as a timestamp, and a
        # datetime never equals the date pickers' dates (every link then named both bounds)
        lo, hi = self._once("dates", lambda: self.cursor().execute(
            "SELECT CAST(min(day) AS DATE), CAST(max(day) AS DATE) FROM answers"
        ).fetchall()[0])  # fmt: skip
        return lo, hi

    def conversation_count(self) -> int:
        return int(self._once("conversations", lambda: self.cursor().execute(
            "SELECT count(DISTINCT conversation_id) FROM answers"
        ).fetchall()[0][0]))  # fmt: skip

    def answers_of(self, conversation_ids: Sequence[str]) -> pd.DataFrame:
        if not conversation_ids:
            return pd.DataFrame()
        marks = ", ".join("?" for _ in conversation_ids)
        return (
            self.cursor()
            .execute(
                f"SELECT * FROM answers WHERE conversation_id IN ({marks})", list(conversation_ids)
            )
            .fetchdf()
        )


def _sql_path(path: Path) -> str:
    return str(path).replace("'", "''")
