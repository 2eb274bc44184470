"""Other recorders' model calls, told by the attributes they write: never a silent empty.

This app reads the OpenTelemetry GenAI conventions (`gen_ai.input.messages`,
`gen_ai.output.messages`). Other recorders write a model call's content under names of
their own; read as GenAI spans only, their traces replayed as nothing, and the list just
said there was nothing, or blamed content capture that was on all along. Each entry here
is one such convention: the attribute keys that mark its model calls, who writes it, and
what to change so the app reads it. The index counts the spans of each that yield no
messages (index/ingest.py), and the reader says so in one line per convention.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Convention:
    name: str
    who: str  # the recorders that write it
    keys: tuple[str, ...]  # any of these attribute keys marks a span as its model call
    setting: str  # what makes its traces readable here


CONVENTIONS = (
    Convention(
        "OpenInference",
        "Arize Phoenix and OpenInference's instrumentors (LangChain, LlamaIndex, OpenAI, "
        "OpenAI Agents, CrewAI, Bedrock)",
        (
            "llm.model_name",
            "llm.input_messages.0.message.role",
            "llm.output_messages.0.message.role",
        ),
        "record with the OpenTelemetry GenAI conventions instead (an instrumentor that "
        "writes gen_ai.input.messages and gen_ai.output.messages)",
    ),
    Convention(
        "OpenLLMetry (before 0.55)",
        "Traceloop's OpenLLMetry instrumentors",
        ("gen_ai.prompt.0.role", "gen_ai.prompt.0.content", "gen_ai.completion.0.content"),
        "upgrade the opentelemetry-instrumentation-* packages to 0.55 or later, which "
        "write gen_ai.input.messages and gen_ai.output.messages",
    ),
    Convention(
        "Vercel AI SDK",
        "the Vercel AI SDK's experimental_telemetry",
        ("ai.prompt", "ai.prompt.messages", "ai.response.text"),
        "export the calls through an instrumentation that writes the OpenTelemetry GenAI "
        "conventions (gen_ai.input.messages, gen_ai.output.messages)",
    ),
    Convention(
        "Logfire",
        "Logfire's instrument_openai() and instrument_anthropic()",
        ("request_data", "response_data"),
        "instrument with the GenAI conventions (Logfire's version='latest')",
    ),
    Convention(
        "pydantic-ai 1.x",
        "pydantic-ai 1.x (messages in an `events` attribute)",
        ("events",),
        "upgrade pydantic-ai to 2.x, which writes gen_ai.input.messages",
    ),
    Convention(
        "LangSmith",
        "LangSmith's OpenTelemetry export (LangChain-serialised prompts)",
        ("gen_ai.prompt", "gen_ai.completion"),
        "export LangChain runs through an instrumentation that writes the OpenTelemetry "
        "GenAI conventions",
    ),
    Convention(
        "Google ADK",
        "Google's Agent Development Kit",
        ("gcp.vertex.agent.llm_request", "gcp.vertex.agent.llm_response"),
        "turn on the GenAI conventions' message content for ADK "
        "(OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT, and the gen_ai latest "
        "experimental semantic conventions)",
    ),
)


def convention_sql(keys: str) -> str:
    """A SQL expression naming the convention whose keys the span's attribute keys
    (`keys`, a list) hold, else NULL: one CASE, first entry first."""
    whens = " ".join(
        f"WHEN list_has_any({keys}, {list(c.keys)!r}) THEN {c.name!r}" for c in CONVENTIONS
    )
    return f"CASE {whens} END"


def unread_note(name: str, spans: int) -> str:
    c = next(c for c in CONVENTIONS if c.name == name)
    return (
        f"{spans:,} span(s) look like model calls recorded with {c.name} ({c.who}), whose "
        f"messages this app does not read: {c.setting}"
    )
