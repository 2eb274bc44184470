"""Other recorders' model calls, rewritten as the GenAI conventions' messages.

Each reader takes one span's attributes (decoded, by key) and events (name, attributes)
and returns the call's messages in the shape `gen_ai.input.messages`,
`gen_ai.output.messages` and `gen_ai.system_instructions` have, or None when it finds
none: the index stores them as if the recorder had written the conventions, so matching,
replay and the reply rules never learn another shape. The registry that says which reader
reads which spans is index/conventions.py.

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


def _json(value: Any) -> Any:
    """A value that may be JSON text, parsed when it is (recorders write both)."""
    if isinstance(value, str) and value[:1] in ("[", "{"):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _arguments(value: Any) -> Any:
    """Tool call arguments: OpenAI's are a JSON string, the conventions' an object."""
    parsed = _json(value)
    return parsed if isinstance(parsed, dict | list) else value


def _message(role: str, parts: list[dict[str, Any]], finish: Any = None) -> Msg:
    m: Msg = {"role": role, "parts": parts}
    if isinstance(finish, str) and finish:
        m["finish_reason"] = finish
    return m


def _split(messages: Iterable[Msg]) -> tuple[list[Msg], list[dict[str, Any]]]:
    """Messages and the system instructions among them (the conventions keep those apart)."""
    kept: list[Msg] = []
    system: list[dict[str, Any]] = []
    for m in messages:
        if m["role"] in ("system", "developer"):
            system.extend(m["parts"])
        else:
            kept.append(m)
    return kept, system


def _read(inp: list[Msg], out: list[Msg], system: list[dict[str, Any]], model: Any) -> Read | None:
    if not inp and not out:
        return None
    return Read(inp, out, system, model if isinstance(model, str) else None)


# -- OpenAI's chat messages (Logfire's first conventions, and other recorders' parts) ------


def _openai_content(content: Any) -> list[dict[str, Any]]:
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "content": content}]
    if not isinstance(content, list):
        return [{"type": "text", "content": _text(content)}]
    parts: list[dict[str, Any]] = []
    for p in content:
        if isinstance(p, dict) and p.get("type") == "text":
            parts.append({"type": "text", "content": _text(p.get("text", ""))})
        elif isinstance(p, dict) and p.get("type") == "image_url":
            url = (p.get("image_url") or {}) if isinstance(p.get("image_url"), dict) else {}
            parts.append({"type": "uri", "modality": "image", "uri": _text(url.get("url", ""))})
        else:
            parts.append({"type": "text", "content": _text(p)})
    return parts


def _openai_calls(calls: Any) -> list[dict[str, Any]]:
    parts = []
    for c in calls if isinstance(calls, list) else ():
        if not isinstance(c, dict):
            continue
        fn = c.get("function") if isinstance(c.get("function"), dict) else c
        parts.append(
            {
                "type": "tool_call",
                "id": c.get("id"),
                "name": fn.get("name"),
                "arguments": _arguments(fn.get("arguments")),
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
        return _message("tool", [part])
    parts = _openai_content(m.get("content")) + _openai_calls(m.get("tool_calls"))
    return _message(role, parts, finish)


def read_openai_json(attrs: Attrs, events: Events) -> Read | None:
    """Logfire's instrument_openai() before its version 2: `request_data` holds the
    request as sent, `response_data` the reply's message."""
    request = _json(attrs.get("request_data"))
    response = _json(attrs.get("response_data"))
    request = request if isinstance(request, dict) else {}
    response = response if isinstance(response, dict) else {}
    inp = [m for m in map(openai_message, request.get("messages") or ()) if m]
    reasons = attrs.get("gen_ai.response.finish_reasons")
    finish = reasons[0] if isinstance(reasons, list) and reasons else None
    answer = response.get("message")
    if answer is None and isinstance(response.get("combined_chunk_content"), str):
        answer = {"role": "assistant", "content": response["combined_chunk_content"]}
    out = [m for m in (openai_message(answer, finish),) if m]
    kept, system = _split(inp)
    return _read(kept, out, system, request.get("model"))


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
    content = _json(fields.get("content"))
    if role == "tool":
        part = {"type": "tool_call_response", "id": fields.get("tool_call_id")}
        part["response"] = fields.get("content")
        return _message("tool", [part])
    parts = _openai_content(content if isinstance(content, list) else fields.get("content"))
    for block in indexed(fields, "contents."):  # OpenInference's multi-part content
        kind = block.get("message_content.type")
        if kind == "text":
            parts.append({"type": "text", "content": _text(block.get("message_content.text"))})
        elif kind == "image":
            url = block.get("message_content.image.image.url")
            parts.append({"type": "uri", "modality": "image", "uri": _text(url or "")})
    for c in indexed(fields, call):
        parts.append(
            {
                "type": "tool_call",
                "id": c.get(call_id),
                "name": c.get(call_name),
                "arguments": _arguments(c.get(call_args)),
            }
        )
    return _message(role, parts, fields.get("finish_reason"))


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

    inp, system = _split(messages("llm.input_messages."))
    out = messages("llm.output_messages.")
    finish = attrs.get("llm.finish_reason")
    if out and isinstance(finish, str) and "finish_reason" not in out[-1]:
        out[-1]["finish_reason"] = finish
    return _read(inp, out, system, attrs.get("llm.model_name"))


def read_openllmetry(attrs: Attrs, events: Events) -> Read | None:
    """OpenLLMetry before 0.55: `gen_ai.prompt.N.*` and `gen_ai.completion.N.*`."""

    def messages(prefix: str) -> list[Msg]:
        return [
            _flat_message(f, "tool_calls.", "id", "name", "arguments")
            for f in indexed(attrs, prefix)
        ]

    inp, system = _split(messages("gen_ai.prompt."))
    model = attrs.get("gen_ai.request.model") or attrs.get("gen_ai.response.model")
    return _read(inp, messages("gen_ai.completion."), system, model)


# -- the conventions' first events: Strands' span events, pydantic-ai 1.x's `events` -------


def _blocks(content: Any) -> list[dict[str, Any]]:
    """Content as recorded in an event: text, OpenAI parts, or Bedrock's content blocks
    (Strands: `text`, `toolUse`, `toolResult`, `reasoningContent`)."""
    content = _json(content)
    if not isinstance(content, list):
        return _openai_content(content)
    parts: list[dict[str, Any]] = []
    for b in content:
        if not isinstance(b, dict):
            parts.append({"type": "text", "content": _text(b)})
        elif "toolUse" in b and isinstance(b["toolUse"], dict):
            use = b["toolUse"]
            parts.append(
                {
                    "type": "tool_call",
                    "id": use.get("toolUseId"),
                    "name": use.get("name"),
                    "arguments": _arguments(use.get("input")),
                }
            )
        elif "toolResult" in b and isinstance(b["toolResult"], dict):
            result = b["toolResult"]
            parts.append(
                {
                    "type": "tool_call_response",
                    "id": result.get("toolUseId"),
                    "response": _tool_result(result.get("content")),
                }
            )
        elif "reasoningContent" in b:
            reasoning = b["reasoningContent"]
            text = reasoning.get("reasoningText", {}) if isinstance(reasoning, dict) else {}
            content = text.get("text") if isinstance(text, dict) else None
            parts.append({"type": "reasoning", "content": _text(content or "")})
        elif "text" in b and "type" not in b:
            parts.append({"type": "text", "content": _text(b["text"])})
        else:
            parts.extend(_openai_content([b]))
    return parts


def _tool_result(content: Any) -> Any:
    """A Bedrock tool result's content: its text when it is only text, else as it is."""
    if isinstance(content, list) and all(isinstance(c, dict) and set(c) == {"text"} for c in content):
        return "".join(_text(c["text"]) for c in content)
    return content


def _event_message(name: str, body: dict[str, Any]) -> Msg | None:
    role = name.removeprefix("gen_ai.").removesuffix(".message")
    if role == "tool":
        blocks = _json(body.get("content"))
        if isinstance(blocks, list) and any(isinstance(b, dict) and "toolResult" in b for b in blocks):
            return _message("tool", _blocks(blocks))
        part = {"type": "tool_call_response", "id": body.get("id"), "response": body.get("content")}
        return _message("tool", [part])
    return _message(role, _blocks(body.get("content")) + _openai_calls(body.get("tool_calls")))


def _choice(body: dict[str, Any]) -> Msg:
    message = _json(body.get("message"))
    finish = body.get("finish_reason")
    if isinstance(message, dict):
        m = openai_message({"role": "assistant", **message}, finish)
        return m or _message("assistant", [], finish)
    return _message("assistant", _blocks(message), finish)


def read_event_messages(events: Events, model: Any) -> Read | None:
    """The conventions' first events, in order: `gen_ai.{system,user,assistant,tool}.message`
    for the history, `gen_ai.choice` for the reply."""
    inp: list[Msg] = []
    out: list[Msg] = []
    for name, body in events:
        if name == "gen_ai.choice":
            out.append(_choice(body))
        elif name in ("gen_ai.system.message", "gen_ai.user.message",
                      "gen_ai.assistant.message", "gen_ai.tool.message"):
            m = _event_message(name, body)
            if m is not None:
                inp.append(m)
    kept, system = _split(inp)
    return _read(kept, out, system, model)


def read_span_events(attrs: Attrs, events: Events) -> Read | None:
    """Messages in span events: the operation-details event of the latest conventions
    (Strands with gen_ai_latest_experimental), else the first events (Strands' default)."""
    details: dict[str, Any] = {}
    for name, body in events:
        if name == "gen_ai.client.inference.operation.details":
            details.update(body)
    if details:
        inp, out, system = (
            _json(details.get(k))
            for k in ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions")
        )
        return _read(
            inp if isinstance(inp, list) else [],
            out if isinstance(out, list) else [],
            system if isinstance(system, list) else [],
            attrs.get("gen_ai.request.model"),
        )
    return read_event_messages(events, attrs.get("gen_ai.request.model"))


def read_events_attribute(attrs: Attrs, events: Events) -> Read | None:
    """pydantic-ai 1.x's first instrumentation: the events as a JSON list attribute,
    each with its `event.name`."""
    listed = _json(attrs.get("events"))
    if not isinstance(listed, list):
        return None
    named = [(str(e.get("event.name")), e) for e in listed if isinstance(e, dict)]
    return read_event_messages(named, attrs.get("gen_ai.request.model"))


# -- Google ADK ---------------------------------------------------------------------------


def _gemini_parts(parts: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for p in parts if isinstance(parts, list) else ():
        if not isinstance(p, dict):
            continue
        call = p.get("function_call")
        result = p.get("function_response")
        if isinstance(call, dict):
            out.append(
                {"type": "tool_call", "id": call.get("id"), "name": call.get("name"),
                 "arguments": call.get("args")}
            )
        elif isinstance(result, dict):
            out.append(
                {"type": "tool_call_response", "id": result.get("id"),
                 "response": result.get("response")}
            )
        elif p.get("thought") and isinstance(p.get("text"), str):
            out.append({"type": "reasoning", "content": p["text"]})
        elif isinstance(p.get("text"), str):
            out.append({"type": "text", "content": p["text"]})
    return out


def _gemini_message(content: Any, finish: Any = None) -> Msg | None:
    if not isinstance(content, dict):
        return None
    role = {"model": "assistant"}.get(str(content.get("role")), str(content.get("role") or "user"))
    parts = _gemini_parts(content.get("parts"))
    if parts and all(p["type"] == "tool_call_response" for p in parts):
        role = "tool"
    return _message(role, parts, finish)


def read_adk(attrs: Attrs, events: Events) -> Read | None:
    """Google ADK: `gcp.vertex.agent.llm_request` and `…llm_response` (Gemini's JSON)."""
    request = _json(attrs.get("gcp.vertex.agent.llm_request"))
    response = _json(attrs.get("gcp.vertex.agent.llm_response"))
    request = request if isinstance(request, dict) else {}
    response = response if isinstance(response, dict) else {}
    inp = [m for m in map(_gemini_message, request.get("contents") or ()) if m]
    out = [m for m in (_gemini_message(response.get("content"), response.get("finish_reason")),) if m]
    config = request.get("config") if isinstance(request.get("config"), dict) else {}
    instruction = config.get("system_instruction")
    system = [{"type": "text", "content": _text(instruction)}] if instruction else []
    return _read(inp, out, system, request.get("model"))
