"""Messages decoded typed: msgspec reads a messages attribute's JSON straight into
structs in C, for the three kinds of part most messages are made of (text, tool calls,
tool results), and they are made into the model's records in one pass.

Read by parse_part and parse_messages, every message of every history was walked field
by field in Python; here only the records are made in Python (docs/performance-log.md,
"Tenth session of #50"). Anything else a recorder writes (another kind of part, a field
these do not name, a value of another type) is refused here and read by parse_messages,
as everything was before, so both read the same messages alike
(tests/model/test_typed_messages.py reads every recorded attribute both ways).
"""

from __future__ import annotations

from typing import Any

import msgspec

from trajectory_review.model.messages import (
    Message,
    json_text,
    message,
    message_from,
    parse_messages,
    text_part,
    tool_call_part,
    tool_result_part,
)


class _TextPart(msgspec.Struct, tag="text", tag_field="type", forbid_unknown_fields=True):
    content: str


class _CallPart(msgspec.Struct, tag="tool_call", tag_field="type", forbid_unknown_fields=True):
    id: str | None = None
    name: str | None = None
    arguments: Any = None


class _ResultPart(
    msgspec.Struct, tag="tool_call_response", tag_field="type", forbid_unknown_fields=True
):
    id: str | None = None
    response: Any = msgspec.UNSET  # absent: `result` is read (parse_part says why)
    result: Any = None


class _Message(msgspec.Struct, forbid_unknown_fields=True):
    role: str = ""
    parts: list[_TextPart | _CallPart | _ResultPart] | None = None
    content: str | None = None  # the text of a message written without parts
    finish_reason: str | None = None


_TYPED = msgspec.json.Decoder(list[_Message])


def messages_text(text: str, by_json: dict[bytes, Message] | None = None) -> tuple[Message, ...]:
    """A messages attribute's JSON text as messages; raises BadAttribute when it cannot be
    read. `by_json`: see parse_messages, which reads what the typed reading refuses."""
    found = typed_messages(text)
    return found if found is not None else parse_messages(json_text(text), by_json)


def typed_messages(text: str) -> tuple[Message, ...] | None:
    """A messages attribute's JSON text as messages, decoded typed; None when the typed
    reading refuses it (parse_messages reads it then)."""
    try:
        typed = _TYPED.decode(text)
    except (msgspec.DecodeError, UnicodeError, RecursionError):
        return None
    out = []
    for m in typed:
        if m.parts is None:
            if m.content is None:  # no parts and no text: parse_messages says what is wrong
                return None
            out.append(message(m.role or "unknown", (text_part(m.content),), None))
            continue
        # the parts made, and what message() finds in them, in one pass: the parts' kinds
        # are known here, not asked of each made part again
        parts, sigs = [], []
        has_text = calls = results = False
        for typed_part in m.parts:
            if isinstance(typed_part, _TextPart):
                part = text_part(typed_part.content)
                has_text = True
            elif isinstance(typed_part, _CallPart):
                part = tool_call_part(typed_part.id, typed_part.name, typed_part.arguments)
                calls = True
            else:
                response = typed_part.response
                if response is msgspec.UNSET:
                    response = typed_part.result
                part = tool_result_part(typed_part.id, response)
                results = True
            parts.append(part)
            sigs.append(part.sig)
        role = m.role or "unknown"
        out.append(
            message_from(role, tuple(parts), sigs, has_text, calls, results, m.finish_reason)
        )
    return tuple(out)
