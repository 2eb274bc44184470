"""The rows an index hands the model: plain dataclasses, importable without DuckDB or
pandas (worker processes that replay conversations import them, and start faster)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import msgspec

# How an index stores an attribute's value (the payloads, the tag, the candidates, the
# finish reasons, the error type): a string value as the string itself, anything else
# (an array or key-value list, a number, a string that itself begins with the mark) as
# STRUCTURED_MARK followed by its OTLP/JSON AnyValue. Stored as the AnyValue JSON of
# every value, each history was written back out as JSON and escaped once more while the
# traces were scanned (a tenth of a million-span scan), and parsed twice when read.
STRUCTURED_MARK = "\x1e"  # ASCII record separator: no JSON text starts with it


def stored_attribute(any_value: Any) -> str:
    """An attribute's decoded OTLP/JSON AnyValue as an index stores it."""
    if isinstance(any_value, dict) and set(any_value) == {"stringValue"}:
        text = any_value["stringValue"]
        if isinstance(text, str) and not text.startswith(STRUCTURED_MARK):
            return text
    return STRUCTURED_MARK + json.dumps(any_value, separators=(",", ":"), ensure_ascii=False)


def decode_any_value(value: Any) -> Any:
    """An OTLP AnyValue object as a plain Python value."""
    if not isinstance(value, dict):
        return value
    if "stringValue" in value:
        return value["stringValue"]
    if "boolValue" in value:
        return bool(value["boolValue"])
    if "intValue" in value:
        try:
            return int(value["intValue"])
        except (TypeError, ValueError):
            return value["intValue"]
    if "doubleValue" in value:
        return value["doubleValue"]
    if "arrayValue" in value:
        return [decode_any_value(v) for v in (value["arrayValue"] or {}).get("values") or []]
    if "kvlistValue" in value:
        return {
            kv.get("key"): decode_any_value(kv.get("value"))
            for kv in (value["kvlistValue"] or {}).get("values") or []
            if isinstance(kv, dict)
        }
    if "bytesValue" in value:
        return value["bytesValue"]
    return None


class ChatRow(msgspec.Struct, frozen=True, gc=False):
    """One chat span as the index stores it; attributes in their stored form (above)."""

    conversation_id: str
    trace_id: str
    span_id: str
    start_ns: int
    end_ns: int
    turn_span_id: str | None
    input_messages: str | None
    output_messages: str | None
    system_instructions: str | None
    model: str | None
    provider: str | None
    input_tokens: int | None
    output_tokens: int | None
    turn: TurnRow | None = None  # the turn span holding this call's record, if any
    finish_reasons: str | None = None  # gen_ai.response.finish_reasons, stored
    status_code: str | None = None  # the span's status code ("2" / "STATUS_CODE_ERROR")
    status_message: str | None = None
    error_type: str | None = None  # error.type, stored


class TurnRow(msgspec.Struct, frozen=True, gc=False):
    trace_id: str
    span_id: str
    tag: str | None  # commons.provenance.tag, stored (None when absent)
    candidates: str | None  # commons.citation.candidates, stored


# A chat row packed as a plain tuple, in the order the DuckDB index selects its columns:
# (conversation_id, trace_id, span_id, start_ns, end_ns, turn_span_id, input_messages,
#  output_messages, system_instructions, model, provider, input_tokens, output_tokens,
#  has_turn, turn_tag, turn_candidates, finish_reasons, status_code, status_message,
#  error_type, [start_ns, end_ns] when either does not fit 64 bits (and start_ns and
#  end_ns then None; store._WHOLE)). Rows cross to worker processes packed: building,
# pickling and unpickling the dataclasses in the parent cost twice what the tuples do, on
# the path to the list (docs/performance-log.md, **packed rows**).
PackedRow = tuple[Any, ...]
# what an index streams: packed (DuckDB, whose rows go to the workers as they are) or
# resolved already (ClickHouse); chat_row makes a ChatRow of either
RawRow = PackedRow | ChatRow


class SpanRows(msgspec.Struct, frozen=True, gc=False):
    """A conversation's spans as a ClickHouse source stores them (index/resolve.py's
    READ_COLUMNS), not yet resolved to chat rows: an index that streams them for a bulk
    replay leaves the resolving to the process that replays them. Resolved in the process
    that fetched them, every conversation of a new store was resolved on one core while
    the workers waited (docs/performance-log.md, "Twice as fast on the hot path")."""

    spans: tuple[tuple[Any, ...], ...]

    def resolve(self, conversation_id: str) -> list[ChatRow]:
        from trajectory_review.index.resolve import resolve  # only a ClickHouse replay

        return resolve(self.spans).get(conversation_id, [])


# What an index streams for one conversation (Index.iter_chat_rows): its rows, or its
# spans to resolve (SpanRows).
StreamedRows = Sequence[RawRow] | SpanRows


def resolved(conversation_id: str, rows: StreamedRows) -> list[ChatRow]:
    """A conversation's chat rows from what an index streamed for it."""
    if isinstance(rows, SpanRows):
        return rows.resolve(conversation_id)
    return [chat_row(r) for r in rows]


def message_bytes(rows: StreamedRows) -> int:
    """How much message text a conversation's rows carry (what its replay reads); 0 for
    spans not resolved yet (SpanRows)."""
    if isinstance(rows, SpanRows):
        return 0
    total = 0
    for r in rows:
        if isinstance(r, ChatRow):
            inp, out = r.input_messages, r.output_messages
        else:
            inp, out = r[6], r[7]
        total += len(inp or "") + len(out or "")
    return total


def chat_row(r: RawRow) -> ChatRow:
    """A chat row from its packed tuple (a ChatRow is returned as it is)."""
    if isinstance(r, ChatRow):
        return r
    turn = TurnRow(r[1], r[5], r[14], r[15]) if r[13] else None
    start, end = r[20] or (r[3], r[4])
    # by position, in ChatRow's field order: made for every chat span of every replay, by
    # keyword it was a cost of its own (docs/performance-log.md, "Fifth session of #50")
    return ChatRow(
        r[0], r[1], r[2], int(start), int(end), r[5], r[6], r[7], r[8], r[9], r[10], r[11],
        r[12], turn, r[16], r[17], r[18], r[19],
    )  # fmt: skip
