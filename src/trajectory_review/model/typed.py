"""Messages decoded typed: msgspec reads a messages attribute's JSON straight into
structs in C, for the three kinds of part most messages are made of (text, tool calls,
tool results), and they are made into the model's records in one pass.

With parse_part and parse_messages in Python, decoding the messages was a third of a
replay under the profiler (docs/performance-log.md, "Tenth session of #50"). Anything
else a recorder writes (another kind of part, a field these do not name, a value of
another type) is refused here and read by parse_messages, as everything was before, so
both read the same messages alike (tests/model/test_typed_messages.py reads every
recorded attribute both ways).
"""

from __future__ import annotations

from typing import Any

import msgspec

from trajectory_review.model.messages import (
    Message,
    Part,
    canonical_json,
    json_text,
    message,
    parse_messages,
    tool_arguments,
)


class _TextPart(msgspec.Struct, tag="text", tag_field="type", forbid_unknown_fields=True):
    content: str

    def part(self) -> Part:
        text = self.content
        return Part("text", ("text", text), content=text)


class _CallPart(msgspec.Struct, tag="tool_call", tag_field="type", forbid_unknown_fields=True):
    id: str | None = None
    name: str | None = None
    arguments: Any = None

    def part(self) -> Part:
        arguments = tool_arguments(self.arguments)
        sig = ("tool_call", self.id, self.name, canonical_json(arguments))
        return Part("tool_call", sig, id=self.id, name=self.name, arguments=arguments)


class _ResultPart(
    msgspec.Struct, tag="tool_call_response", tag_field="type", forbid_unknown_fields=True
):
    id: str | None = None
    response: Any = msgspec.UNSET  # absent: `result` is read (parse_part says why)
    result: Any = None

    def part(self) -> Part:
        response = self.result if self.response is msgspec.UNSET else self.response
        sig = ("tool_call_response", self.id, canonical_json(response))
        return Part("tool_call_response", sig, id=self.id, response=response)


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
            out.append(message(m.role or "unknown", (_TextPart(m.content).part(),), None))
            continue
        # what message() works out, in the pass that makes the parts: as a second pass,
        # with the call, it was a seventh of the typed reading (the typed test reads every
        # recorded attribute both ways, these fields included)
        parts, sigs = [], []
        plain = calls = results = False
        for typed_part in m.parts:
            part = typed_part.part()
            parts.append(part)
            sigs.append(part.sig)
            kind = type(typed_part)
            if kind is _TextPart:
                plain = True
            elif kind is _CallPart:
                calls = True
            else:
                results = True
        role = m.role or "unknown"
        sig = (role, tuple(sigs))
        plain = plain and not results and role == "user"
        reason = m.finish_reason
        out.append(Message(role, tuple(parts), sig, hash(sig), plain, calls, results, reason))
    return tuple(out)
