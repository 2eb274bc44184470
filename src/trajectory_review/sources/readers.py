"""Other recorders' model calls, rewritten as the GenAI conventions' messages.

Each reader takes one span's attributes (decoded, by key) and events (name, attributes)
and returns the call's messages in the shape `gen_ai.input.messages`,
`gen_ai.output.messages` and `gen_ai.system_instructions` have, or None when it finds
none: the index stores them as if the recorder had written the conventions, so matching,
replay and the reply rules never learn another shape. The registry that says which reader
reads which spans is sources/conventions.py.

Everything here reads untrusted values: a value of an unexpected type is skipped, never
raised on; no regular expression is used.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

Attrs = Mapping[str, Any]
Events = list[tuple[str, dict[str, Any]]]
Msg = dict[str, Any]


@dataclass(frozen=True)
class Read:
    """One model call's content, in the GenAI conventions' JSON shapes."""

    input_messages: list[Msg]
    output_messages: list[Msg]
    system_instructions: list[dict[str, Any]]
    model: str | None = None


Reader = Callable[[Attrs, Events], Read | None]


def maybe_json(value: Any) -> Any:
    """A value that may be JSON text, parsed when it is (recorders write both)."""
    if isinstance(value, str) and value[:1] in ("[", "{"):
        try:
            return json.loads(value)
        except (ValueError, RecursionError):  # not JSON, or nested past the parser's limit
            return value
    return value


def as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def tool_arguments(value: Any) -> Any:
    """Tool call arguments: OpenAI's are a JSON string, the conventions' an object."""
    parsed = maybe_json(value)
    return parsed if isinstance(parsed, dict | list) else value


def as_message(role: str, parts: list[dict[str, Any]], finish: Any = None) -> Msg:
    m: Msg = {"role": role, "parts": parts}
    if isinstance(finish, str) and finish:
        m["finish_reason"] = finish
    return m


def split_system(messages: Iterable[Msg]) -> tuple[list[Msg], list[dict[str, Any]]]:
    """Messages and the system instructions among them (the conventions keep those apart)."""
    kept: list[Msg] = []
    system: list[dict[str, Any]] = []
    for m in messages:
        if m["role"] in ("system", "developer"):
            system.extend(m["parts"])
        else:
            kept.append(m)
    return kept, system


def read_of(
    inp: list[Msg], out: list[Msg], system: list[dict[str, Any]], model: Any
) -> Read | None:
    if not inp and not out:
        return None
    return Read(inp, out, system, model if isinstance(model, str) else None)


# -- OpenAI's chat messages (Logfire's first conventions, and other recorders' parts) ------


def openai_content(content: Any) -> list[dict[str, Any]]:
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "content": content}]
    if not isinstance(content, list):
        return [{"type": "text", "content": as_text(content)}]
    parts: list[dict[str, Any]] = []
    for p in content:
        if isinstance(p, dict) and p.get("type") == "text":
            parts.append({"type": "text", "content": as_text(p.get("text", ""))})
        elif isinstance(p, dict) and p.get("type") == "image_url":
            url = (p.get("image_url") or {}) if isinstance(p.get("image_url"), dict) else {}
            parts.append({"type": "uri", "modality": "image", "uri": as_text(url.get("url", ""))})
        else:
            parts.append({"type": "text", "content": as_text(p)})
    return parts


def openai_calls(calls: Any) -> list[dict[str, Any]]:
    parts = []
    for c in calls if isinstance(calls, list) else ():
        if not isinstance(c, dict):
            continue
        fn = c["function"] if isinstance(c.get("function"), dict) else c
        parts.append(
            {
                "type": "tool_call",
                "id": c.get("id"),
                "name": fn.get("name"),
                "arguments": tool_arguments(fn.get("arguments")),
            }
        )
    return parts


def openai_message(m: Any, finish: Any = None) -> Msg | None:
    """One OpenAI chat message as a conventions message (None when it is not one)."""
    if not isinstance(m, dict):
        return None
    role = str(m.get("role") or "unknown")
    if role == "tool":
        part = {"type": "tool_call_response", "id": m.get("tool_call_id") or m.get("id")}
        part["response"] = m.get("content")
        return as_message("tool", [part])
    parts = openai_content(m.get("content")) + openai_calls(m.get("tool_calls"))
    return as_message(role, parts, finish)


def read_openai_json(attrs: Attrs, events: Events) -> Read | None:
    """Logfire's instrument_openai() before its version 2: `request_data` holds the
    request as sent, `response_data` the reply's message."""
    request = maybe_json(attrs.get("request_data"))
    response = maybe_json(attrs.get("response_data"))
    request = request if isinstance(request, dict) else {}
    response = response if isinstance(response, dict) else {}
    inp = [m for m in map(openai_message, request.get("messages") or ()) if m]
    # an array, or (Logfire) the JSON text of one
    reasons = maybe_json(attrs.get("gen_ai.response.finish_reasons"))
    finish = reasons[0] if isinstance(reasons, list) and reasons else None
    answer = response.get("message")
    if answer is None and isinstance(response.get("combined_chunk_content"), str):
        answer = {"role": "assistant", "content": response["combined_chunk_content"]}
    out = [m for m in (openai_message(answer, finish),) if m]
    kept, system = split_system(inp)
    return read_of(kept, out, system, request.get("model"))


# -- flattened attributes: OpenInference and OpenLLMetry before 0.55 -----------------------


def indexed(attrs: Attrs, prefix: str) -> list[dict[str, Any]]:
    """`prefix.N.rest` attributes as a list of {rest: value}, in N's order."""
    found: dict[int, dict[str, Any]] = {}
    for key, value in attrs.items():
        if not key.startswith(prefix):
            continue
        number, _, rest = key[len(prefix) :].partition(".")
        if number.isdigit() and rest:
            found.setdefault(int(number), {})[rest] = value
    return [found[n] for n in sorted(found)]


def _flat_message(
    fields: dict[str, Any], call: str, call_id: str, call_name: str, call_args: str
) -> Msg:
    """One flattened message ({rest: value}) as a conventions message; `call*` name the
    tool-call keys of the recorder's convention."""
    role = str(fields.get("role") or "unknown")
    content = maybe_json(fields.get("content"))
    if role == "tool":
        part = {"type": "tool_call_response", "id": fields.get("tool_call_id")}
        part["response"] = fields.get("content")
        return as_message("tool", [part])
    parts = openai_content(content if isinstance(content, list) else fields.get("content"))
    for block in indexed(fields, "contents."):  # OpenInference's multi-part content
        kind = block.get("message_content.type")
        if kind == "text":
            parts.append({"type": "text", "content": as_text(block.get("message_content.text"))})
        elif kind == "image":
            url = block.get("message_content.image.image.url")
            parts.append({"type": "uri", "modality": "image", "uri": as_text(url or "")})
    for c in indexed(fields, call):
        parts.append(
            {
                "type": "tool_call",
                "id": c.get(call_id),
                "name": c.get(call_name),
                "arguments": tool_arguments(c.get(call_args)),
            }
        )
    return as_message(role, parts, fields.get("finish_reason"))


def read_openinference(attrs: Attrs, events: Events) -> Read | None:
    """OpenInference: `llm.input_messages.N.message.*` and `llm.output_messages.N…`."""

    def messages(prefix: str) -> list[Msg]:
        out = []
        for fields in indexed(attrs, prefix):
            inner = {k.removeprefix("message."): v for k, v in fields.items()}
            out.append(
                _flat_message(
                    inner,
                    "tool_calls.",
                    "tool_call.id",
                    "tool_call.function.name",
                    "tool_call.function.arguments",
                )
            )
        return out

    inp, system = split_system(messages("llm.input_messages."))
    out = messages("llm.output_messages.")
    finish = attrs.get("llm.finish_reason")
    if out and isinstance(finish, str) and "finish_reason" not in out[-1]:
        out[-1]["finish_reason"] = finish
    return read_of(inp, out, system, attrs.get("llm.model_name"))


def read_openllmetry(attrs: Attrs, events: Events) -> Read | None:
    """OpenLLMetry before 0.55: `gen_ai.prompt.N.*` and `gen_ai.completion.N.*`."""

    def messages(prefix: str) -> list[Msg]:
        return [
            _flat_message(f, "tool_calls.", "id", "name", "arguments")
            for f in indexed(attrs, prefix)
        ]

    inp, system = split_system(messages("gen_ai.prompt."))
    model = attrs.get("gen_ai.request.model") or attrs.get("gen_ai.response.model")
    return read_of(inp, messages("gen_ai.completion."), system, model)
