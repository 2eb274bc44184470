"""What a list shows: the filters a reviewer sets, and the SQL they become over the
answers table (the catalog runs it; the URL schema in urls.py names it)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from datetime import date
from typing import Any

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
        """Filters that select answers, not whole conversations, are in force: a
        conversation listed under them opens at the answer they matched."""
        return any(e.chip(self) for e in FILTERS if e.picks)


@dataclass(frozen=True)
class Page:
    rows: pd.DataFrame
    total: int
    page: int
    pages: int


def answer_keys(keys: Iterable[tuple[str, int]]) -> list[str]:
    return sorted(f"{cid}\x1f{ex}" for cid, ex in keys)


# a fixed facet value: (value, SQL condition, its parameters)
Condition = tuple[str, str, list[Any]]


@dataclass(frozen=True)
class Facet:
    """How a filter's values are counted beside it (listing/facets.py counts them): fixed
    (its values known ahead, each with an SQL condition) or open (whatever the answers
    hold: an array expression of each answer's values, which also lists a select's
    options, Catalog.values)."""

    key: str  # the counts' key, read by the sidebar
    fixed: Callable[[Filters, Dialect], list[Condition]] | None = None
    values: Callable[[Dialect], str] | None = None


@dataclass(frozen=True)
class FilterField:
    """One filter of the list, all of it in one place: the Filters field it sets (also the
    id of its input in the sidebar), the input, its label and the labels of its values,
    its keys in a link, its SQL condition and the chip naming it while the filters are
    folded away. The sidebar, the inputs read back, back/forward, clear, the chips, the
    links and the SQL are all made from FILTERS: a new filter is one entry (and the test
    of tests/listing/test_filter_table.py, which walks every entry)."""

    name: str
    # the sidebar's input: view, checkboxes, checkbox, radio, select, switch, text, dates
    input: str
    label: str
    # (link key, value) pairs naming the filter's state; [] when it is the default
    to_link: Callable[[Filters], list[tuple[str, str]]]
    # a link's key and value -> Filters fields, None when the value is not understood
    from_link: dict[str, Callable[[str], dict[str, Any] | None]]
    # the SQL condition over the answers table (parameters appended), or None
    where: Callable[[Filters, Dialect, list[Any]], str | None]
    chip: Callable[[Filters], list[str]] = lambda f: []
    choices: dict[str, str] = field(default_factory=dict)  # value -> label, fixed choices
    queue_only: bool = False  # shown and in force in the QA queue (flagged view) only
    repeats: bool = False  # a link may name several values (tag=A&tag=B), each added
    clears: bool = True  # "Clear filters" resets it (not the view, nor the queue's settings)
    example: dict[str, Any] = field(default_factory=dict)  # a state not the default (tests)
    facet: Facet | None = None  # its values counted beside it
    picks: bool = False  # it selects answers (Filters.picks_answers), not conversations
    # a select of values the answers hold: its first option, and its values when they
    # are known ahead (the rules); judged: its counts wait for the reply rules
    any_label: str = ""
    known: tuple[str, ...] = ()
    judged: bool = False


def _flag(v: str) -> bool | None:
    return {"1": True, "0": False}.get(v)


def _date(s: str) -> date | None:
    try:
        return date.fromisoformat(s) if s else None
    except ValueError:
        return None


def _yes_no(name: str, label: str, chip: str) -> FilterField:
    """A yes/no filter on a count column of the answers table (`name` > 0)."""
    return FilterField(
        name=name,
        input="checkbox",
        label=label,
        to_link=lambda f: [(name, "1")] if getattr(f, name) else [],
        from_link={name: lambda v: None if _flag(v) is None else {name: _flag(v)}},
        where=lambda f, d, p: f"{name} > 0" if getattr(f, name) else None,
        chip=lambda f: [chip] if getattr(f, name) else [],
        example={name: True},
        facet=Facet(name, fixed=lambda f, d: [("yes", f"{name} > 0", [])]),
        picks=True,
    )


def _one_of(
    name: str,
    label: str,
    column_has: Callable[[Dialect], str],
    values: Callable[[Dialect], str],
    any_label: str,
    known: tuple[str, ...] = (),
    counts_key: str = "",
) -> FilterField:
    """A select of one value among those the answers hold (rule, model, tool): the
    condition that an answer has it, and the array of each answer's values (its counts
    and its options). A new one is one call here."""

    def where(f: Filters, d: Dialect, params: list[Any]) -> str | None:
        value = getattr(f, name)
        if not value:
            return None
        params.append(value)
        return column_has(d)

    return FilterField(
        name=name,
        input="select",
        label=label,
        to_link=lambda f: [(name, getattr(f, name))] if getattr(f, name) else [],
        from_link={name: lambda v: {name: v} if v and (not known or v in known) else None},
        where=where,
        chip=lambda f: [getattr(f, name)] if getattr(f, name) else [],
        example={name: sorted(known)[0] if known else "gpt-4o"},
        facet=Facet(counts_key or name, values=values),
        picks=True,
        any_label=any_label,
        known=known,
        judged=bool(known),
    )


def _tags_where(f: Filters, d: Dialect, params: list[Any]) -> str | None:
    if not f.tags:
        return None
    params.extend(f.tags)
    return f"tag IN ({', '.join('?' for _ in f.tags)})"


def _dates_where(f: Filters, d: Dialect, params: list[Any]) -> str | None:
    clauses = []
    if f.date_from:
        clauses.append("day >= ?")
        params.append(f.date_from)
    if f.date_to:
        clauses.append("day <= ?")
        params.append(f.date_to)
    return " AND ".join(clauses) or None


def _search_where(f: Filters, d: Dialect, params: list[Any]) -> str | None:
    if not f.q.strip():
        return None
    clause, values = d.search(f.q.strip())
    params.extend(values)
    return clause


def _flag_kind_where(f: Filters, d: Dialect, params: list[Any]) -> str | None:
    # the queue holds flagged answers whatever the kind chosen: the kind only says which
    if f.view != "flagged":
        return None
    if f.flag_kind != "metric":
        return f"{d.length('blocking_rules')} > 0"
    return f"{d.length('failed_rules')} > 0 AND {d.length('blocking_rules')} = 0"


def _done_where(f: Filters, d: Dialect, params: list[Any]) -> str | None:
    if f.view != "flagged" or f.show_done or not f.done:
        return None
    params.append(answer_keys(f.done))
    return f"NOT {d.has('?', d.answer_key())}"


def _review_where(f: Filters, d: Dialect, params: list[Any]) -> str | None:
    return review_clause(f, params, d) if f.review != "any" else None


def _review_states(f: Filters, d: Dialect) -> list[Condition]:
    out: list[Condition] = []
    for state in ("flagged", "noted", "reviewed", "unreviewed"):
        params: list[Any] = []
        out.append((state, review_clause(replace(f, review=state), params, d), params))
    return out


VIEW_LABELS = {"conversations": "Conversations", "answers": "Answers", "flagged": "Flagged"}
FLAG_KIND_LABELS = {"collapse": "Would be withheld", "metric": "Metric-only failures"}
REVIEW_LABELS = {
    "any": "Any",
    "unreviewed": "Unreviewed",
    "flagged": "Flagged",
    "noted": "With notes",
    "reviewed": "Reviewed",
}


# Long on purpose: the table of filters itself, an entry per filter.
def _filters() -> tuple[FilterField, ...]:
    from trajectory_review.model.provenance import FILTER_KEYS, display_for_key
    from trajectory_review.rules.registry import RULES

    return (
        FilterField(
            name="view",
            input="view",
            label="List",
            to_link=lambda f: [("view", f.view)] if f.view != "conversations" else [],
            from_link={"view": lambda v: {"view": v} if v in VIEWS else None},
            where=lambda f, d, p: None,  # what a row is, not which: the queries' business
            choices=VIEW_LABELS,
            clears=False,
            example={"view": "answers"},
        ),
        FilterField(
            name="q",
            input="text",
            label="Search questions and answers  ( / )",
            to_link=lambda f: [("q", f.q)] if f.q else [],
            from_link={"q": lambda v: {"q": v}},
            where=_search_where,
            chip=lambda f: [f"“{f.q.strip()}”"] if f.q.strip() else [],
            example={"q": "canopy"},
            picks=True,
        ),
        FilterField(
            name="tags",
            input="checkboxes",
            label="Trust level",
            to_link=lambda f: [("tag", t) for t in f.tags],
            from_link={"tag": lambda v: {"tags": (v,)} if v in FILTER_KEYS else None},
            where=_tags_where,
            chip=lambda f: [display_for_key(t).label for t in f.tags],
            repeats=True,
            example={"tags": (FILTER_KEYS[0],)},
            facet=Facet("tags", fixed=lambda f, d: [(k, "tag = ?", [k]) for k in FILTER_KEYS]),
            picks=True,
        ),
        _yes_no("rejected", "Has rejected citations", "rejected citations"),
        _yes_no("malformed", "Has malformed citations", "malformed citations"),
        _yes_no("problem", "Cut off or failed", "cut off or failed"),
        FilterField(
            name="flag_kind",
            input="radio",
            label="Flag kind",
            to_link=lambda f: [("flags", f.flag_kind)] if f.flag_kind != "collapse" else [],
            from_link={"flags": lambda v: {"flag_kind": v} if v in FLAG_KINDS else None},
            where=_flag_kind_where,
            choices=FLAG_KIND_LABELS,
            queue_only=True,
            clears=False,
            example={"flag_kind": "metric"},
        ),
        _one_of(
            "rule",
            "Reply rule",
            lambda d: d.has("failed_rules", "?"),
            lambda d: "failed_rules",
            "Any rule",
            tuple(RULES),
            "rules",
        ),  # fmt: skip
        FilterField(
            name="review",
            input="select",
            label="Review state",
            to_link=lambda f: [("review", f.review)] if f.review != "any" else [],
            from_link={"review": lambda v: {"review": v} if v in REVIEW_STATES else None},
            where=_review_where,
            chip=lambda f: [REVIEW_LABELS[f.review]] if f.review != "any" else [],
            choices=REVIEW_LABELS,
            example={"review": "unreviewed"},
            facet=Facet("review", fixed=_review_states),
        ),
        _one_of(
            "model",
            "Model",
            lambda d: "model = ?",
            lambda d: "[coalesce(model, '')]",
            "Any model",
            counts_key="models",
        ),  # fmt: skip
        _one_of(
            "tool",
            "Tool called",
            lambda d: d.has(d.tool_list(), "?"),
            lambda d: d.tool_list(),
            "Any tool",
            counts_key="tools",
        ),  # fmt: skip
        FilterField(
            name="dates",
            input="dates",
            label="Date range",
            # dates equal to the corpus' own bounds are left out (link_query)
            to_link=lambda f: [
                (k, v.isoformat()) for k, v in (("from", f.date_from), ("to", f.date_to)) if v
            ],
            from_link={
                "from": lambda v: {"date_from": _date(v)} if _date(v) else None,
                "to": lambda v: {"date_to": _date(v)} if _date(v) else None,
            },
            where=_dates_where,
            chip=lambda f: (
                [f"{f.date_from or '…'} – {f.date_to or '…'}"] if f.date_from or f.date_to else []
            ),
            example={"date_from": date(2026, 11, 1), "date_to": date(2026, 11, 30)},
        ),  # fmt: skip
        FilterField(
            name="show_done",
            input="switch",
            label="Show reviewed",
            to_link=lambda f: [("done", "1")] if f.show_done else [],
            from_link={"done": lambda v: None if _flag(v) is None else {"show_done": _flag(v)}},
            where=_done_where,
            queue_only=True,
            clears=False,
            example={"show_done": True},
        ),
    )


FILTERS: tuple[FilterField, ...] = _filters()
FILTER_BY_NAME = {f.name: f for f in FILTERS}


def sql_where(f: Filters, skip: str = "", d: Dialect = DUCKDB) -> tuple[str, list[Any]]:
    """The SQL condition and parameters for these filters over the answers table; `skip`
    leaves one filter out by name (a facet counts what choosing each of its values would
    give)."""
    clauses: list[str] = []
    params: list[Any] = []
    for entry in FILTERS:
        if entry.name == skip:
            continue
        clause = entry.where(f, d, params)
        if clause:
            clauses.append(clause)
    return (" AND ".join(clauses) or "TRUE"), params


def review_clause(f: Filters, params: list[Any], d: Dialect = DUCKDB) -> str:
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
