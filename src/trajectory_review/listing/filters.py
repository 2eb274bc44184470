"""What a list shows: the filters a reviewer sets, and the SQL they become over the
answers table (the catalog runs it; the URL schema in urls.py names it)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date

import pandas as pd

from trajectory_review.listing.dialect import DUCKDB, Dialect

PAGE_SIZE = 50
MAX_PAGE_SIZE = 100
# The values a filter takes (their labels are the app's).
VIEWS = ("conversations", "answers", "flagged")  # flagged: the QA queue
REVIEW_STATES = ("any", "unreviewed", "flagged", "noted", "reviewed")
FLAG_KINDS = ("collapse", "metric")  # would be withheld / fails the metric only


@dataclass(frozen=True)
class Filters:
    view: str = "conversations"  # or "answers", or "flagged" (the QA queue)
    tags: tuple[str, ...] = ()  # display-table keys: A, B, C, none; empty = all
    rejected: bool = False
    malformed: bool = False
    problem: bool = False  # cut off (length, content filter) or the model call failed
    date_from: date | None = None
    date_to: date | None = None
    q: str = ""
    review: str = "any"  # any | flagged | noted | unreviewed | reviewed
    page: int = 1
    rule: str = ""  # only answers failing this reply rule
    model: str = ""  # only answers by this model
    tool: str = ""  # only answers that called this tool
    flag_kind: str = "collapse"  # flagged view: "collapse" (gate) or "metric" (metric only)
    show_done: bool = False  # flagged view: list answers QA has finished too
    # conversation ids per review state, supplied by the review log
    review_ids: dict[str, frozenset[str]] = field(default_factory=dict, compare=False)
    # (conversation id, exchange) of the answers QA has finished, from the review log
    done: frozenset[tuple[str, int]] = field(default_factory=frozenset, compare=False)

    @property
    def picks_answers(self) -> bool:
        """Filters that select answers, not whole conversations: a conversation listed
        under them opens at the answer they matched."""
        return bool(
            self.tags
            or self.rejected
            or self.malformed
            or self.problem
            or self.q.strip()
            or self.rule
            or self.model
            or self.tool
        )


@dataclass(frozen=True)
class Page:
    rows: pd.DataFrame
    total: int
    page: int
    pages: int


def answer_keys(keys: Iterable[tuple[str, int]]) -> list[str]:
    return sorted(f"{cid}\x1f{ex}" for cid, ex in keys)


def sql_where(f: Filters, skip: str = "", d: Dialect = DUCKDB) -> tuple[str, list]:
    """The SQL condition and parameters for these filters over the answers table; `skip`
    leaves one filter out (a facet counts what choosing each of its values would give)."""
    clauses: list[str] = []
    params: list = []
    if f.tags and skip != "tags":
        clauses.append(f"tag IN ({', '.join('?' for _ in f.tags)})")
        params.extend(f.tags)
    if f.rejected and skip != "rejected":
        clauses.append("rejected > 0")
    if f.malformed and skip != "malformed":
        clauses.append("malformed > 0")
    if f.problem and skip != "problem":
        clauses.append("problem > 0")
    if f.date_from:
        clauses.append("day >= ?")
        params.append(f.date_from)
    if f.date_to:
        clauses.append("day <= ?")
        params.append(f.date_to)
    if f.q.strip() and skip != "q":
        clause, values = d.search(f.q.strip())
        clauses.append(clause)
        params.extend(values)
    if f.rule and skip != "rule":
        clauses.append(d.has("failed_rules", "?"))
        params.append(f.rule)
    if f.model and skip != "model":
        clauses.append("model = ?")
        params.append(f.model)
    if f.tool and skip != "tool":
        clauses.append(d.has(d.tool_list(), "?"))
        params.append(f.tool)
    if f.view == "flagged":
        clauses.append(
            f"{d.length('blocking_rules')} > 0"
            if f.flag_kind != "metric"
            else f"{d.length('failed_rules')} > 0 AND {d.length('blocking_rules')} = 0"
        )
    if f.view == "flagged" and not f.show_done and f.done and skip != "done":
        clauses.append(f"NOT {d.has('?', d.answer_key())}")
        params.append(answer_keys(f.done))
    if f.review != "any" and skip != "review":
        clauses.append(review_clause(f, params, d))
    return (" AND ".join(clauses) or "TRUE"), params


def review_clause(f: Filters, params: list, d: Dialect = DUCKDB) -> str:
    ids = f.review_ids
    if f.review == "unreviewed":
        reviewed = sorted(ids.get("reviewed", frozenset()))
        if not reviewed:
            return "TRUE"
        params.append(reviewed)
        return f"NOT {d.has('?', 'conversation_id')}"
    chosen = sorted(ids.get(f.review, frozenset()))
    if not chosen:
        return "FALSE"
    params.append(chosen)
    return d.has("?", "conversation_id")
