"""Messages and parts of the GenAI semantic conventions, decoded from span attributes."""

from __future__ import annotations

import json
from operator import attrgetter
from typing import Any

import msgspec
import orjson

from trajectory_review.index.rows import STRUCTURED_MARK, decode_any_value


class BadAttribute(ValueError):
    """An attribute that is present but cannot be read."""


_ANY = msgspec.json.Decoder()


def loads(text: str) -> Any:
    """JSON parsing, fast path first: every chat span repeats the whole history.

    The fast path is msgspec's, the typed reading's own (messages_text): orjson made an
    integer past 64 bits a float, so a value read both ways would have differed. The slow
    path takes what it refuses but Python's parser reads: NaN and infinities, and lone
    surrogate escapes (`\\ud800`), which become U+FFFD here, so text a recorder mangled
    can still be shown and written out (as a lone surrogate it stopped an export
    mid-stream with UnicodeEncodeError). Nesting deeper than the parser's limit is a bad
    attribute, not a RecursionError that takes down whoever reads it.
    """
    try:
        return _ANY.decode(text)
    except (msgspec.DecodeError, UnicodeError, RecursionError):
        pass
    try:
        value = json.loads(text)  # raises JSONDecodeError on real errors
    except RecursionError:
        raise BadAttribute("JSON nested too deeply to read") from None
    return _replace_lone_surrogates(value)


def _fix_text(s: str) -> str:
    # a lone surrogate cannot be encoded; "replace" turns each into U+FFFD, and a proper
    # pair split over two code points is joined again
    return s.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _has_surrogate(s: str) -> bool:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _replace_lone_surrogates(value: Any) -> Any:
    """The same value with every string (keys too) valid Unicode. Iterative: the value
    can be as deep as json allows."""
    if isinstance(value, str):
        return _fix_text(value) if _has_surrogate(value) else value
    if not isinstance(value, list | dict):
        return value
    root: list[Any] = [value]
    stack: list[tuple[Any, Any]] = [(root, 0)]
    while stack:
        container, key = stack.pop()
        item = container[key]
        if isinstance(item, str):
            if _has_surrogate(item):
                container[key] = _fix_text(item)
        elif isinstance(item, list):
            stack.extend((item, i) for i in range(len(item)))
        elif isinstance(item, dict):
            if any(isinstance(k, str) and _has_surrogate(k) for k in item):
                fixed = {_fix_text(k) if _has_surrogate(k) else k: v for k, v in item.items()}
                item.clear()
                item.update(fixed)
            stack.extend((item, k) for k in item)
    return root[0]


def attribute_value(raw: str) -> Any:
    """A stored attribute (index.rows.stored_attribute) as a plain Python value: a string
    value as it is, anything else decoded from its AnyValue JSON (which may raise
    JSONDecodeError)."""
    if raw.startswith(STRUCTURED_MARK):
        return decode_any_value(loads(raw[len(STRUCTURED_MARK) :]))
    return raw


def json_attribute(raw: str | None) -> Any:
    """An attribute that holds JSON, either as a JSON string or as structured AnyValue.

    Returns None when absent; raises BadAttribute when present but unparseable.
    """
    if raw is None:
        return None
    value = attribute_value(raw)
    return json_text(value) if isinstance(value, str) else value


def json_text(value: str) -> Any:
    """A JSON string attribute's value, parsed; BadAttribute when it is not JSON."""
    try:
        return loads(value)
    except json.JSONDecodeError as exc:
        raise BadAttribute(f"not JSON ({exc.msg} at char {exc.pos})") from None


def scalar_attribute(raw: str | None) -> Any:
    if raw is None:
        return None
    return attribute_value(raw)


def canonical_json(value: Any) -> str:
    """Key order never matters: sort keys at every depth."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    except TypeError:  # integers beyond 64 bits
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


class Part(msgspec.Struct, frozen=True, gc=False):
    """One part of a message. Made by parse_part only, which works out its signature."""

    type: str
    # what structural matching compares (below): worked out when the part is read, as
    # every part of every call's history is compared; computed on demand, the method
    # call was paid again at every comparison (docs/performance-log.md, "Twice as fast
    # on the hot path")
    sig: tuple[Any, ...]
    content: str | None = None  # text parts
    id: str | None = None  # tool calls and results
    name: str | None = None  # tool calls
    arguments: Any = None
    response: Any = None
    # as recorded, for a kind shown as it was written (reasoning, anything the conventions
    # do not name); text, tool calls and their results are read field by field and keep
    # none. Not part of a part's identity (__eq__)
    raw: Any = None

    # Equal by content: `raw` (how it was written) is not part of what a part is.
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Part):
            return NotImplemented
        return _part_key(self) == _part_key(other)

    def __hash__(self) -> int:  # the arguments and response may be JSON objects
        return hash((self.type, self.content, self.id, self.name))

    @property
    def is_text(self) -> bool:
        return self.type == "text"

    @property
    def size(self) -> int | None:
        """Bytes (or characters) of the content a non-text part carries, when it says."""
        raw = self.raw if isinstance(self.raw, dict) else {}
        for key in ("content", "data", "blob", "uri", "url"):
            v = raw.get(key)
            if isinstance(v, str):
                return len(v)
        return None


class Message(msgspec.Struct, frozen=True, gc=False):
    """One message. Made by `message` only, which works out what matching reads."""

    role: str
    parts: tuple[Part, ...]
    sig: tuple[Any, ...]  # (role, the parts' signatures): what matching compares
    key: int  # hash(sig), taken once: matching hashes every prefix of every history
    # starts an exchange: a user turn with text and no tool results
    is_plain_user: bool
    # what it holds, worked out as it is read: asked of every message of every answer
    # (is it complete, which tools it called), a walk of its parts each time
    has_tool_calls: bool
    has_tool_results: bool
    # why the model stopped, when a recorder puts it on the output message (not part of
    # the message's identity: two recordings of one answer may differ here)
    finish_reason: str | None = None

    def __eq__(self, other: object) -> bool:  # by role and parts, as Part.__eq__
        if not isinstance(other, Message):
            return NotImplemented
        return self.role == other.role and self.parts == other.parts

    def __hash__(self) -> int:
        return hash((self.role, self.parts))

    @property
    def text(self) -> str:
        return "".join(p.content or "" for p in self.parts if p.is_text)


def message(role: str, parts: tuple[Part, ...], finish_reason: str | None = None) -> Message:
    sigs = []
    text = results = calls = False
    for p in parts:  # one pass: every message of every conversation comes through here
        sigs.append(p.sig)
        if p.type == "text":
            text = True
        elif p.type == "tool_call_response":
            results = True
        elif p.type == "tool_call":
            calls = True
    return message_from(role, parts, sigs, text, calls, results, finish_reason)


def message_from(
    role: str,
    parts: tuple[Part, ...],
    sigs: list[tuple[Any, ...]],
    text: bool,
    calls: bool,
    results: bool,
    finish_reason: str | None,
) -> Message:
    """A message from its parts and what one pass over them found (their signatures,
    whether it holds text, tool calls, tool results): `message`'s pass, or the typed
    reading's, which makes the parts in it. What matching reads is worked out here."""
    sig = (role, tuple(sigs))
    plain = role == "user" and text and not results
    return Message(role, parts, sig, hash(sig), plain, calls, results, finish_reason)


def text_part(text: str) -> Part:
    return Part("text", ("text", text), content=text)


def tool_call_part(pid: str | None, name: str | None, arguments: Any) -> Part:
    arguments = tool_arguments(arguments)
    sig = ("tool_call", pid, name, canonical_json(arguments))
    return Part("tool_call", sig, id=pid, name=name, arguments=arguments)


def tool_result_part(pid: str | None, response: Any) -> Part:
    sig = ("tool_call_response", pid, canonical_json(response))
    return Part("tool_call_response", sig, id=pid, response=response)


def _part_key(p: Part) -> tuple[Any, ...]:
    return (p.type, p.content, p.id, p.name, p.arguments, p.response)


# A message's signature and its hash, read off many messages at C speed (map).
SIG = attrgetter("sig")
KEY = attrgetter("key")


# Part types other recorders write for the ones the conventions name: pydantic-ai writes
# its reasoning as `thinking`; shown as it is, it was a part "of an unknown kind".
PART_ALIASES = {"thinking": "reasoning"}


def parse_part(raw: Any) -> Part:
    if not isinstance(raw, dict):
        return text_part(str(raw))
    ptype = raw.get("type")
    if ptype == "text":  # most parts: asked first, before the type is made a name
        content = raw.get("content")
        return text_part(content if isinstance(content, str) else "")
    ptype = str(ptype or "unknown")
    ptype = PART_ALIASES.get(ptype, ptype)
    if ptype == "tool_call":
        return tool_call_part(
            _opt_str(raw.get("id")), _opt_str(raw.get("name")), raw.get("arguments")
        )
    if ptype == "tool_call_response":
        # `result`: pydantic-ai 2.x and the conventions' own registry example put the
        # tool's output there. Read as `response` only, every such card said null and the
        # reply rules, seeing no tool output, flagged correct answers.
        response = raw["response"] if "response" in raw else raw.get("result")
        return tool_result_part(_opt_str(raw.get("id")), response)
    return Part(ptype, (ptype,), raw=raw)


def parse_messages(value: Any, by_json: dict[bytes, Message] | None = None) -> tuple[Message, ...]:
    """A decoded messages attribute as messages; raises BadAttribute on a wrong shape.

    `by_json` (one per conversation) maps a message's JSON to its parsed Message: every
    chat span repeats the history before it, so without it a conversation of n calls
    parsed its first message n times. A cached Message also keeps its signature."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise BadAttribute("messages are not a list")
    out = []
    for m in value:
        if not isinstance(m, dict):
            raise BadAttribute("a message is not an object")
        key = None
        if by_json is not None:
            try:
                key = orjson.dumps(m, option=orjson.OPT_SORT_KEYS)
            except TypeError:  # integers beyond 64 bits: parsed, not cached
                key = None
            else:
                hit = by_json.get(key)
                if hit is not None:
                    out.append(hit)
                    continue
        parts = m.get("parts")
        if parts is None and isinstance(m.get("content"), str):
            parts = [{"type": "text", "content": m["content"]}]
        if not isinstance(parts, list):
            raise BadAttribute("a message has no parts list")
        reason = m.get("finish_reason")
        msg = message(
            str(m.get("role") or "unknown"),
            tuple([parse_part(p) for p in parts]),
            reason if isinstance(reason, str) else None,
        )
        if key is not None and by_json is not None:
            by_json[key] = msg
        out.append(msg)
    return tuple(out)


def tool_arguments(value: Any) -> Any:
    """A tool call's arguments: an object, as the conventions have it. pydantic-ai and
    OpenAI's own recorders write the JSON text of one; shown as text, the tool card read
    as one long string and the same call recorded both ways looked like two."""
    if isinstance(value, str) and value[:1] == "{":
        try:
            parsed = loads(value)
        except (json.JSONDecodeError, BadAttribute):
            return value
        return parsed if isinstance(parsed, dict) else value
    return value


def _opt_str(v: Any) -> str | None:
    return None if v is None else str(v)
