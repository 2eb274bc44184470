"""Conversations, exchanges and the recorded decisions attached to them.

Why matching is structural: histories are not append-only. A user edits an earlier
question (the conversation forks), switches conversations, or restores an old one, and a
position recorded by one call can name the wrong exchange in another call's reality. So a
recorded call claims exchange k only when its whole history up to k has the same content
(signatures) as the canonical history. Anything missing or contradictory is no claim.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import attrgetter
from typing import Any

import msgspec
from msgspec.structs import force_setattr

from trajectory_review.model.citation_request import split_citation_request
from trajectory_review.model.messages import (
    SIG,
    Message,
    Part,
    canonical_json,
)
from trajectory_review.model.provenance import DISPLAY

Signature = tuple[Any, ...]

# Finish reasons of a call that ended normally; any other reason marks the answer cut off.
NORMAL_FINISH = frozenset(
    {"stop", "end_turn", "tool_calls", "tool_call", "tool-calls", "tool_use",
     "stop_sequence", "function_call", "finish_reason_stop"}
)  # fmt: skip

# The provenance tags a turn span can record (docs/spec.md §1); anything else is no claim.
# Named once, in the display table: a new tag is one entry there.
TAGS = tuple(DISPLAY)


class Warning(msgspec.Struct, frozen=True, gc=False):
    conversation_id: str | None
    message: str

    def to_dict(self) -> dict[str, str | None]:
        return {"conversation_id": self.conversation_id, "message": self.message}


class ChatCall(msgspec.Struct, frozen=True, gc=False):
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
    # kept once computed (signatures, exchange_count), through force_setattr: not part of
    # what the call is (__eq__)
    _signatures: tuple[tuple[Any, ...], ...] | None = None
    _exchanges: int | None = None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ChatCall):
            return NotImplemented
        return _call_fields(self) == _call_fields(other)

    def __hash__(self) -> int:  # the error is a dict
        return hash((self.trace_id, self.span_id, self.history))

    @property
    def order(self) -> tuple[int, int]:
        return ORDER(self)

    def signatures(self) -> tuple[Signature, ...]:
        """Its history's message signatures, kept once computed: structural matching
        compares every call's history with the canonical one and each branch (half a
        million signature lookups for 5,000 conversations)."""
        sigs = self._signatures
        if sigs is None:
            sigs = tuple(map(SIG, self.history))
            force_setattr(self, "_signatures", sigs)
        return sigs

    def exchange_count(self) -> int:
        """How many exchanges its history holds (as split_exchanges splits it)."""
        count = self._exchanges
        if count is None:
            count = sum(1 for m in self.history if m.is_plain_user)
            force_setattr(self, "_exchanges", count)
        return count


# A call's `order` read at C speed: the sort key of every sort of a conversation's calls.
ORDER = attrgetter("end_ns", "start_ns")


def _call_fields(c: ChatCall) -> tuple[Any, ...]:
    return (
        c.trace_id, c.span_id, c.start_ns, c.end_ns, c.turn_span_id, c.history, c.model,
        c.provider, c.input_tokens, c.output_tokens, c.system, c.finish_reasons, c.error,
    )  # fmt: skip


class Record(msgspec.Struct, frozen=True, gc=False):
    """What the live assistant recorded for one answer, read verbatim."""

    tag: str | None
    decisions: tuple[Any, ...]

    def key(self) -> tuple[str | None, str]:
        return (self.tag, canonical_json(list(self.decisions)))


class ToolUse(msgspec.Struct, frozen=True, gc=False):
    id: str | None
    name: str | None
    arguments: Any
    result: Any = None
    answered: bool = False
    # commons' request to cite, split off the result (model/citation_request.py)
    request: str | None = None


class Exchange(msgspec.Struct, frozen=True, gc=False):
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
        """What the user asked, as the live chat showed it: the text parts of the user
        message without the reminders the assistant appended for the model."""
        return "\n".join(t for t in self._question_parts()[0] if t)

    @property
    def reminders(self) -> tuple[str, ...]:
        """The `<reminder>` elements appended to the user's message for the model only
        (kept for the reviewer to see, never shown as the question)."""
        return self._question_parts()[1]

    def _question_parts(self) -> tuple[list[str], tuple[str, ...]]:
        texts: list[str] = []
        hidden: list[str] = []
        for p in self.messages[0].parts:
            if p.is_text:
                text, found = split_reminders(p.content or "")
                texts.append(text)
                hidden.extend(found)
        return texts, tuple(hidden)

    def answer_runs(self) -> list[str]:
        """Runs of consecutive assistant text; other content (a tool call) separates runs."""
        return [text for _start, text in self._runs()]

    def answer_run_starts(self) -> list[int]:
        """The message each answer run starts at (the order documents and tool results
        came in: replay/documents.py)."""
        return [start for start, _text in self._runs()]

    def _runs(self) -> list[tuple[int, str]]:
        runs: list[tuple[int, str]] = []
        current: list[str] | None = None
        start = 0
        for n, msg in enumerate(self.messages[1:], 1):
            assistant = msg.role == "assistant"
            for part in msg.parts:
                if assistant and part.type == "text":
                    if current is None:
                        current, start = [], n
                    current.append(part.content or "")
                elif current is not None:
                    runs.append((start, "".join(current)))
                    current = None
            if not assistant and current is not None:
                runs.append((start, "".join(current)))
                current = None
        if current is not None:
            runs.append((start, "".join(current)))
        return [(at, text) for at, text in runs if text]

    @property
    def answer_raw(self) -> str:
        return "\n\n".join(self.answer_runs())

    def tool_names(self) -> set[str]:
        """The names of the tools the exchange called ("" for a call without one): the
        names tools() has, without reading their results."""
        return {
            p.name or ""
            for m in self.messages
            if m.has_tool_calls
            for p in m.parts
            if p.type == "tool_call"
        }

    def tools(self) -> list[ToolUse]:
        return [tool for tool, _at in self._tool_uses()]

    def result_positions(self) -> dict[int, int]:
        """Each answered tool's place in tools() -> the message its result came in."""
        return {i: at for i, (_tool, at) in enumerate(self._tool_uses()) if at is not None}

    def _tool_uses(self) -> list[tuple[ToolUse, int | None]]:
        calls: list[Part] = []
        results: dict[str, tuple[Any, int]] = {}
        anonymous: list[tuple[Any, int]] = []
        for n, msg in enumerate(self.messages):
            for part in msg.parts:
                if part.type == "tool_call":
                    calls.append(part)
                elif part.type == "tool_call_response":
                    if part.id is not None and part.id not in results:
                        results[part.id] = (part.response, n)
                    else:
                        anonymous.append((part.response, n))
        out: list[tuple[ToolUse, int | None]] = []
        for call in calls:
            if call.id is not None and call.id in results:
                response, at = results[call.id]
            elif anonymous:
                # A result recorded without an id answers the next unanswered call.
                response, at = anonymous.pop(0)
            else:
                out.append((ToolUse(call.id, call.name, call.arguments), None))
                continue
            own, request = split_citation_request(response)
            out.append((ToolUse(call.id, call.name, call.arguments, own, True, request), at))
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
        """What the tools returned (commons' request to cite left out: the tool never
        said it, and the reply rules must not take it for evidence)."""
        return [
            split_citation_request(p.response)[0]
            for m in self.messages
            if m.has_tool_results
            for p in m.parts
            if p.type == "tool_call_response"
        ]

    def signature(self) -> Signature:
        return tuple(map(SIG, self.messages))


class Conversation(msgspec.Struct, frozen=True, gc=False):
    id: str
    last_active_ns: int
    exchanges: tuple[Exchange, ...]
    branches: tuple[Conversation, ...] = ()
    warnings: tuple[Warning, ...] = ()
    system: str | None = None
    branch_of: str | None = None  # set on an abandoned branch: the conversation it left
    calls: tuple[ChatCall, ...] = ()

    @property
    def is_branch(self) -> bool:
        return self.branch_of is not None


# -- exchanges -----------------------------------------------------------------------------

# Today's commons appends reminders to a user turn for the model only ("Be concise as a
# default." for some models; on a restored conversation, that the R or Python state is
# gone). The live chat hides them: shown as the question, every row and search hit read
# "How many orders?\n<reminder>Be concise as a default.</reminder>".
REMINDER_OPEN, REMINDER_CLOSE = "<reminder>", "</reminder>"


def split_reminders(text: str) -> tuple[str, list[str]]:
    """A user text part without the `<reminder>…</reminder>` elements that end it (or
    are all of it), and those elements. Found from the end, each a whole element; text
    that is not one stays the user's. Linear: positions, never copies of the rest (a
    question of a hundred thousand reminders is read once)."""
    found: list[str] = []
    end = len(text)
    while True:
        j = end
        while j > 0 and text[j - 1].isspace():
            j -= 1
        if not text.endswith(REMINDER_CLOSE, 0, j):
            break
        start = text.rfind(REMINDER_OPEN, 0, j - len(REMINDER_CLOSE))
        if start < 0 or text.find(REMINDER_CLOSE, start, j - len(REMINDER_CLOSE)) >= 0:
            break
        found.append(text[start:j])
        end = start
    if not found:
        return text, found
    found.reverse()
    return text[:end].rstrip(), found


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
    return tuple(map(SIG, messages))


# -- reading rows ---------------------------------------------------------------------------


# Finish reasons that mean the model finished (or asked for a tool) as intended, across
# recorders (OpenAI, Anthropic, Gemini); anything else (`length`, `content_filter`,
# `max_tokens`, `safety`, …) means the user got a cut-off or filtered answer.
