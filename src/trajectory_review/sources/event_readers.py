"""Readers of recorders that write a model call's messages as events (the GenAI
conventions' first events, as span events or as an attribute) or as Gemini's JSON (Google
ADK's first format): the second half of sources/readers.py, whose docstring says what a
reader is."""

from __future__ import annotations

from typing import Any

from trajectory_review.sources.readers import (
    Attrs,
    Events,
    Msg,
    Read,
    as_message,
    as_text,
    maybe_json,
    openai_calls,
    openai_content,
    openai_message,
    read_of,
    split_system,
    tool_arguments,
)

# -- the conventions' first events: Strands' span events, pydantic-ai 1.x's `events` -------


def _blocks(content: Any) -> list[dict[str, Any]]:
    """Content as recorded in an event: text, OpenAI parts, or Bedrock's content blocks
    (Strands: `text`, `toolUse`, `toolResult`, `reasoningContent`)."""
    content = maybe_json(content)
    if not isinstance(content, list):
        return openai_content(content)
    parts: list[dict[str, Any]] = []
    for b in content:
        if not isinstance(b, dict):
            parts.append({"type": "text", "content": as_text(b)})
        elif "toolUse" in b and isinstance(b["toolUse"], dict):
            use = b["toolUse"]
            parts.append(
                {
                    "type": "tool_call",
                    "id": use.get("toolUseId"),
                    "name": use.get("name"),
                    "arguments": tool_arguments(use.get("input")),
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
            parts.append({"type": "reasoning", "content": as_text(content or "")})
        elif "text" in b and "type" not in b:
            parts.append({"type": "text", "content": as_text(b["text"])})
        else:
            parts.extend(openai_content([b]))
    return parts


def _tool_result(content: Any) -> Any:
    """A Bedrock tool result's content: its text when it is only text, else as it is."""
    if isinstance(content, list) and all(
        isinstance(c, dict) and set(c) == {"text"} for c in content
    ):
        return "".join(as_text(c["text"]) for c in content)
    return content


def _event_message(name: str, body: dict[str, Any]) -> Msg | None:
    role = name.removeprefix("gen_ai.").removesuffix(".message")
    if role == "tool":
        blocks = maybe_json(body.get("content"))
        if isinstance(blocks, list) and any(
            isinstance(b, dict) and "toolResult" in b for b in blocks
        ):
            return as_message("tool", _blocks(blocks))
        part = {"type": "tool_call_response", "id": body.get("id"), "response": body.get("content")}
        return as_message("tool", [part])
    return as_message(role, _blocks(body.get("content")) + openai_calls(body.get("tool_calls")))


def _choice(body: dict[str, Any]) -> Msg:
    message = maybe_json(body.get("message"))
    finish = body.get("finish_reason")
    if isinstance(message, dict):
        m = openai_message({"role": "assistant", **message}, finish)
        return m or as_message("assistant", [], finish)
    return as_message("assistant", _blocks(message), finish)


def read_event_messages(events: Events, model: Any) -> Read | None:
    """The conventions' first events, in order: `gen_ai.{system,user,assistant,tool}.message`
    for the history, `gen_ai.choice` for the reply."""
    inp: list[Msg] = []
    out: list[Msg] = []
    for name, body in events:
        if name == "gen_ai.choice":
            out.append(_choice(body))
        elif name in (
            "gen_ai.system.message",
            "gen_ai.user.message",
            "gen_ai.assistant.message",
            "gen_ai.tool.message",
        ):
            m = _event_message(name, body)
            if m is not None:
                inp.append(m)
    kept, system = split_system(inp)
    return read_of(kept, out, system, model)


def read_span_events(attrs: Attrs, events: Events) -> Read | None:
    """Messages in span events: the operation-details event of the latest conventions
    (Strands with gen_ai_latest_experimental), else the first events (Strands' default)."""
    details: dict[str, Any] = {}
    for name, body in events:
        if name == "gen_ai.client.inference.operation.details":
            details.update(body)
    if details:
        inp, out, system = (
            maybe_json(details.get(k))
            for k in (
                "gen_ai.input.messages",
                "gen_ai.output.messages",
                "gen_ai.system_instructions",
            )
        )
        return read_of(
            inp if isinstance(inp, list) else [],
            out if isinstance(out, list) else [],
            system if isinstance(system, list) else [],
            attrs.get("gen_ai.request.model"),
        )
    return read_event_messages(events, attrs.get("gen_ai.request.model"))


def read_events_attribute(attrs: Attrs, events: Events) -> Read | None:
    """pydantic-ai 1.x's first instrumentation: the events as a JSON list attribute,
    each with its `event.name`."""
    listed = maybe_json(attrs.get("events"))
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
                {
                    "type": "tool_call",
                    "id": call.get("id"),
                    "name": call.get("name"),
                    "arguments": call.get("args"),
                }
            )
        elif isinstance(result, dict):
            out.append(
                {
                    "type": "tool_call_response",
                    "id": result.get("id"),
                    "response": result.get("response"),
                }
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
    return as_message(role, parts, finish)


def read_adk(attrs: Attrs, events: Events) -> Read | None:
    """Google ADK: `gcp.vertex.agent.llm_request` and `…llm_response` (Gemini's JSON)."""
    request = maybe_json(attrs.get("gcp.vertex.agent.llm_request"))
    response = maybe_json(attrs.get("gcp.vertex.agent.llm_response"))
    request = request if isinstance(request, dict) else {}
    response = response if isinstance(response, dict) else {}
    inp = [m for m in map(_gemini_message, request.get("contents") or ()) if m]
    out = [
        m for m in (_gemini_message(response.get("content"), response.get("finish_reason")),) if m
    ]
    config = request["config"] if isinstance(request.get("config"), dict) else {}
    instruction = config.get("system_instruction")
    system = [{"type": "text", "content": as_text(instruction)}] if instruction else []
    return read_of(inp, out, system, request.get("model"))
