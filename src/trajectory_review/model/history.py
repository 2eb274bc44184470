"""One conversation's messages attributes, each message parsed about once.

Every chat span repeats the whole history before it: read span by span, a conversation of
n calls parsed its first message n times. A call's history is nearly always the history
of the call before it, then that call's output, then what came next (the tool's result,
or the user's next question), written by the same recorder the same way: so a history
that extends one parsed before is parsed only past it, and past that call's output when
it goes on with the output's text.
"""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass

from trajectory_review.model.messages import (
    BadAttribute,
    Message,
    attribute_value,
    json_text,
    parse_messages,
)
from trajectory_review.model.typed import messages_text, typed_messages

# How many of a conversation's latest histories a new one is checked against.
RECENT_HISTORIES = 4
_UNREADABLE = (BadAttribute, json.JSONDecodeError, RecursionError)


@dataclass(slots=True)
class _Body:
    """A parsed history's text without its closing bracket ("[m1,…,mk"), its messages,
    and, once read, its call's output: the text of its elements ("e1,…,ej") and their
    messages."""

    text: str
    messages: tuple[Message, ...]
    output: tuple[str, tuple[Message, ...]] | None = None


class MessageCache:
    """One conversation's parsed messages attributes (`parsed`, by their raw text), its
    messages parsed by their JSON where the typed reading refuses them (`by_json`, see
    parse_messages), and its system instructions read (`systems`)."""

    def __init__(self) -> None:
        self.by_json: dict[bytes, Message] = {}
        self.parsed: dict[str, tuple[Message, ...]] = {}  # raw attribute -> messages
        self.systems: dict[str | None, str | None] = {}  # raw instructions -> their text
        # the latest histories only: a call extends one made just before it, and a
        # conversation of thousands of calls sharing a long prefix without extending one
        # another must not cost a comparison with every earlier one
        self._bodies: deque[_Body] = deque(maxlen=RECENT_HISTORIES)
        # Read typed until the typed reading refuses an attribute: a recorder that writes
        # other parts (reasoning, fields of its own) writes them in every later history
        # of the conversation, and each was decoded twice, a typed try then JSON.
        self._typed = True

    def _text(self, text: str) -> tuple[Message, ...]:
        """A messages attribute's JSON text as messages (messages_text), typed while the
        conversation's attributes are."""
        if self._typed:
            found = typed_messages(text)
            if found is not None:
                return found
            self._typed = False
        return parse_messages(json_text(text), self.by_json)

    def remember(self, history: str | None, output: str | None = None) -> None:
        """Parse a call's messages attributes ahead: its history, then its output (calls
        in the order they were made, so each history extends one before it). One that
        cannot be read is left for the reader to report."""
        body = None
        if history is not None and history not in self.parsed:
            try:
                self.parsed[history], body = self._history(history)
            except _UNREADABLE:
                pass
        if output is None or output in self.parsed:
            return
        try:
            value = attribute_value(output)
            if isinstance(value, str):
                messages = self._text(value)
            else:
                messages = parse_messages(value, self.by_json)
        except _UNREADABLE:
            return
        self.parsed[output] = messages
        if body is not None and isinstance(value, str) and messages:
            text = value.strip()
            if text.startswith("[") and text.endswith("]"):
                body.output = (text[1:-1].strip(), messages)

    def _history(self, raw: str) -> tuple[tuple[Message, ...], _Body | None]:
        """A history's messages, and what a later history may extend (None: nothing)."""
        value = attribute_value(raw)
        if not isinstance(value, str):
            return parse_messages(value, self.by_json), None
        text = value.rstrip()
        messages: tuple[Message, ...] | None = None
        for body in reversed(self._bodies):  # the latest first
            if text.startswith(body.text):
                rest = text[len(body.text) :].lstrip()
                # "[m1,…,mk" then "," and more elements: the parser's state after the
                # prefix is the same as in the shorter history, so the elements are its
                # elements followed by those of "[" + rest
                if rest.startswith(","):
                    try:
                        messages = body.messages + self._past(rest[1:], body)
                    except _UNREADABLE:
                        messages = None  # the full parse below says what is wrong
                    break
        if messages is None:
            messages = self._text(value)
        if not (text.endswith("]") and messages):
            return messages, None
        body = _Body(text[:-1].rstrip(), messages)
        self._bodies.append(body)
        return messages, body

    def _past(self, rest: str, body: _Body) -> tuple[Message, ...]:
        """The messages of "[" + rest, the elements after `body`'s. When rest begins with
        the elements of the output that answered that history, then "," or the closing
        bracket, those are the output's messages and only what follows is parsed. (A
        JSON value's text ends where the value does, but for a number, which the
        delimiter after it settles.)"""
        if body.output is not None:
            elements, said = body.output
            rest = rest.lstrip()
            if rest.startswith(elements):
                after = rest[len(elements) :].lstrip()
                if after == "]":
                    return said
                if after.startswith(","):
                    return said + self._text("[" + after[1:])
        return self._text("[" + rest)


def messages_attribute(raw: str | None, cache: MessageCache | None = None) -> tuple[Message, ...]:
    """A messages attribute (JSON string or structured AnyValue) as messages; raises
    BadAttribute or JSONDecodeError when it cannot be read. `cache`: the conversation's,
    which may have parsed it already."""
    if raw is None:
        return ()
    if cache is not None:
        hit = cache.parsed.get(raw)
        if hit is not None:
            return hit
    by_json = cache.by_json if cache is not None else None
    value = attribute_value(raw)
    if isinstance(value, str):
        return messages_text(value, by_json)
    return parse_messages(value, by_json)
