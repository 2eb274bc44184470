"""The counts beside the filters: each value of each facet (filters.Facet, declared on its
filter's entry) counted under every other filter (the facet's own left out), so a count
says what choosing that value would give.

The two ways of counting them both loop over FACETS once; each
engine's catalog picks the one it answers fastest (docs/performance-log.md, "facet
counts"): DuckDB, in this process, `counts_by_query`; ClickHouse, where every query is a
scan, `counts_in_scans`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from trajectory_review.listing.filters import FILTERS, Facet, Filters

if TYPE_CHECKING:
    from trajectory_review.listing.queries import Catalog

Counts = dict[str, dict[str, int]]

# Every filter that counts its values, with the filter it leaves out while counting them
# (its own): from the one table of filters, so a new facet is a `facet` on its entry.
FACETS: tuple[tuple[str, Facet], ...] = tuple((e.name, e.facet) for e in FILTERS if e.facet)


def _counts_answers(f: Filters) -> bool:
    """What a count counts: answers in the answer views, conversations in the other."""
    return f.view in ("answers", "flagged")


def _unit(catalog: Catalog, f: Filters) -> str:
    if _counts_answers(f):
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


# (facet key, value, condition, the condition's parameters): a fixed facet's value
Fixed = tuple[str, str, str, list[Any]]
# (facet key, array of each answer's values, the array's parameters): an open facet
Open = tuple[str, str, list[Any]]


def counts_in_scans(catalog: Catalog, f: Filters) -> Counts:
    """Every count of a filter state in as few scans of the catalog as answer it fastest
    (ClickHouse, where each query is a scan). A search is applied once, in a subquery
    (no facet leaves it out): it is a pass over the text of every answer.

    - Counting answers, one scan: each fixed value a conditional count, each open facet
      a `sumMap` of its values.
    - Counting conversations, the open facets' values are unrolled (`ARRAY JOIN`) and
      the distinct conversations counted per facet and value (`GROUPING SETS`). Under a
      search the fixed facets are unrolled and counted with them, in the same scan;
      otherwise they are distinct conditional counts in a scan of their own, which takes
      less than unrolling them.
    Unrolled as (facet, value) pairs grouped in one column, the open facets took twice
    as long (docs/performance-log.md, "Third session of #50")."""
    d = catalog.dialect
    source, searched = "answers", list[Any]()
    if f.q.strip():
        where, searched = catalog.where(Filters(q=f.q))
        source, f = f"(SELECT * FROM answers WHERE {where}) AS searched", replace(f, q="")
    fixed: list[Fixed] = []
    opened: list[Open] = []
    where, p = catalog.where(f)
    fixed.append(("total", "all", where, p))  # what the list holds (Catalog.page)
    for skip, facet in FACETS:
        where, p = catalog.where(f, skip=skip)
        if facet.fixed is not None:
            for value, cond, more in facet.fixed(f, d):
                fixed.append((facet.key, value, f"({where}) AND {cond}", p + more))
        elif facet.values is not None:
            opened.append((facet.key, f"if({where}, {facet.values(d)}, [])", p))
    out: Counts = {}
    for key, value, _, _ in fixed:
        out.setdefault(key, {})[value] = 0
    out |= {key: {} for key, _, _ in opened}
    if _counts_answers(f):
        # an open facet's array is named (`AS`) to be used twice, its parameters bound once
        sums = [f"sumMap({a} AS o{i}, arrayMap(v -> toUInt64(1), o{i}))"
                for i, (_, a, _) in enumerate(opened)]  # fmt: skip
        counts = [d.count_if(c) for _, _, c, _ in fixed]
        row = catalog.first(
            f"SELECT {', '.join(counts + sums)} FROM {source}",
            [x for *_, p in [*fixed, *opened] for x in p] + searched,
        )
        _add_fixed(out, fixed, row[: len(fixed)])
        for (key, _, _), (values, ns) in zip(opened, row[len(fixed) :], strict=True):
            out[key].update((str(v), int(n)) for v, n in zip(values, ns, strict=True) if v)
        return out
    if not searched:
        row = catalog.first(
            f"SELECT {', '.join(d.count_if(c, 'conversation_id') for _, _, c, _ in fixed)} "
            "FROM answers",
            [x for *_, p in fixed for x in p],
        )
        _add_fixed(out, fixed, row)
        fixed = []
    _count_unrolled(catalog, out, [*_as_array(fixed), *opened], source, searched)
    return out


def _add_fixed(out: Counts, fixed: list[Fixed], counts: Sequence[Any]) -> None:
    for (key, value, _, _), n in zip(fixed, counts, strict=True):
        out[key][value] = int(n or 0)


# Joins a fixed facet's key to a value in the one array of them all (_as_array): our
# names on both sides, neither of which holds it.
KEY_VALUE = "\x1f"


def _as_array(fixed: list[Fixed]) -> list[Open]:
    """The fixed facets as one array: the `key, KEY_VALUE, value` of every value whose
    condition holds for the answer (one grouping set for them all, not one per facet:
    each set aggregates every row)."""
    if not fixed:
        return []
    items, params = [], []
    for key, value, cond, p in fixed:
        items.append(f"if({cond}, ?, '')")
        params += [*p, f"{key}{KEY_VALUE}{value}"]
    return [("", f"arrayFilter(v -> v <> '', [{', '.join(items)}])", params)]


def _count_unrolled(
    catalog: Catalog, out: Counts, arrays: list[Open], source: str, searched: list[Any]
) -> None:
    """Distinct conversations per facet and value: each answer one row per value of its
    longest array (the shorter ones padded with '', which counts nowhere), a grouping
    set per array."""
    names = [f"f{i}" for i in range(len(arrays))]
    joined = ", ".join(f"{a} AS {n}" for (_, a, _), n in zip(arrays, names, strict=True))
    rows = catalog.rows(
        f"SELECT {', '.join(names)}, {catalog.dialect.count_distinct('conversation_id')} "
        f"FROM {source} ARRAY JOIN {joined} "
        f"GROUP BY GROUPING SETS ({', '.join(f'({n})' for n in names)}) "
        "SETTINGS enable_unaligned_array_join = 1",
        # the search's subquery comes before the ARRAY JOIN
        searched + [x for _, _, p in arrays for x in p],
    )
    for *values, n in rows:
        # a row of one set holds its value in that set's column and '' in every other
        for (key, _, _), v in zip(arrays, values, strict=True):
            if v:
                if not key:  # the fixed facets' array
                    key, _, v = v.partition(KEY_VALUE)
                out[key][str(v)] = int(n)
                break
