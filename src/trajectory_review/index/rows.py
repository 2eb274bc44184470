"""The rows an index hands the model: plain dataclasses, importable without DuckDB or
pandas (worker processes that replay conversations import them, and start faster)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ChatRow:
    """One chat span as the index stores it; message attributes still as AnyValue JSON."""

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
    finish_reasons: str | None = None  # AnyValue JSON of gen_ai.response.finish_reasons
    status_code: str | None = None  # the span's status code ("2" / "STATUS_CODE_ERROR")
    status_message: str | None = None
    error_type: str | None = None  # AnyValue JSON of error.type


@dataclass(frozen=True)
class TurnRow:
    trace_id: str
    span_id: str
    tag: str | None  # AnyValue JSON of commons.provenance.tag, None when absent
    candidates: str | None  # AnyValue JSON of commons.citation.candidates
