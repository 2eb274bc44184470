"""Conversations, exchanges and the recorded decisions attached to them.

Why matching is structural: histories are not append-only. A user edits an earlier
question (the conversation forks), switches conversations, or restores an old one, and a
position recorded by one call can name the wrong exchange in another call's reality. So a
recorded call claims exchange k only when its whole history up to k has the same content
(signatures) as the canonical history. Anything missing or contradictory is no claim.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from trajectory_review.index.store import ChatRow, TurnRow
from trajectory_review.model.messages import (
    BadAttribute,
    Message,
    Part,
    canonical_json,
    json_attribute,
    parse_messages,
    scalar_attribute,
)

Signature = tuple[Any, ...]

# The provenance tags a turn span can record (trace-format.md); anything else is no claim.
TAGS = ("A", "B", "C")


@dataclass(frozen=True)
class Warning:
    conversation_id: str | None
    message: str

    def to_dict(self) -> dict[str, str | None]:
        return {"conversation_id": self.conversation_id, "message": self.message}


@dataclass(frozen=True)
class ChatCall:
    trace_id: str
    span_id: str
    start_ns: int
    end_ns: int
    turn_span_id: str | None
    history: tuple[Message, ...]  # input messages followed by output messages
    model: str | None = None
    provider: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    system: str | None = None
    finish_reasons: tuple[str, ...] = ()  # as recorded on the span
    error: dict[str, str | None] | None = None  # {"type", "message"} when the call failed

    @property
    def order(self) -> tuple[int, int]:
        return (self.end_ns, self.start_ns)


@dataclass(frozen=True)
class Record:
    """What the live assistant recorded for one answer, read verbatim."""

    tag: str | None
    decisions: tuple[Any, ...]

    def key(self) -> tuple[str | None, str]:
        return (self.tag, canonical_json(list(self.decisions)))


@dataclass(frozen=True)
class ToolUse:
    id: str | None
    name: str | None
    arguments: Any
    result: Any = None
    answered: bool = False


@dataclass(frozen=True)
class Exchange:
    index: int  # 1-based
    messages: tuple[Message, ...]
    record: Record | None = None
    conflict: bool = False
    calls: tuple[ChatCall, ...] = ()  # chat calls on the canonical path that ended here

    @property
    def complete(self) -> bool:
        return is_complete(self.messages)

    @property
    def tag(self) -> str | None:
        return self.record.tag if self.record else None

    @property
    def decisions(self) -> tuple[Any, ...]:
        return self.record.decisions if self.record else ()

    @property
    def question(self) -> str:
        first = self.messages[0]
        return "\n".join(p.content or "" for p in first.parts if p.is_text)

    def answer_runs(self) -> list[str]:
        """Runs of consecutive assistant text; other content (a tool call) separates runs."""
        runs: list[str] = []
        current: list[str] | None = None
        for msg in self.messages[1:]:
            for part in msg.parts:
                if msg.role == "assistant" and part.is_text:
                    current = current if current is not None else []
                    current.append(part.content or "")
                elif current is not None:
                    runs.append("".join(current))
                    current = None
            if msg.role != "assistant" and current is not None:
                runs.append("".join(current))
                current = None
        if current is not None:
            runs.append("".join(current))
        return [r for r in runs if r]

    @property
    def answer_raw(self) -> str:
        return "\n\n".join(self.answer_runs())

    def tools(self) -> list[ToolUse]:
        calls: list[Part] = []
        results: dict[str, Any] = {}
        anonymous: list[Any] = []
        for msg in self.messages:
            for part in msg.parts:
                if part.type == "tool_call":
                    calls.append(part)
                elif part.type == "tool_call_response":
                    if part.id is not None and part.id not in results:
                        results[part.id] = part.response
                    else:
                        anonymous.append(part.response)
        out = []
        for call in calls:
            if call.id is not None and call.id in results:
                out.append(ToolUse(call.id, call.name, call.arguments, results[call.id], True))
            elif anonymous:
                # A result recorded without an id answers the next unanswered call.
                out.append(ToolUse(call.id, call.name, call.arguments, anonymous.pop(0), True))
            else:
                out.append(ToolUse(call.id, call.name, call.arguments))
        return out

    @property
    def finish_reasons(self) -> tuple[str, ...]:
        """Why the exchange's last model call stopped: the span's finish reasons, else the
        output messages' (export `finish_reasons`)."""
        if self.calls and self.calls[-1].finish_reasons:
            return self.calls[-1].finish_reasons
        for msg in reversed(self.messages):
            if msg.role == "assistant":
                return (msg.finish_reason,) if msg.finish_reason else ()
        return ()

    @property
    def error(self) -> dict[str, str | None] | None:
        """The error of the last model call of the exchange that failed, if any did."""
        failed = [c.error for c in self.calls if c.error]
        return failed[-1] if failed else None

    @property
    def cut_off(self) -> bool:
        """The model stopped for a reason other than finishing (length, a filter)."""
        return any(r.lower() not in NORMAL_FINISH for r in self.finish_reasons)

    def tool_results(self) -> list[Any]:
        return [
            p.response for m in self.messages for p in m.parts if p.type == "tool_call_response"
        ]

    def signature(self) -> Signature:
        return tuple(m.signature() for m in self.messages)


@dataclass(frozen=True)
class Conversation:
    id: str
    last_active_ns: int
    exchanges: tuple[Exchange, ...]
    branches: tuple[Conversation, ...] = ()
    warnings: tuple[Warning, ...] = ()
    system: str | None = None
    branch_of: str | None = None  # set on an abandoned branch: the conversation it left
    calls: tuple[ChatCall, ...] = field(default=(), repr=False)

    @property
    def is_branch(self) -> bool:
        return self.branch_of is not None


# -- exchanges -----------------------------------------------------------------------------


def split_exchanges(history: Sequence[Message]) -> list[tuple[Message, ...]]:
    exchanges: list[list[Message]] = []
    for msg in history:
        if msg.is_plain_user:
            exchanges.append([msg])
        elif exchanges:
            exchanges[-1].append(msg)
        # messages before the first plain user message (system) belong to none
    return [tuple(e) for e in exchanges]


def is_complete(messages: Sequence[Message]) -> bool:
    last = messages[-1]
    return len(messages) >= 2 and last.role == "assistant" and not last.has_tool_calls


def exchange_signature(messages: Sequence[Message]) -> Signature:
    return tuple(m.signature() for m in messages)


# -- reading rows ---------------------------------------------------------------------------


# Finish reasons that mean the model finished (or asked for a tool) as intended, across
# recorders (OpenAI, Anthropic, Gemini); anything else (`length`, `content_filter`,
# `max_tokens`, `safety`, …) means the user got a cut-off or filtered answer.
NORMAL_FINISH = frozenset(
    {"stop", "end_turn", "tool_calls", "tool_call", "tool_use", "stop_sequence",
     "function_call", "finish_reason_stop"}
)  # fmt: skip
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


def read_call(row: ChatRow, warnings: list[Warning]) -> ChatCall | None:
    """A chat row as a call, or None (with a warning) when its messages cannot be read."""
    try:
        inp = parse_messages(json_attribute(row.input_messages))
        out = parse_messages(json_attribute(row.output_messages))
    except (BadAttribute, json.JSONDecodeError) as exc:
        warnings.append(
            Warning(row.conversation_id, f"unparseable messages on chat span {row.span_id}: {exc}")
        )
        return None
    if not inp and not out:
        return None
    system = None
    try:
        sysval = json_attribute(row.system_instructions)
        if isinstance(sysval, list):
            system = "\n".join(str(p.get("content", "")) for p in sysval if isinstance(p, dict))
        elif isinstance(sysval, str):
            system = sysval
    except (BadAttribute, json.JSONDecodeError):
        system = scalar_attribute(row.system_instructions)
    start_ns, bad_start = clamp_ns(row.start_ns)
    end_ns, bad_end = clamp_ns(row.end_ns)
    if bad_start or bad_end:
        warnings.append(
            Warning(
                row.conversation_id,
                f"chat span {row.span_id} has a time outside 1970–2262 "
                f"(start {row.start_ns}, end {row.end_ns}); shown clamped",
            )
        )
    return ChatCall(
        trace_id=row.trace_id,
        span_id=row.span_id,
        start_ns=start_ns,
        end_ns=end_ns,
        turn_span_id=row.turn_span_id,
        history=inp + out,
        model=row.model,
        provider=row.provider,
        input_tokens=row.input_tokens,
        output_tokens=row.output_tokens,
        system=system,
        finish_reasons=finish_reasons(row.finish_reasons),
        error=call_error(row),
    )


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


def build_conversation(
    conversation_id: str,
    rows: Sequence[ChatRow],
    turns: Sequence[TurnRow],
    warnings: list[Warning] | None = None,
) -> Conversation | None:
    """The conversation as the reviewer sees it, or None when it has no exchange.

    `warnings` collects what was found wrong; when None is returned it says why (the
    warning must not be thrown away with the conversation)."""
    warnings = warnings if warnings is not None else []
    calls = [c for r in rows if (c := read_call(r, warnings)) is not None]
    if not calls:
        return None
    turn_by_key = {(t.trace_id, t.span_id): t for t in turns}
    records = _recorded_calls(calls, turn_by_key, conversation_id, warnings)
    latest = max(calls, key=lambda c: c.order)
    main = _assemble(conversation_id, latest.history, calls, records, warnings, latest.end_ns)
    if main is None:
        return None
    branches = []
    for n, (history, end_ns) in enumerate(_branches(latest.history, calls), start=1):
        branch = _assemble(
            f"{conversation_id}~{n}", history, calls, records, [], end_ns, branch_of=conversation_id
        )
        if branch is not None:
            branches.append(branch)
    return Conversation(
        id=main.id,
        last_active_ns=main.last_active_ns,
        exchanges=main.exchanges,
        branches=tuple(branches),
        warnings=tuple(_dedupe(warnings)),
        system=latest.system,
        calls=tuple(calls),
    )


def _recorded_calls(
    calls: Sequence[ChatCall],
    turn_by_key: dict[tuple[str, str], TurnRow],
    conversation_id: str,
    warnings: list[Warning],
) -> list[tuple[list[Signature], Record]]:
    """Per turn span, its latest chat call (the last round of its tool loop), if complete."""
    by_turn: dict[tuple[str, str], ChatCall] = {}
    for call in calls:
        if call.turn_span_id is None:
            continue
        key = (call.trace_id, call.turn_span_id)
        if key not in by_turn or call.order > by_turn[key].order:
            by_turn[key] = call
    out = []
    for key, call in sorted(by_turn.items(), key=lambda kv: kv[1].order):
        turn = turn_by_key.get(key)
        if turn is None:
            continue
        exchanges = split_exchanges(call.history)
        if not exchanges or not is_complete(exchanges[-1]):
            continue
        out.append(
            (
                [exchange_signature(e) for e in exchanges],
                read_record(turn, conversation_id, warnings),
            )
        )
    return out


def _assemble(
    conversation_id: str,
    history: tuple[Message, ...],
    calls: Sequence[ChatCall],
    records: Sequence[tuple[list[Signature], Record]],
    warnings: list[Warning],
    last_active_ns: int,
    branch_of: str | None = None,
) -> Conversation | None:
    parts = split_exchanges(history)
    if not parts:
        return None
    sigs = [exchange_signature(e) for e in parts]
    claims: dict[int, dict[tuple[str | None, str], Record]] = defaultdict(dict)
    for claimed_sigs, record in records:
        k = len(claimed_sigs)
        if k <= len(sigs) and claimed_sigs == sigs[:k]:
            claims[k][record.key()] = record
    msg_sigs = [m.signature() for m in history]
    calls_at: dict[int, list[ChatCall]] = defaultdict(list)
    for call in calls:
        call_sigs = [m.signature() for m in call.history]
        if call_sigs == msg_sigs[: len(call_sigs)]:
            k = len(split_exchanges(call.history))
            if k:
                calls_at[k].append(call)
    conflicts = []
    exchanges = []
    for i, msgs in enumerate(parts, start=1):
        distinct = claims.get(i, {})
        record, conflict = None, False
        if len(distinct) == 1:
            record = next(iter(distinct.values()))
        elif len(distinct) > 1:
            conflict = True
            conflicts.append(i)
        exchanges.append(
            Exchange(
                i, msgs, record, conflict, tuple(sorted(calls_at.get(i, []), key=lambda c: c.order))
            )
        )
    if conflicts:
        which = ", ".join(str(i) for i in conflicts)
        noun = "exchange" if len(conflicts) == 1 else "exchanges"
        warnings.append(
            Warning(
                conversation_id, f"conflicting audit records ({noun} {which}); showing no claim"
            )
        )
    return Conversation(
        conversation_id,
        last_active_ns,
        tuple(exchanges),
        warnings=tuple(warnings) if branch_of else (),
        branch_of=branch_of,
    )


def _branches(
    canonical: tuple[Message, ...], calls: Sequence[ChatCall]
) -> list[tuple[tuple[Message, ...], int]]:
    """Distinct maximal histories that are not a prefix of the canonical one."""
    canon = [m.signature() for m in canonical]
    abandoned: dict[tuple[Signature, ...], tuple[tuple[Message, ...], int]] = {}
    for call in calls:
        sig = tuple(m.signature() for m in call.history)
        if list(sig) == canon[: len(sig)]:
            continue  # an earlier round on the canonical path, not a branch
        prev = abandoned.get(sig)
        end = max(call.end_ns, prev[1]) if prev else call.end_ns
        abandoned[sig] = (call.history, end)
    keys = list(abandoned)
    maximal = [k for k in keys if not any(len(o) > len(k) and o[: len(k)] == k for o in keys)]
    result = []
    for k in maximal:
        # a branch is as recent as the latest call on its path
        end = max(abandoned[o][1] for o in keys if k[: len(o)] == o)
        result.append((abandoned[k][0], end))
    return sorted(result, key=lambda r: r[1])


def _dedupe(warnings: Sequence[Warning]) -> list[Warning]:
    seen = set()
    out = []
    for w in warnings:
        if w not in seen:
            seen.add(w)
            out.append(w)
    return out
