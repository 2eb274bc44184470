"""Record trace fixtures with other recorders' instrumentations: `tests/data/recorders/`.

Each recorder below runs for real against the scripted OpenAI-compatible model of
scripts/record_fixtures.py on 127.0.0.1 (no network): one session of two questions, each
answered after a `run_sql` tool call. Their libraries do not install side by side (each
pins its own OpenTelemetry), so each has a requirements file of its own, and the script
records one recorder per run, in that recorder's venv:

    python -m venv /tmp/oi && /tmp/oi/bin/pip install -r scripts/recorders/openinference.txt
    /tmp/oi/bin/python scripts/record_other_recorders.py openinference

`make fixtures-recorders` does this for every recorder (REQUIREMENTS says which venv
records which), in venvs under .venv-recorders/; the app never needs them. The fixture is written as
`tests/data/recorders/<recorder>.jsonl`, and beside it `<recorder>.versions`: the installed
version of every distribution the recording ran with.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import json
import os
import sys
import threading
from collections.abc import Callable
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

from record_fixtures import OUT, TOOLS, Model, completion, provider_writing_to, reply

QUESTIONS = ("What is the average canopy cover?", "How is canopy cover measured?")
SYSTEM = "You answer questions about the forest inventory."
MODEL = "gpt-4.1-mini"
SESSION = "forest-session-1"


# The tool's output, and an answer grounded in it: the identifiers it names in backticks
# are the result's own, so a reader that lost the tool result makes the reply rules flag
# it (tests/model/test_other_recorders.py pins that none does).
RESULT = '[{"stand_id": "S-12", "avg_canopy": 0.61, "plot_count": 12}]'
ANSWER = (
    "Stand S-12 has an average canopy cover of 61%: the inventory gives `avg_canopy` 0.61 "
    "for `stand_id` S-12, over `plot_count` 12 plots."
)


def run_sql(sql: str) -> str:
    """Run SQL against the forest inventory."""
    return RESULT


def grounded_reply(messages: list[dict[str, Any]]) -> tuple[int, dict[str, Any]]:
    if messages[-1].get("role") == "tool":
        return 200, completion({"role": "assistant", "content": ANSWER}, "stop")
    return reply(messages)


class StreamingModel(Model):
    """The scripted model, which also answers a streamed request (Strands streams) as
    OpenAI does: the reply's message as server-sent chunks, then `[DONE]`."""

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        status, payload = grounded_reply(body["messages"])
        if not body.get("stream"):
            self.send(status, "application/json", json.dumps(payload).encode())
            return
        choice = payload["choices"][0]
        message = dict(choice["message"])
        calls = [
            {"index": i, **call} for i, call in enumerate(message.pop("tool_calls", None) or [])
        ]
        delta = {k: v for k, v in message.items() if v is not None}
        if calls:
            delta["tool_calls"] = calls
        chunks = [
            {**payload, "object": "chat.completion.chunk", "choices": [c]}
            for c in (
                {"index": 0, "delta": delta, "finish_reason": None},
                {"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]},
            )
        ]
        chunks.append({**chunks[-1], "choices": [], "usage": payload["usage"]})
        data = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
        self.send(status, "text/event-stream", data.encode())

    def send(self, status: int, kind: str, data: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def openai_session(client: Any) -> None:
    """Two questions of one session with the plain openai client, each answered after
    the tool call the scripted model asks for."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}]
    for question in QUESTIONS:
        messages.append({"role": "user", "content": question})
        first = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)
        call = first.choices[0].message.tool_calls[0]
        messages.append(first.choices[0].message.model_dump(exclude_none=True))
        messages.append({"role": "tool", "tool_call_id": call.id, "content": run_sql("")})
        answer = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)
        messages.append({"role": "assistant", "content": answer.choices[0].message.content})


def client_for(base_url: str) -> Any:
    import openai

    return openai.OpenAI(base_url=base_url, api_key="not-a-key", max_retries=0)


def record_openinference(base_url: str, path: Path) -> None:
    from openinference.instrumentation import using_session
    from openinference.instrumentation.openai import OpenAIInstrumentor

    provider = provider_writing_to(path)
    OpenAIInstrumentor().instrument(tracer_provider=provider)
    with using_session(SESSION):
        openai_session(client_for(base_url))
    provider.shutdown()


def association_properties(properties: dict[str, str]) -> Any:
    """What traceloop-sdk's span processor does with `Traceloop.set_association_properties`:
    every span started gets `traceloop.association.properties.<key>`. The SDK itself is
    left out (it installs every instrumentation it has); the instrumentation is real."""
    from opentelemetry.sdk.trace import SpanProcessor

    class AssociationProperties(SpanProcessor):
        def on_start(self, span: Any, parent_context: Any = None) -> None:
            for key, value in properties.items():
                span.set_attribute(f"traceloop.association.properties.{key}", value)

    return AssociationProperties()


def record_traceloop(base_url: str, path: Path) -> None:
    from opentelemetry.instrumentation.openai import OpenAIInstrumentor

    os.environ["TRACELOOP_TRACE_CONTENT"] = "true"
    provider = provider_writing_to(path)
    provider.add_span_processor(association_properties({"session_id": SESSION}))
    OpenAIInstrumentor().instrument(tracer_provider=provider)
    openai_session(client_for(base_url))
    provider.shutdown()


def record_pydantic_ai(base_url: str, path: Path, version: int | None = None) -> None:
    from pydantic_ai import Agent
    from pydantic_ai.models.instrumented import InstrumentationSettings
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    provider = provider_writing_to(path)
    settings: dict[str, Any] = {"tracer_provider": provider}
    if version is not None:
        settings["version"] = version
    model = OpenAIChatModel(MODEL, provider=OpenAIProvider(base_url=base_url, api_key="not-a-key"))
    instrumented = InstrumentationSettings(**settings)
    if version is None:  # 2.x: instrumentation is a capability
        from pydantic_ai.capabilities.instrumentation import Instrumentation

        agent = Agent(model, system_prompt=SYSTEM, capabilities=[Instrumentation(instrumented)])
    else:
        agent = Agent(model, system_prompt=SYSTEM, instrument=instrumented)
    agent.tool_plain(run_sql)
    history: list[Any] = []
    run: Callable[..., Any] = agent.run_sync
    for question in QUESTIONS:
        extra = {"conversation_id": SESSION} if version is None else {}
        result = run(question, message_history=history, **extra)
        history = result.all_messages()
    provider.shutdown()


def record_pydantic_ai_1(base_url: str, path: Path) -> None:
    # pydantic-ai 1.x's first instrumentation (version=1): the messages as an `events`
    # attribute, as teams that kept the old setting still record
    record_pydantic_ai(base_url, path, version=1)


def record_logfire(base_url: str, path: Path, version: Any = None) -> None:
    import logfire
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from record_fixtures import JsonLinesExporter

    logfire.configure(
        send_to_logfire=False,
        console=False,
        service_name=path.stem,
        additional_span_processors=[SimpleSpanProcessor(JsonLinesExporter(path))],
    )
    client = client_for(base_url)
    logfire.instrument_openai(client, **({} if version is None else {"version": version}))
    with logfire.span("forest chat", **{"session.id": SESSION}):
        openai_session(client)
    logfire.force_flush()


def record_logfire_1(base_url: str, path: Path) -> None:
    # Logfire's first conventions (version=1): the request and response as OpenAI's JSON
    record_logfire(base_url, path, version=1)


def record_strands(base_url: str, path: Path) -> None:
    from opentelemetry import trace
    from strands import Agent, tool
    from strands.models.openai import OpenAIModel

    provider = provider_writing_to(path)
    trace.set_tracer_provider(provider)  # Strands records on the global provider

    @tool(name="run_sql")
    def run_sql_tool(sql: str) -> str:
        """Run SQL against the forest inventory."""
        return run_sql(sql)

    model = OpenAIModel(
        client_args={"base_url": base_url, "api_key": "not-a-key", "max_retries": 0},
        model_id=MODEL,
    )
    agent = Agent(
        model=model,
        system_prompt=SYSTEM,
        tools=[run_sql_tool],
        callback_handler=None,
        trace_attributes={"session.id": SESSION},
    )
    for question in QUESTIONS:
        agent(question)
    provider.shutdown()


def record_strands_latest(base_url: str, path: Path) -> None:
    # the latest GenAI conventions: the messages in one operation-details event per call
    os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = "gen_ai_latest_experimental"
    record_strands(base_url, path)


def record_adk(base_url: str, path: Path) -> None:
    from google.adk.agents import LlmAgent
    from google.adk.models.lite_llm import LiteLlm
    from google.adk.runners import InMemoryRunner
    from google.genai import types
    from opentelemetry import trace

    provider = provider_writing_to(path)
    trace.set_tracer_provider(provider)  # ADK records on the global provider
    model = LiteLlm(model=f"openai/{MODEL}", api_base=base_url, api_key="not-a-key")
    agent = LlmAgent(name="forest", model=model, instruction=SYSTEM, tools=[run_sql])
    runner = InMemoryRunner(agent=agent, app_name="forest")

    async def session() -> None:
        s = await runner.session_service.create_session(app_name="forest", user_id="reviewer")
        for question in QUESTIONS:
            message = types.Content(role="user", parts=[types.Part(text=question)])
            async for _ in runner.run_async(
                user_id="reviewer", session_id=s.id, new_message=message
            ):
                pass

    asyncio.run(session())
    provider.shutdown()


def record_adk_content(base_url: str, path: Path) -> None:
    # ADK 2.x writes the latest GenAI conventions, with the messages once asked to
    os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "span_only"
    record_adk(base_url, path)


def record_adk_legacy(base_url: str, path: Path) -> None:
    # ADK's first format (supported until 2027-03-31): gcp.vertex.agent.llm_request/response
    os.environ["ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN"] = "1"
    record_adk(base_url, path)


RECORDERS: dict[str, Callable[[str, Path], None]] = {
    "openinference": record_openinference,
    "traceloop": record_traceloop,
    "traceloop-legacy": record_traceloop,
    "pydantic-ai": record_pydantic_ai,
    "pydantic-ai-1": record_pydantic_ai_1,
    "logfire": record_logfire,
    "logfire-1": record_logfire_1,
    "strands": record_strands,
    "strands-latest": record_strands_latest,
    "google-adk": record_adk_content,
    "google-adk-legacy": record_adk_legacy,
    "google-adk-no-content": record_adk,  # ADK's default: no messages recorded
}


# The requirements file (scripts/recorders/) whose venv records each.
REQUIREMENTS = {
    "openinference": "openinference",
    "traceloop": "traceloop",
    "traceloop-legacy": "traceloop-legacy",
    "pydantic-ai": "pydantic-ai",
    "pydantic-ai-1": "pydantic-ai-1",
    "logfire": "logfire",
    "logfire-1": "logfire",
    "strands": "strands",
    "strands-latest": "strands",
    "google-adk": "google-adk",
    "google-adk-legacy": "google-adk",
    "google-adk-no-content": "google-adk",
}


def versions() -> str:
    rows = sorted(
        f"{d.metadata['Name'].lower()}=={d.version}" for d in importlib.metadata.distributions()
    )
    return "\n".join(dict.fromkeys(rows)) + "\n"


def main(name: str) -> None:
    # record_fixtures switches the latest conventions on for its recorders; here each
    # recorder records as it does by default (strands-latest opts in itself)
    os.environ.pop("OTEL_SEMCONV_STABILITY_OPT_IN", None)
    server = ThreadingHTTPServer(("127.0.0.1", 0), StreamingModel)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    path = OUT / f"{name}.jsonl"
    try:
        RECORDERS[name](base_url, path)
    finally:
        server.shutdown()
    path.with_suffix(".versions").write_text(versions())
    print(f"wrote {path.relative_to(OUT.parents[2])}: {len(path.read_text().splitlines())} lines")


if __name__ == "__main__":
    if sys.argv[1:] == ["--list"]:  # for `make fixtures-recorders`: recorder, requirements
        print("\n".join(f"{name} {REQUIREMENTS[name]}" for name in RECORDERS))
        sys.exit(0)
    if len(sys.argv) != 2 or sys.argv[1] not in RECORDERS:
        sys.exit(f"usage: record_other_recorders.py {{{','.join(RECORDERS)}}}")
    asyncio.set_event_loop(asyncio.new_event_loop())
    main(sys.argv[1])
