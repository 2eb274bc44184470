"""The SQL the list queries are written in, for the two engines that run them: DuckDB (the
catalog of files, in this process) and ClickHouse (the catalog beside the spans).

Every query in filters.py, queries.py and queue.py is written once; where the engines
spell a thing differently the query asks its dialect. Parameters are `?` in both: the
ClickHouse cursor (listing/clickhouse.py) binds them client-side, escaped by
clickhouse-connect, never pasted in by us.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

# ClickHouse's catalog: question, answer and conversation id, lower-cased, one column
SEARCH_COLUMN = "search_text"
SEARCH_EXPRESSION = "lowerUTF8(concat(question, char(10), answer_text, char(10), conversation_id))"


class Dialect(ABC):
    name: str
    argmax: str  # argmax(value, by)
    argmin: str
    any_value: str
    unnest: str  # one row per array element, in a SELECT list
    lag: str
    lead: str
    # a window over the whole ordered list: ClickHouse's lead needs the frame to say so
    frame: str

    # a catalog column's type for each kind of answer_rows.COLUMN_KINDS
    column_types: dict[str, str]

    def columns(self, kinds: dict[str, str]) -> str:
        """Column definitions (`name type, …`) for a table of these columns."""
        return ", ".join(f"{name} {self.column_types[kind]}" for name, kind in kinds.items())

    @abstractmethod
    def has(self, array: str, item: str) -> str:
        """`item` is an element of `array`."""

    @abstractmethod
    def length(self, array: str) -> str: ...

    @abstractmethod
    def tool_list(self, column: str = "tools") -> str:
        """The comma-joined tool names as an array."""

    @abstractmethod
    def search(self, text: str) -> tuple[str, list[str]]:
        """The question, the answer or the conversation id holds `text`, in any case, as
        typed (`_`, `%` and `\\` are themselves): a condition and its parameters."""

    @abstractmethod
    def answer_key(self) -> str:
        """An answer as one value: the id, a unit separator, the number. The key is split
        at its last separator (the number has none), so no two answers share a key."""

    @abstractmethod
    def count_distinct(self, column: str) -> str: ...

    @abstractmethod
    def count_if(self, condition: str, distinct: str = "") -> str:
        """Rows (or distinct values of the column `distinct`) meeting the condition."""

    @abstractmethod
    def period(self, grain: str, column: str = "day") -> str:
        """The day or the (Monday-started) week a date falls in."""


class DuckDBDialect(Dialect):
    name = "duckdb"
    argmax, argmin, any_value, unnest = "arg_max", "arg_min", "any_value", "unnest"
    lag, lead, frame = "lag", "lead", ""
    column_types = {
        "text": "VARCHAR", "long text": "VARCHAR", "text or null": "VARCHAR", "int": "BIGINT",
        "bool": "BOOLEAN", "date": "DATE", "texts": "VARCHAR[]",
    }  # fmt: skip

    def has(self, array: str, item: str) -> str:
        return f"list_contains({array}, {item})"

    def length(self, array: str) -> str:
        return f"len({array})"

    def tool_list(self, column: str = "tools") -> str:
        return f"string_split({column}, ',')"

    def search(self, text: str) -> tuple[str, list[str]]:
        # a LIKE pattern escaped, with the ESCAPE clause that makes the escapes mean
        # something (without it `run_sql` found nothing)
        like = "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        cols = ("question", "answer_text", "conversation_id")
        return "(" + " OR ".join(f"{c} ILIKE ? ESCAPE '\\'" for c in cols) + ")", [like] * 3

    def answer_key(self) -> str:
        return "(conversation_id || chr(31) || exchange::VARCHAR)"

    def count_distinct(self, column: str) -> str:
        return f"count(DISTINCT {column})"

    def count_if(self, condition: str, distinct: str = "") -> str:
        what = f"DISTINCT {distinct}" if distinct else "*"
        return f"count({what}) FILTER (WHERE {condition})"

    def period(self, grain: str, column: str = "day") -> str:
        return f"date_trunc('{'week' if grain == 'week' else 'day'}', {column})"


class ClickHouseDialect(Dialect):
    name = "clickhouse"
    argmax, argmin, any_value, unnest = "argMax", "argMin", "any", "arrayJoin"
    lag, lead = "lagInFrame", "leadInFrame"
    frame = " ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING"
    column_types = {
        "text": "String", "long text": "String CODEC(ZSTD(3))",
        "text or null": "Nullable(String)", "int": "Int64", "bool": "Bool", "date": "Date32",
        "texts": "Array(String)",
    }  # fmt: skip

    def has(self, array: str, item: str) -> str:
        return f"has({array}, {item})"

    def length(self, array: str) -> str:
        return f"length({array})"

    def tool_list(self, column: str = "tools") -> str:
        return f"splitByChar(',', {column})"

    def search(self, text: str) -> tuple[str, list[str]]:
        # the catalog keeps the three lower-cased in one column (SEARCH_COLUMN, computed
        # as rows are written): one plain substring scan, not three case-folding matches
        return f"position({SEARCH_COLUMN}, lowerUTF8(?)) > 0", [text]

    def answer_key(self) -> str:
        return "concat(conversation_id, char(31), toString(exchange))"

    def count_distinct(self, column: str) -> str:
        return f"uniqExact(cityHash64({column}))"

    def count_if(self, condition: str, distinct: str = "") -> str:
        # distinct ids counted by their 64-bit hash: a dozen counts in one scan keep a
        # dozen sets, and sets of integers cost a fraction of sets of strings (two ids
        # sharing a hash among a million: about one chance in 10^7)
        if distinct:
            return f"uniqExactIf(cityHash64({distinct}), {condition})"
        return f"countIf({condition})"

    def period(self, grain: str, column: str = "day") -> str:
        return f"toMonday({column})" if grain == "week" else f"toDate({column})"


DUCKDB: Dialect = DuckDBDialect()
CLICKHOUSE: Dialect = ClickHouseDialect()
