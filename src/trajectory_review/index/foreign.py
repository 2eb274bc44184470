"""The index's step for other recorders' model calls: each marked span (the scan's
`foreign_call`, sources/conventions.py) handed to its convention's reader, and what the
reader finds written back as the GenAI conventions' columns, so every later step, the
model and the replay see one shape. A span no reader can read keeps its mark and is
counted, and said, by convention.

Shared by both index engines: the DuckDB build runs `read_foreign` on its scan; the
ClickHouse index calls `read_call` on the rows it fetched."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import duckdb
import orjson

from trajectory_review.index.rows import decode_any_value
from trajectory_review.sources.conventions import BY_NAME
from trajectory_review.sources.readers import Events, Read

# Spans handed to the readers per fetch: an OpenInference corpus is nothing but such
# spans, each with its whole history; fetched at once they were all in memory together.
BATCH = 2_000

# Where recorders keep a call's model, provider and token counts, first found first: the
# scan reads the conventions' own names on chat spans only, and most marked spans are not.
FACTS = {
    "model": ("gen_ai.request.model", "llm.model_name", "gen_ai.response.model"),
    "provider": ("gen_ai.provider.name", "gen_ai.system", "llm.provider", "llm.system"),
    "input_tokens": (
        "gen_ai.usage.input_tokens",
        "llm.token_count.prompt",
        "gen_ai.usage.prompt_tokens",
    ),
    "output_tokens": (
        "gen_ai.usage.output_tokens",
        "llm.token_count.completion",
        "gen_ai.usage.completion_tokens",
    ),
}


@dataclass(frozen=True)
class ReadCall:
    """A marked span's content as the index stores a chat span's (JSON text)."""

    input_messages: str | None
    output_messages: str | None
    system_instructions: str | None
    model: str | None
    provider: str | None
    input_tokens: int | None
    output_tokens: int | None


def _value(v: Any) -> Any:
    """An AnyValue as DuckDB or ClickHouse hands it back, as a plain value."""
    if isinstance(v, dict):
        v = {k: x for k, x in v.items() if x is not None}
        for kind in ("arrayValue", "kvlistValue"):
            if isinstance(v.get(kind), str):  # DuckDB's JSON columns come back as text
                try:
                    v[kind] = orjson.loads(v[kind])
                except orjson.JSONDecodeError:
                    v[kind] = None
    return decode_any_value(v)


def otlp_attributes(items: Any) -> dict[str, Any]:
    """OTLP/JSON attributes ([{key, value}]) by key; the first of a key counts, as the
    scan's lookups."""
    out: dict[str, Any] = {}
    for a in items if isinstance(items, list) else ():
        if isinstance(a, dict) and isinstance(a.get("key"), str) and a["key"] not in out:
            out[a["key"]] = _value(a.get("value"))
    return out


def otlp_events(items: Any) -> Events:
    return [
        (str(e.get("name")), otlp_attributes(e.get("attributes")))
        for e in (items if isinstance(items, list) else ())
        if isinstance(e, dict)
    ]


def _dumps(value: list[Any]) -> str | None:
    if not value:
        return None
    try:
        return orjson.dumps(value).decode()
    except TypeError:  # integers beyond 64 bits
        import json

        return json.dumps(value, ensure_ascii=False)


def _first(attrs: dict[str, Any], keys: tuple[str, ...]) -> Any:
    return next((attrs[k] for k in keys if attrs.get(k) is not None), None)


def _count(value: Any) -> int | None:
    try:
        n = int(value)
    except (TypeError, ValueError):
        return None
    return n if -(2**63) <= n < 2**63 else None


def read_call(convention: str, attrs: dict[str, Any], events: Events) -> ReadCall | None:
    """A marked span's content, or None when its convention has no reader or the reader
    finds no message (the span is then said, not shown)."""
    c = BY_NAME.get(convention)
    if c is None or c.read is None:
        return None
    try:
        read: Read | None = c.read(attrs, events)
    except (TypeError, ValueError, AttributeError, KeyError, RecursionError):
        read = None  # a value shaped unlike the recorder's: said, never raised
    if read is None:
        return None
    model = read.model or _first(attrs, FACTS["model"])
    provider = _first(attrs, FACTS["provider"])
    return ReadCall(
        input_messages=_dumps(read.input_messages),
        output_messages=_dumps(read.output_messages),
        system_instructions=_dumps(read.system_instructions),
        model=model if isinstance(model, str) else None,
        provider=provider if isinstance(provider, str) else None,
        input_tokens=_count(_first(attrs, FACTS["input_tokens"])),
        output_tokens=_count(_first(attrs, FACTS["output_tokens"])),
    )


def _batches(con: duckdb.DuckDBPyConnection) -> Iterator[list[tuple[Any, ...]]]:
    cur = con.execute(
        "SELECT rowid, foreign_call, foreign_raw FROM spans WHERE foreign_raw IS NOT NULL"
    )
    while rows := cur.fetchmany(BATCH):
        yield rows


def _read_rows(rows: Iterable[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    out = []
    for rowid, convention, raw in rows:
        try:
            doc = orjson.loads(raw)
            attrs, events = otlp_attributes(doc.get("attributes")), otlp_events(doc.get("events"))
            call = read_call(convention, attrs, events)
        except (orjson.JSONDecodeError, RecursionError):
            # a value nested past what can be read: this span is said as unread, the
            # rest of the traces load
            continue
        if call is not None:
            out.append((rowid, *(getattr(call, f) for f in ReadCall.__dataclass_fields__)))
    return out


def read_foreign(con: duckdb.DuckDBPyConnection) -> None:
    """Every marked span of the scan read by its convention's reader: a span read becomes
    a chat span with the conventions' columns; the raw attributes kept for this step are
    dropped either way."""
    found: list[tuple[Any, ...]] = []
    for rows in _batches(con):
        found.extend(_read_rows(rows))
    if found:
        # handed over as a frame: DuckDB's executemany inserts a row at a time. pandas
        # imported here only: lint on GenAI traces starts without it (tests/rules/test_qa.py)
        import pandas as pd

        frame = pd.DataFrame(found, columns=["rid", *ReadCall.__dataclass_fields__])
        frame = frame.astype({"input_tokens": "Int64", "output_tokens": "Int64"})
        con.register("foreign_frame", frame)
        con.execute("CREATE TEMP TABLE foreign_read AS SELECT * FROM foreign_frame")
        con.unregister("foreign_frame")
        con.execute(
            """
            UPDATE spans SET is_chat = true, no_messages = false, foreign_call = NULL,
                   input_messages = r.input_messages, output_messages = r.output_messages,
                   system_instructions = r.system_instructions,
                   model = coalesce(spans.model, r.model),
                   provider = coalesce(spans.provider, r.provider),
                   input_tokens = coalesce(spans.input_tokens, r.input_tokens),
                   output_tokens = coalesce(spans.output_tokens, r.output_tokens),
                   is_title = false
            FROM foreign_read r WHERE spans.rowid = r.rid
            """
        )
        con.execute("DROP TABLE foreign_read")
    con.execute("UPDATE spans SET foreign_raw = NULL WHERE foreign_raw IS NOT NULL")
