"""The counts beside the filters: each value of each facet (filters.Facet, declared on its
filter's entry) counted under every other filter (the facet's own left out), so a count
says what choosing that value would give.

The two ways of counting them both loop over FACETS once; each
engine's catalog picks the one it answers fastest (docs/performance-log.md, "facet
counts"): DuckDB, in this process, `counts_by_query`; ClickHouse, where every query is a
scan, `counts_in_scans`."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from trajectory_review.listing.filters import FILTERS, Facet, Filters

if TYPE_CHECKING:
    from trajectory_review.listing.queries import Catalog

Counts = dict[str, dict[str, int]]

# Every filter that counts its values, with the filter it leaves out while counting them
# (its own): from the one table of filters, so a new facet is a `facet` on its entry.
FACETS: tuple[tuple[str, Facet], ...] = tuple((e.name, e.facet) for e in FILTERS if e.facet)


def _unit(catalog: Catalog, f: Filters) -> str:
    """What a count counts: answers in the answer views, conversations in the other."""
    if f.view in ("answers", "flagged"):
        return "count(*)"
    return catalog.dialect.count_distinct("conversation_id")


def counts_by_query(catalog: Catalog, f: Filters) -> Counts:
    """A small query per fixed facet value, and one grouped query per open facet."""
    d, unit = catalog.dialect, _unit(catalog, f)

    def one(sql: str, params: list[Any]) -> int:
        return int(catalog.first(sql, params)[0] or 0)

    where, params = catalog.where(f)
    out = {"total": {"all": one(f"SELECT {unit} FROM answers WHERE {where}", params)}}
    for skip, facet in FACETS:
        where, params = catalog.where(f, skip=skip)
        if facet.fixed is not None:
            out[facet.key] = {
                value: one(f"SELECT {unit} FROM answers WHERE {where} AND {cond}", params + p)
                for value, cond, p in facet.fixed(f, d)
            }
        elif facet.values is not None:
            rows = catalog.rows(
                f"SELECT v, {unit} FROM (SELECT *, {d.unnest}({facet.values(d)}) AS v "
                f"FROM answers WHERE {where}) WHERE v IS NOT NULL AND v <> '' GROUP BY v",
                params,
            )
            out[facet.key] = {str(k): int(n) for k, n in rows}
    return out


def counts_in_scans(catalog: Catalog, f: Filters) -> Counts:
    """Two scans for every count: the fixed facets' values as conditional counts in one;
    the open facets' (facet, value) pairs, each answer's under the other filters, counted
    in the other. The search is applied once, in a subquery (no facet leaves it out),
    instead of once per count (a dozen text scans per row)."""
    d, unit = catalog.dialect, _unit(catalog, f)
    source, searched = "answers", list[Any]()
    if f.q.strip():
        where, searched = catalog.where(Filters(q=f.q))
        source, f = f"(SELECT * FROM answers WHERE {where}) AS searched", replace(f, q="")
    counts: list[tuple[str, str, str]] = []  # (facet, value, condition)
    params: list[Any] = []
    where, p = catalog.where(f)
    counts.append(("total", "all", where))  # what the list holds (Catalog.page)
    params += p
    for skip, facet in FACETS:
        if facet.fixed is not None:
            where, p = catalog.where(f, skip=skip)
            for value, cond, more in facet.fixed(f, d):
                counts.append((facet.key, value, f"({where}) AND {cond}"))
                params += p + more
    distinct = "conversation_id" if unit != "count(*)" else ""
    row = catalog.first(
        "SELECT " + ", ".join(d.count_if(c, distinct) for _, _, c in counts) + f" FROM {source}",
        params + searched,
    )
    out: Counts = {}
    for (key, value, _), n in zip(counts, row, strict=True):
        out.setdefault(key, {})[value] = int(n or 0)
    parts, params = [], []
    for skip, facet in FACETS:
        if facet.values is not None:
            where, p = catalog.where(f, skip=skip)
            parts.append(
                f"CASE WHEN {where} THEN {d.pairs(facet.key, facet.values(d))} ELSE [] END"
            )
            params += p
            out[facet.key] = {}
    for key, value, n in catalog.rows(
        f"SELECT fv[1] AS facet, fv[2] AS value, {unit} AS n FROM (SELECT conversation_id, "
        f"{d.unnest}({d.concat(*parts)}) AS fv FROM {source}) WHERE fv[2] <> '' "
        "GROUP BY fv[1], fv[2]",
        params + searched,
    ):
        out[key][str(value)] = int(n)
    return out
