"""Record trace fixtures with real GenAI recorders: `tests/data/recorders/*.jsonl`.

Each recorder talks to a scripted OpenAI-compatible server on 127.0.0.1 (no network): a
question makes the "model" call a tool (`run_sql`), the tool result makes it answer, a
question about everything makes it stop at its token limit (`finish_reason: length`), and
a question about the outage makes the server fail (HTTP 500). The spans are written as
OTLP/JSON lines with the OTLP exporters' own protobuf encoding (ids as hex, as the
OTLP/JSON spec asks), so what the tests read is exactly what each recorder emits.

    python -m venv /tmp/rec && /tmp/rec/bin/pip install -r scripts/requirements-recorders.txt
    /tmp/rec/bin/python scripts/record_fixtures.py

Recorders: chatlas' own OpenTelemetry instrumentation, and
opentelemetry-instrumentation-openai-v2 on the openai client (versions pinned in
scripts/requirements-recorders.txt). Rerun after changing either; commit the output.
"""

from __future__ import annotations

import base64
import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "recorders"

# The latest GenAI conventions; content capture is switched on per recorder below (each
# reads the same variable with its own values: chatlas `true`, openai-v2 `span_only`).
os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = "gen_ai_latest_experimental"

ANSWER = (
    "Average canopy cover is 61%.\n"
    "<commons-citation>\n\nFollows the weighting rule.\n\n"
    "> Canopy cover is always acre-weighted for reporting.\n\n</commons-citation>\n\n"
    "The query averaged every plot."
)


# -- the scripted model --------------------------------------------------------------------


def reply(messages: list[dict[str, Any]]) -> tuple[int, dict[str, Any]]:
    """(HTTP status, body) for a chat completions request."""
    last = messages[-1]
    content = last.get("content")
    if isinstance(content, list):  # content parts, as chatlas sends them
        content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    text = content if isinstance(content, str) else ""
    if last.get("role") == "tool":
        return 200, completion({"role": "assistant", "content": ANSWER}, "stop")
    if "outage" in text:
        return 500, {"error": {"message": "the model is overloaded", "type": "server_error"}}
    if "everything" in text:
        return 200, completion(
            {"role": "assistant", "content": "Here is everything: the fir"}, "length"
        )
    call = {
        "id": f"call_{len(messages)}",
        "type": "function",
        "function": {
            "name": "run_sql",
            "arguments": json.dumps({"sql": "SELECT avg(canopy) FROM plots"}),
        },
    }
    return 200, completion(
        {"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls"
    )


def completion(message: dict[str, Any], finish: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fixture",
        "object": "chat.completion",
        "created": 1767225600,
        "model": "gpt-4.1-mini",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150},
    }


class Model(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        status, payload = reply(body["messages"])
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


# -- OTLP/JSON lines, encoded as the OTLP exporters encode ---------------------------------


class JsonLinesExporter:
    """A span exporter writing one OTLP/JSON TracesData envelope per batch."""

    def __init__(self, path: Path):
        self.path = path
        path.write_text("")

    def export(self, spans):
        from google.protobuf.json_format import MessageToDict
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
        from opentelemetry.sdk.trace.export import SpanExportResult

        # OTLP/JSON: enums as integers, ids as hex (below)
        doc = MessageToDict(encode_spans(spans), use_integers_for_enums=True)
        for rs in doc.get("resourceSpans", []):
            for ss in rs.get("scopeSpans", []):
                for span in ss.get("spans", []):
                    for key in ("traceId", "spanId", "parentSpanId"):
                        if key in span:  # protobuf's JSON writes bytes as base64
                            span[key] = base64.b64decode(span[key]).hex()
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(doc, separators=(",", ":")) + "\n")
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = 0) -> bool:
        return True


def provider_writing_to(path: Path):
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    provider = TracerProvider(resource=Resource.create({"service.name": path.stem}))
    provider.add_span_processor(SimpleSpanProcessor(JsonLinesExporter(path)))
    return provider


# -- the recorders -------------------------------------------------------------------------


def run_sql(sql: str) -> str:
    """Run SQL against the forest inventory."""
    return '[{"avg_canopy": 0.61}]'


def record_chatlas(base_url: str, provider) -> None:
    import chatlas

    os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "true"
    chat = chatlas.ChatOpenAICompletions(
        base_url=base_url,
        api_key="not-a-key",
        model="gpt-4.1-mini",
        system_prompt="You answer questions about the forest inventory.",
    )
    chat.conversation_id = "chatlas-conversation-1"
    chat.register_tool(run_sql)
    chat.chat("What is the average canopy cover?", echo="none", stream=False)
    chat.chat("Tell me everything about the plots.", echo="none", stream=False)
    # a second conversation with no id set: chatlas leaves the id to the trace
    other = chatlas.ChatOpenAICompletions(
        base_url=base_url, api_key="not-a-key", model="gpt-4.1-mini"
    )
    other.register_tool(run_sql)
    other.chat("How is canopy cover measured?", echo="none", stream=False)
    try:
        other.chat("What caused the outage?", echo="none", stream=False)
    except Exception:
        pass


# The tool the scripted model calls, as an OpenAI client declares it.
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "run_sql",
            "description": "Run SQL against the forest inventory.",
            "parameters": {"type": "object", "properties": {"sql": {"type": "string"}}},
        },
    }
]


def record_openai_v2(base_url: str, provider) -> None:
    import openai
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

    os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "span_only"
    OpenAIInstrumentor().instrument(tracer_provider=provider)
    client = openai.OpenAI(base_url=base_url, api_key="not-a-key", max_retries=0)
    tracer = provider.get_tracer("fixture-app")
    tools = TOOLS
    # one agent turn = one trace; the recorder stamps no conversation id
    with tracer.start_as_current_span("invoke_agent"):
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": "You answer questions about the forest inventory."},
            {"role": "user", "content": "What is the average canopy cover?"},
        ]
        first = client.chat.completions.create(model="gpt-4.1-mini", messages=messages, tools=tools)
        call = first.choices[0].message.tool_calls[0]
        messages.append(first.choices[0].message.model_dump(exclude_none=True))
        messages.append({"role": "tool", "tool_call_id": call.id, "content": run_sql("")})
        client.chat.completions.create(model="gpt-4.1-mini", messages=messages, tools=tools)
    with tracer.start_as_current_span("invoke_agent"):
        client.chat.completions.create(
            model="gpt-4.1-mini",
            messages=[{"role": "user", "content": "Tell me everything about the plots."}],
        )
    with tracer.start_as_current_span("invoke_agent"):
        try:
            client.chat.completions.create(
                model="gpt-4.1-mini",
                messages=[{"role": "user", "content": "What caused the outage?"}],
            )
        except openai.APIError:
            pass
    OpenAIInstrumentor().uninstrument()


def main() -> None:
    from opentelemetry import trace

    OUT.mkdir(parents=True, exist_ok=True)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Model)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        chatlas_provider = provider_writing_to(OUT / "chatlas.jsonl")
        trace.set_tracer_provider(chatlas_provider)  # chatlas uses the global provider
        record_chatlas(base_url, chatlas_provider)
        chatlas_provider.shutdown()
        openai_provider = provider_writing_to(OUT / "openai-v2.jsonl")
        record_openai_v2(base_url, openai_provider)
        openai_provider.shutdown()
    finally:
        server.shutdown()
    time.sleep(0.1)
    for f in sorted(OUT.glob("*.jsonl")):
        print(f"wrote {f.relative_to(OUT.parents[2])}: {len(f.read_text().splitlines())} lines")


if __name__ == "__main__":
    main()
