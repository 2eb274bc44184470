"""Reading one chat span and one turn span: the calls a conversation is built from and
the records they carry, with what was wrong in them as warnings (never an exception)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from trajectory_review.index.rows import ChatRow, TurnRow
from trajectory_review.model.history import MessageCache, messages_attribute
from trajectory_review.model.messages import BadAttribute, json_attribute, scalar_attribute
from trajectory_review.model.trajectory import TAGS, ChatCall, Record, Warning

# A span status code that means the call failed (OTLP/JSON writes 2 or the enum's name).
_ERROR_CODES = ("2", "STATUS_CODE_ERROR", "ERROR")


def call_error(row: ChatRow) -> dict[str, str | None] | None:
    if row.status_code not in _ERROR_CODES and row.error_type is None:
        return None
    kind = None
    if row.error_type is not None:
        try:
            value = scalar_attribute(row.error_type)
            kind = None if value is None else str(value)
        except (ValueError, RecursionError):
            kind = None
    return {"type": kind, "message": row.status_message}


def finish_reasons(raw: str | None) -> tuple[str, ...]:
    if raw is None:
        return ()
    try:
        value = scalar_attribute(raw)
    except (ValueError, RecursionError):
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        return ()
    return tuple(str(v) for v in value if isinstance(v, str | int))


# Times are nanoseconds since 1970 in a signed 64-bit column wherever they are listed,
# charted or exported: a recorded end time past year 9999 (or before 1970) stopped
# datetime, and one past 2262 overflows the answer catalog. Such a time is clamped into
# this range where it is read, and the conversation says so.
MIN_NS = 0
MAX_NS = 2**63 - 1


def clamp_ns(ns: int) -> tuple[int, bool]:
    """(the time, clamped into what can be shown; whether it had to be)."""
    if ns < MIN_NS:
        return MIN_NS, True
    if ns > MAX_NS:
        return MAX_NS, True
    return ns, False


def iso_ns(ns: int) -> str:
    """Exact nanoseconds as RFC 3339 UTC (a float would lose the last digits)."""
    seconds, frac = divmod(int(ns), 1_000_000_000)
    stamp = datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{stamp}.{frac:09d}Z"


def system_text(raw: str | None) -> str | None:
    """The system instructions as one text (parts joined), or None."""
    try:
        value = json_attribute(raw)
    except (BadAttribute, json.JSONDecodeError):
        text = scalar_attribute(raw)
        return None if text is None else str(text)
    if isinstance(value, list):
        return "\n".join(str(p.get("content", "")) for p in value if isinstance(p, dict))
    return value if isinstance(value, str) else None


def read_call(
    row: ChatRow, warnings: list[Warning], cache: MessageCache | None = None
) -> ChatCall | None:
    """A chat row as a call, or None (with a warning) when its messages cannot be read.
    `cache`: the conversation's parsed messages (see parse_messages)."""
    try:
        inp = messages_attribute(row.input_messages, cache)
        out = messages_attribute(row.output_messages, cache)
    except (BadAttribute, json.JSONDecodeError) as exc:
        warnings.append(
            Warning(row.conversation_id, f"unparseable messages on chat span {row.span_id}: {exc}")
        )
        return None
    if not inp and not out:
        return None
    raw_system = row.system_instructions
    if cache is not None and raw_system in cache.systems:
        system = cache.systems[raw_system]  # every call repeats the same instructions
    else:
        system = system_text(raw_system)
        if cache is not None:
            cache.systems[raw_system] = system
    start_ns, end_ns = row.start_ns, row.end_ns
    if not (MIN_NS <= start_ns <= MAX_NS and MIN_NS <= end_ns <= MAX_NS):
        start_ns, _ = clamp_ns(start_ns)
        end_ns, _ = clamp_ns(end_ns)
        warnings.append(
            Warning(
                row.conversation_id,
                f"chat span {row.span_id} has a time outside 1970–2262 "
                f"(start {row.start_ns}, end {row.end_ns}); shown clamped",
            )
        )
    # by position, in ChatCall's field order (as index.rows.chat_row): made for every
    # chat span of every replay
    return ChatCall(
        row.trace_id, row.span_id, start_ns, end_ns, row.turn_span_id, inp + out, row.model,
        row.provider, row.input_tokens, row.output_tokens, system,
        finish_reasons(row.finish_reasons), call_error(row),
    )  # fmt: skip


def read_record(turn: TurnRow, conversation_id: str, warnings: list[Warning]) -> Record:
    tag = None
    raw_tag = None
    try:
        raw_tag = scalar_attribute(turn.tag)
    except json.JSONDecodeError:
        raw_tag = object()
    if raw_tag in TAGS:
        tag = raw_tag
    elif turn.tag is not None:
        warnings.append(
            Warning(
                conversation_id,
                f"unreadable provenance tag on turn span {turn.span_id}; showing no claim",
            )
        )
    decisions: tuple[Any, ...] = ()
    if turn.candidates is not None:
        try:
            value = json_attribute(turn.candidates)
        except (BadAttribute, json.JSONDecodeError):
            value = None
        if isinstance(value, list) and all(isinstance(d, dict) for d in value):
            decisions = tuple(value)
        else:
            warnings.append(
                Warning(
                    conversation_id,
                    f"unparseable citation decisions on turn span {turn.span_id}; treating as none",
                )
            )
    return Record(tag, decisions)


# -- building a conversation -------------------------------------------------------------
