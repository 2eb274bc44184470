"""Chat rows from the few spans of a handful of traces, as ClickHouse returns them.

The file index resolves chat spans in SQL over millions of lines (index/ingest.py). A
ClickHouse source hands over only the traces of the conversations asked for, and running
that ingest on a scratch DuckDB for each one cost most of an open's budget
(docs/performance-log.md, "resolving in Python"); this is the same rule, walked in
Python over a dict:

- a model call is a span whose `gen_ai.operation.name` is an inference operation, and not
  a title call (its system instructions start with the title prompt);
- its conversation is the first `gen_ai.conversation.id` walking up from the span itself,
  else its trace; its record is the nearest `commons_conversation_turn` above it; the
  walk stops after MAX_ANCESTORS parents (or a cycle);
- each (trace, span) once.

`tests/index/test_clickhouse.py` pins it to the ingest: every chat row of every shipped
conversation, loaded into ClickHouse, equals the file index's.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import compress, repeat
from operator import is_not
from typing import Any

from trajectory_review.index.foreign import ReadCall, read_call
from trajectory_review.index.rows import (
    STRUCTURED_MARK,
    ChatRow,
    TurnRow,
    decode_any_value,
    stored_attribute,
)
from trajectory_review.index.scan import (
    INFERENCE_OPERATIONS,
    MAX_ANCESTORS,
    PROVENANCE_SPAN,
    TURN_SPAN,
)
from trajectory_review.index.titles import is_title
from trajectory_review.sources.clickhouse_spans import (
    ARRAY_ATTRIBUTES,
    ATTRIBUTES,
    any_value,
    status_fields,
)
from trajectory_review.sources.conventions import convention_of, session_of

INPUT, OUTPUT, SYSTEM = (
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.system_instructions",
)


def _read_marked(span: _Span, chat: bool) -> ReadCall | None:
    """Another recorder's model call read by its convention's reader, as the file index
    does after its scan (index/foreign.py): a span with no messages of the conventions,
    of no other operation, marked by a convention's keys or (a chat span) events."""
    if not span.marked and not span.events:
        return None
    if INPUT in span.attrs or OUTPUT in span.attrs:
        return None
    if not chat and "gen_ai.operation.name" in span.attrs:
        return None  # a tool's or an agent's span, whatever keys it carries
    name = convention_of(span.marked, (n for n, _ in span.events), chat)
    if name is None:
        return None
    attrs = {k: decode_any_value(any_value(k, v)) for k, v in span.marked.items()}
    events = [(str(n), dict(a or {})) for n, a in span.events]
    try:
        return read_call(name, attrs, events)
    except RecursionError:  # nested past what can be written back: this span unread
        return None


_NONES = repeat(None)
_NO_MAP: dict[str, str] = {}


class _Span:
    __slots__ = (
        "trace", "id", "parent", "name", "start", "end", "status", "message", "attrs",
        "marked", "events",
    )  # fmt: skip

    def __init__(self, row: tuple[Any, ...]) -> None:
        start, self.trace, self.id, parent, self.name, _kind, duration = row[:7]
        self.status, self.message = row[7], row[8]
        values = row[10 : 10 + len(ATTRIBUTES)]
        # the attributes the span has, picked in C: a comprehension over every column of
        # every span weighed on resolving a new store's spans (docs/performance-log.md,
        # "Twice as fast on the hot path")
        pairs = zip(ATTRIBUTES, values, strict=True)
        self.attrs = dict(compress(pairs, map(is_not, values, _NONES)))
        # another recorder's call (sources/conventions.py): its whole map and its events,
        # in place of the mark (index/clickhouse.py, _spans); most spans have neither, and
        # share one empty map (only ever read) instead of each making its own
        rest = row[10 + len(ATTRIBUTES) :]
        self.marked: dict[str, str] = _NO_MAP
        self.events: list[tuple[Any, Any]] = []
        if len(rest) == 3 and (rest[0] or rest[1]):
            marked, names, event_attrs = rest
            self.marked = dict(marked or {})
            self.events = list(zip(names or (), event_attrs or (), strict=False))
        self.parent = parent or None
        self.start = int(start or 0)
        self.end = self.start + int(duration or 0)


def _text(attrs: dict[str, str], key: str) -> str | None:
    """The attribute as the file index's `sval` gives it (None when absent)."""
    return attrs.get(key)


def _raw(attrs: dict[str, str], key: str) -> str | None:
    """The attribute as the file index stores it (index.rows.stored_attribute)."""
    value = attrs.get(key)
    if value is None:
        return None
    if key not in ARRAY_ATTRIBUTES and not value.startswith(STRUCTURED_MARK):
        return value  # what the two calls below give a plain text, without their dicts
    return stored_attribute(any_value(key, value))


def _integer(attrs: dict[str, str], key: str) -> int | None:
    value = attrs.get(key)
    if value is None:
        return None
    digits = value.strip()
    body = digits[1:] if digits[:1] in "+-" else digits
    return int(digits) if body.isascii() and body.isdigit() and len(body) < 19 else None


def _latest_records(spans: dict[tuple[str, str], _Span]) -> dict[tuple[str, str], _Span]:
    """(trace, turn span id) -> the turn's latest provenance span (greatest end, then
    start), found by walking up from each to the first turn span above it, as the file
    index does (index/ingest.py, turn_records)."""
    latest: dict[tuple[str, str], _Span] = {}
    for prov in spans.values():
        if prov.name != PROVENANCE_SPAN:
            continue
        current = spans.get((prov.trace, prov.parent)) if prov.parent else None
        for _ in range(MAX_ANCESTORS):
            if current is None or current.name == TURN_SPAN:
                break
            current = spans.get((prov.trace, current.parent)) if current.parent else None
        if current is None:
            continue
        key = (prov.trace, current.id)
        held = latest.get(key)
        if held is None or (prov.end, prov.start, prov.id) > (held.end, held.start, held.id):
            latest[key] = prov
    return latest


def resolve(rows: Iterable[tuple[Any, ...]]) -> dict[str, list[ChatRow]]:
    """Conversation id -> its chat rows, from stored span rows (READ_COLUMNS order: the
    span's columns, its hash, then one column per attribute in ATTRIBUTES)."""
    spans: dict[tuple[str, str], _Span] = {}
    for row in rows:
        span = _Span(row)
        spans.setdefault((span.trace, span.id), span)
    records = _latest_records(spans)
    out: dict[str, list[ChatRow]] = {}
    for span in spans.values():
        attrs = span.attrs
        chat = attrs.get("gen_ai.operation.name") in INFERENCE_OPERATIONS
        read = _read_marked(span, chat)
        if not chat and read is None:
            continue
        if is_title(attrs.get("gen_ai.system_instructions")):
            continue
        conversation: str | None = None
        turn: _Span | None = None
        current: _Span | None = span
        for depth in range(MAX_ANCESTORS + 1):
            if current is None:
                break
            if conversation is None:
                conversation = session_of(current.attrs)
            if turn is None and depth > 0 and current.name == TURN_SPAN:
                turn = current
            if conversation is not None and turn is not None:
                break
            parent = current.parent
            current = spans.get((span.trace, parent)) if parent else None
        cid = conversation if conversation is not None else span.trace
        code, message = status_fields(span.status, span.message)
        holder = records.get((span.trace, turn.id), turn) if turn is not None else None
        record = (
            TurnRow(span.trace, turn.id, _raw(holder.attrs, "commons.provenance.tag"),
                    _raw(holder.attrs, "commons.citation.candidates"))
            if turn is not None and holder is not None
            else None
        )  # fmt: skip
        out.setdefault(cid, []).append(
            ChatRow(
                conversation_id=cid,
                trace_id=span.trace,
                span_id=span.id,
                start_ns=span.start,
                end_ns=span.end,
                turn_span_id=turn.id if turn is not None else None,
                input_messages=read.input_messages if read else _raw(attrs, INPUT),
                output_messages=read.output_messages if read else _raw(attrs, OUTPUT),
                system_instructions=(read.system_instructions if read else _raw(attrs, SYSTEM)),
                model=_text(attrs, "gen_ai.request.model") or (read.model if read else None),
                provider=_text(attrs, "gen_ai.provider.name") or (read.provider if read else None),
                input_tokens=_integer(attrs, "gen_ai.usage.input_tokens")
                or (read.input_tokens if read else None),
                output_tokens=_integer(attrs, "gen_ai.usage.output_tokens")
                or (read.output_tokens if read else None),
                turn=record,
                finish_reasons=_raw(attrs, "gen_ai.response.finish_reasons"),
                status_code=code,
                status_message=message,
                error_type=_raw(attrs, "error.type"),
            )
        )
    return out
