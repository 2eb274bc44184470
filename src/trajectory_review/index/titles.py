"""Title calls: shinychat asks the model for a conversation's title in a call of its own,
whose system instructions begin with the titler's prompt. They are no conversation a
reviewer wants, and every reader leaves them out.

One rule, written once here for the three places that apply it: the file index's ingest
(DuckDB SQL), the ClickHouse lookup (ClickHouse SQL), and the resolver of fetched spans
(Python). `tests/index/test_titles.py` runs the same cases through all three.

The instructions are a title call when, after leading blanks, either the first
message's `content` of a JSON array of messages begins with the prompt, or the whole
text does (instructions recorded as plain text). An arrayValue attribute is not JSON
text and never matches.
"""

from __future__ import annotations

import json

TITLE_PREFIX = "You title chat conversations."
# Leading blanks skipped before the prompt: the same set in every engine (DuckDB's ltrim
# and ClickHouse's trimLeft take spaces only unless told).
_BLANKS = " \t\r\n"


def is_title(instructions: str | None) -> bool:
    """Python: the resolver of spans fetched from ClickHouse."""
    if instructions is None:
        return False
    if instructions.lstrip(_BLANKS).startswith(TITLE_PREFIX):
        return True
    if TITLE_PREFIX not in instructions and "\\u" not in instructions:
        # no JSON escape spells a letter of the prompt but \uXXXX: text without the
        # prompt and without one cannot hold it once parsed, and every chat span's
        # instructions were parsed whole to find that out
        return False
    try:
        first = json.loads(instructions)[0]["content"]
    except (ValueError, LookupError, TypeError, RecursionError):
        return False
    return isinstance(first, str) and first.lstrip(_BLANKS).startswith(TITLE_PREFIX)


def duckdb_macro() -> str:
    """DuckDB: `title_call(t)`, a macro the ingest creates on its connection."""
    blanks = "chr(32) || chr(9) || chr(13) || chr(10)"
    return (
        "CREATE TEMP MACRO title_call(t) AS coalesce("
        f"starts_with(ltrim(try(json_extract_string(t, '$[0].content')), {blanks}), "
        f"'{TITLE_PREFIX}'), "
        f"starts_with(ltrim(t, {blanks}), '{TITLE_PREFIX}'), false)"
    )


def clickhouse_condition(instructions: str) -> str:
    """ClickHouse: true when the expression `instructions` (a String) is a title call."""

    def starts(expr: str) -> str:
        return f"startsWith(trimLeft({expr}, ' \\t\\r\\n'), '{TITLE_PREFIX}')"

    return (
        f"({starts(f'JSONExtractString({instructions}, 1, {chr(39)}content{chr(39)})')} "
        f"OR {starts(instructions)})"
    )
