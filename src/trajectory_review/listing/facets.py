"""The counts beside the filters: one entry per facet, each value counted under every other
filter (the facet's own left out), so a count says what choosing that value would give.

A facet is either fixed (its values known ahead, each with an SQL condition) or open (its
values are whatever the answers hold: an array expression of each answer's values). Both
engines' count queries (queries.Catalog) loop over FACETS once; a new facet is one entry."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from trajectory_review.listing.dialect import Dialect
from trajectory_review.listing.filters import FILTERS, Filters, review_clause
from trajectory_review.model.provenance import FILTER_KEYS

# (value, condition, its parameters)
Condition = tuple[str, str, list]


@dataclass(frozen=True)
class Facet:
    key: str  # the counts' key, read by the sidebar
    skip: str  # the filter (listing/filters.FILTERS) left out while counting it
    fixed: Callable[[Filters, Dialect], list[Condition]] | None = None
    values: Callable[[Dialect], str] | None = None  # open: each answer's values, an array


def _review_states(f: Filters, d: Dialect) -> list[Condition]:
    out = []
    for state in ("flagged", "noted", "reviewed", "unreviewed"):
        params: list = []
        out.append((state, review_clause(replace(f, review=state), params, d), params))
    return out


def _yes_no(name: str) -> Facet:
    return Facet(name, name, fixed=lambda f, d: [("yes", f"{name} > 0", [])])


FACETS: tuple[Facet, ...] = (
    Facet("tags", "tags", fixed=lambda f, d: [(k, "tag = ?", [k]) for k in FILTER_KEYS]),
    *[_yes_no(e.name) for e in FILTERS if e.input == "checkbox"],
    Facet("review", "review", fixed=_review_states),
    Facet("rules", "rule", values=lambda d: "failed_rules"),
    Facet("models", "model", values=lambda d: "[coalesce(model, '')]"),
    Facet("tools", "tool", values=lambda d: d.tool_list()),
)
