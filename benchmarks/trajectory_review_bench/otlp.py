"""Writing OTLP/JSON spans: used by `generate` and by the tests' fixtures."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

TURN_SPAN = "commons_conversation_turn"
PROVENANCE_SPAN = "commons_provenance"  # today's commons: the record, set at the start


def any_value(v: Any) -> dict[str, Any]:
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    if isinstance(v, list | tuple):
        return {"arrayValue": {"values": [any_value(x) for x in v]}}
    if isinstance(v, dict):
        return {
            "kvlistValue": {"values": [{"key": k, "value": any_value(x)} for k, x in v.items()]}
        }
    return {"stringValue": str(v)}


def attributes(attrs: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"key": k, "value": any_value(v)} for k, v in attrs.items() if v is not None]


def span(
    trace_id: str,
    span_id: str,
    name: str,
    start_ns: int,
    end_ns: int,
    parent: str | None = "",
    attrs: dict[str, Any] | None = None,
    kind: int = 1,
) -> dict[str, Any]:
    s: dict[str, Any] = {"traceId": trace_id, "spanId": span_id}
    if parent is not None:
        s["parentSpanId"] = parent
    s.update(
        {
            "name": name,
            "kind": kind,
            "startTimeUnixNano": str(start_ns),
            "endTimeUnixNano": str(end_ns),
            "attributes": attributes(attrs or {}),
            "status": {},
        }
    )
    return s


def text(content: str) -> dict[str, Any]:
    return {"type": "text", "content": content}


def tool_call(call_id: str, name: str, arguments: Any) -> dict[str, Any]:
    return {"type": "tool_call", "id": call_id, "name": name, "arguments": arguments}


def tool_result(call_id: str | None, response: Any) -> dict[str, Any]:
    part: dict[str, Any] = {"type": "tool_call_response", "response": response}
    if call_id is not None:
        part["id"] = call_id
    return part


def msg(role: str, *parts: dict[str, Any]) -> dict[str, Any]:
    return {"role": role, "parts": list(parts)}


def chat_attrs(
    input_messages: Sequence[dict[str, Any]],
    output_messages: Sequence[dict[str, Any]],
    system: str | None = None,
    model: str = "claude-sonnet-4",
    conversation_id: str | None = None,
    usage: tuple[int, int] | None = None,
) -> dict[str, Any]:
    attrs: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": model,
        "gen_ai.provider.name": "anthropic",
    }
    if conversation_id:
        attrs["gen_ai.conversation.id"] = conversation_id
    if system is not None:
        attrs["gen_ai.system_instructions"] = json.dumps([{"type": "text", "content": system}])
    attrs["gen_ai.input.messages"] = json.dumps(list(input_messages), ensure_ascii=False)
    attrs["gen_ai.output.messages"] = json.dumps(list(output_messages), ensure_ascii=False)
    if usage:
        attrs["gen_ai.usage.input_tokens"] = usage[0]
        attrs["gen_ai.usage.output_tokens"] = usage[1]
    return attrs


def turn_attrs(
    conversation_id: str, tag: str | None, decisions: Sequence[dict[str, Any]] | None
) -> dict[str, Any]:
    attrs: dict[str, Any] = {"gen_ai.conversation.id": conversation_id}
    if tag is not None:
        attrs["commons.provenance.tag"] = tag
    if decisions is not None:
        attrs["commons.citation.candidates"] = json.dumps(list(decisions), ensure_ascii=False)
    return attrs


def envelope(spans: Sequence[dict[str, Any]], service: str = "commons") -> dict[str, Any]:
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": attributes({"service.name": service})},
                "scopeSpans": [
                    {"scope": {"name": "co.posit.r-package.commons"}, "spans": list(spans)}
                ],
            }
        ]
    }


def line(spans: Sequence[dict[str, Any]]) -> str:
    return json.dumps(envelope(spans), ensure_ascii=False, separators=(",", ":"))
