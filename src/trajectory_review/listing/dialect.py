"""The SQL the list queries are written in, for the two engines that run them: DuckDB (the
catalog of files, in this process) and ClickHouse (the catalog beside the spans).

Every query in filters.py, queries.py and queue.py is written once; where the engines
spell a thing differently the query asks its dialect. Parameters are `?` in both: the
ClickHouse cursor (listing/clickhouse.py) binds them client-side, escaped by
clickhouse-connect, never pasted in by us.
"""

from __future__ import annotations

from dataclasses import dataclass

# ClickHouse's catalog: question, answer and conversation id, lower-cased, one column
SEARCH_COLUMN = "search_text"
SEARCH_EXPRESSION = "lowerUTF8(concat(question, char(10), answer_text, char(10), conversation_id))"


@dataclass(frozen=True)
class Dialect:
    name: str
    argmax: str  # argmax(value, by)
    argmin: str
    any_value: str
    unnest: str  # one row per array element, in a SELECT list
    lag: str
    lead: str
    # a window over the whole ordered list: ClickHouse's lead needs the frame to say so
    frame: str
    # Facet counts as conditional counts in two scans (ClickHouse: each query is a scan
    # of the catalog; at 1M spans 11 queries took ~500 ms, two ~200) or a small grouped
    # query per facet (DuckDB in this process: 103 ms for those at 85k conversations,
    # 250 ms for the two scans, whose wide conditional counts it runs slower).
    one_scan_facets: bool

    def has(self, array: str, item: str) -> str:
        """`item` is an element of `array`."""
        if self.name == "clickhouse":
            return f"has({array}, {item})"
        return f"list_contains({array}, {item})"

    def length(self, array: str) -> str:
        return f"length({array})" if self.name == "clickhouse" else f"len({array})"

    def tool_list(self, column: str = "tools") -> str:
        """The comma-joined tool names as an array."""
        if self.name == "clickhouse":
            return f"splitByChar(',', {column})"
        return f"string_split({column}, ',')"

    def search(self, text: str) -> tuple[str, list[str]]:
        """The question, the answer or the conversation id holds `text`, in any case, as
        typed (`_`, `%` and `\\` are themselves): a condition and its parameters.

        ClickHouse's catalog keeps the three lower-cased in one column (SEARCH_COLUMN,
        computed as rows are written), so a search is one plain substring scan instead of
        three case-folding pattern matches; DuckDB escapes a LIKE pattern, with the ESCAPE
        clause that makes the escapes mean something (without it `run_sql` found nothing)."""
        if self.name == "clickhouse":
            return f"position({SEARCH_COLUMN}, lowerUTF8(?)) > 0", [text]
        like = "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        cols = ("question", "answer_text", "conversation_id")
        return "(" + " OR ".join(f"{c} ILIKE ? ESCAPE '\\'" for c in cols) + ")", [like] * 3

    def answer_key(self) -> str:
        """An answer as one value: the id, a unit separator, the number. The key is split
        at its last separator (the number has none), so no two answers share a key."""
        if self.name == "clickhouse":
            return "concat(conversation_id, char(31), toString(exchange))"
        return "(conversation_id || chr(31) || exchange::VARCHAR)"

    def count_distinct(self, column: str) -> str:
        if self.name == "clickhouse":
            return f"uniqExact(cityHash64({column}))"
        return f"count(DISTINCT {column})"

    def pairs(self, facet: str, array: str) -> str:
        """Each element of `array` as a [facet, element] pair (`facet` is our constant)."""
        if self.name == "clickhouse":
            return f"arrayMap(x -> ['{facet}', x], {array})"
        return f"list_transform({array}, lambda x: ['{facet}', x])"

    def concat(self, *arrays: str) -> str:
        if self.name == "clickhouse":
            return f"arrayConcat({', '.join(arrays)})"
        out = arrays[0]
        for a in arrays[1:]:
            out = f"list_concat({out}, {a})"
        return out

    def count_if(self, condition: str, distinct: str = "") -> str:
        """Rows (or distinct values of the column `distinct`) meeting the condition.

        ClickHouse counts distinct ids by their 64-bit hash: a dozen counts in one scan
        keep a dozen sets, and sets of integers cost a fraction of sets of strings (two
        ids sharing a hash among a million: about one chance in 10^7)."""
        if self.name == "clickhouse":
            if distinct:
                return f"uniqExactIf(cityHash64({distinct}), {condition})"
            return f"countIf({condition})"
        what = f"DISTINCT {distinct}" if distinct else "*"
        return f"count({what}) FILTER (WHERE {condition})"

    def period(self, grain: str, column: str = "day") -> str:
        """The day or the (Monday-started) week a date falls in."""
        if self.name == "clickhouse":
            return f"toMonday({column})" if grain == "week" else f"toDate({column})"
        return f"date_trunc('{'week' if grain == 'week' else 'day'}', {column})"


DUCKDB = Dialect(
    name="duckdb",
    argmax="arg_max",
    argmin="arg_min",
    any_value="any_value",
    unnest="unnest",
    lag="lag",
    lead="lead",
    frame="",
    one_scan_facets=False,
)
CLICKHOUSE = Dialect(
    name="clickhouse",
    argmax="argMax",
    argmin="argMin",
    any_value="any",
    unnest="arrayJoin",
    lag="lagInFrame",
    lead="leadInFrame",
    frame=" ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING",
    one_scan_facets=True,
)
