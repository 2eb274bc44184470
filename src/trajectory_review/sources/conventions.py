"""Other recorders' model calls, told by the attributes they write: read, or said.

This app replays the OpenTelemetry GenAI conventions (`gen_ai.input.messages`,
`gen_ai.output.messages`). Other recorders write a model call's content under names of
their own; read as GenAI spans only, their traces replayed as nothing, and the list just
said there was nothing, or blamed content capture that was on all along. Each entry here
is one such convention: what marks its model calls (attribute keys, or span events on a
chat span), who writes it, the reader that rewrites its content as the conventions'
messages (sources/readers.py), and what to change when it cannot be read. The index hands
the marked spans to their reader as it is built (index/ingest.py); what no reader can
read is counted and said in one line per convention.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from trajectory_review.sources import event_readers, readers
from trajectory_review.sources.readers import Reader


@dataclass(frozen=True)
class Convention:
    name: str
    who: str  # the recorders that write it
    keys: tuple[str, ...]  # any of these attribute keys marks a span as its model call
    setting: str  # what makes its traces readable here (said when a call reads as nothing)
    read: Reader | None = None  # None: not read, only said
    # span events that mark a chat span (gen_ai.operation.name) as this convention's
    events: tuple[str, ...] = ()


# Where each convention keeps the id of the conversation (session, thread) a span belongs
# to, first found first, when no span of its trace says gen_ai.conversation.id.
SESSION_KEYS = (
    "gen_ai.conversation.id",
    "session.id",  # OpenInference, Strands, and the general OpenTelemetry attribute
    "traceloop.association.properties.session_id",  # OpenLLMetry
    "langsmith.metadata.thread_id",
    "langsmith.metadata.session_id",
    "gcp.vertex.agent.session_id",  # Google ADK
)


CONVENTIONS = (
    Convention(
        "OpenInference",
        "Arize Phoenix and OpenInference's instrumentors (LangChain, LlamaIndex, OpenAI, "
        "OpenAI Agents, CrewAI, Bedrock)",
        (
            "llm.input_messages.0.message.role",
            "llm.output_messages.0.message.role",
            "llm.model_name",
        ),
        "record the messages: OpenInference's hide_inputs and hide_outputs "
        "(OPENINFERENCE_HIDE_INPUTS, OPENINFERENCE_HIDE_OUTPUTS) must be off",
        readers.read_openinference,
    ),
    Convention(
        "OpenLLMetry (before 0.55)",
        "Traceloop's OpenLLMetry instrumentors",
        # llm.request.type: its model calls with content off (TRACELOOP_TRACE_CONTENT)
        (
            "gen_ai.prompt.0.role",
            "gen_ai.prompt.0.content",
            "gen_ai.completion.0.content",
            "llm.request.type",
        ),
        "record the messages: TRACELOOP_TRACE_CONTENT=true (or upgrade the "
        "opentelemetry-instrumentation-* packages to 0.55 or later)",
        readers.read_openllmetry,
    ),
    Convention(
        "GenAI span events",
        "Strands Agents and other recorders of the GenAI conventions' events",
        (),
        "record the events' content (Strands records it unless told not to; others: "
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true)",
        event_readers.read_span_events,
        events=(
            "gen_ai.client.inference.operation.details",
            "gen_ai.user.message",
            "gen_ai.choice",
        ),
    ),
    Convention(
        "Logfire (version 1)",
        "Logfire's instrument_openai() and instrument_anthropic() before version 2",
        ("request_data", "response_data"),
        "instrument with Logfire's GenAI conventions (instrument_openai(version=2) or "
        "version='latest')",
        readers.read_openai_json,
    ),
    Convention(
        "pydantic-ai 1.x events",
        "pydantic-ai's first instrumentation (InstrumentationSettings(version=1))",
        ("events",),
        "instrument with InstrumentationSettings(version=2) or later, or upgrade "
        "pydantic-ai to 2.x, which writes gen_ai.input.messages",
        event_readers.read_events_attribute,
    ),
    Convention(
        "Google ADK",
        "Google's Agent Development Kit",
        ("gcp.vertex.agent.llm_request", "gcp.vertex.agent.llm_response"),
        "record the content: ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS must not be false",
        event_readers.read_adk,
    ),
    Convention(
        "LangSmith",
        "LangSmith's OpenTelemetry export (LangChain-serialised prompts)",
        ("gen_ai.prompt", "gen_ai.completion"),
        "trace LangChain with OpenInference's LangChain instrumentor or OpenLLMetry's "
        "(opentelemetry-instrumentation-langchain 0.55 or later), whose messages this "
        "app reads; LangSmith's own export serialises LangChain objects instead",
    ),
    Convention(
        "Vercel AI SDK",
        "the Vercel AI SDK's experimental_telemetry",
        ("ai.prompt", "ai.prompt.messages", "ai.response.text"),
        "export the calls through an instrumentation that writes the OpenTelemetry GenAI "
        "conventions (gen_ai.input.messages, gen_ai.output.messages)",
    ),
)

BY_NAME = {c.name: c for c in CONVENTIONS}


# What Logfire writes in place of a value it scrubbed: it scrubs attributes whose names say
# "session". Taken as a session id, every scrubbed session of every user was one
# conversation; such a value names none.
SCRUBBED = "[Scrubbed due to "

# Every attribute key and event name that marks a model call some reader reads: what an
# engine that fetches only what it reads (ClickHouse) fetches whole.
MARK_KEYS = tuple(dict.fromkeys(k for c in CONVENTIONS if c.read for k in c.keys))
MARK_EVENTS = tuple(dict.fromkeys(e for c in CONVENTIONS if c.read for e in c.events))


def convention_of(keys: Container[str], events: Iterable[str], is_chat: bool) -> str | None:
    """The convention a span's attribute keys or (on a chat span) event names mark, first
    entry first: the rule of convention_sql, for an engine that resolves in Python."""
    names = set(events) if is_chat else set()
    for c in CONVENTIONS:
        if any(k in keys for k in c.keys) or names.intersection(c.events):
            return c.name
    return None


def session_of(attrs: Mapping[str, Any]) -> str | None:
    """A span's conversation id by SESSION_KEYS, a scrubbed value skipped (session_sql)."""
    for k in SESSION_KEYS:
        v = attrs.get(k)
        if isinstance(v, str) and not v.startswith(SCRUBBED):
            return v
    return None


def convention_sql(keys: str, events: str, is_chat: str, has_events: str) -> str:
    """A SQL expression naming the convention a span's attribute keys (`keys`, a list) or,
    on a chat span (`is_chat`) with events (`has_events`), its event names (`events`, a
    list) mark, else NULL: one CASE, first entry first, behind one test of every
    convention's keys at once (most spans are of none, and each test is a pass over the
    span's keys)."""
    whens = []
    for c in CONVENTIONS:
        tests = [f"list_has_any({keys}, {list(c.keys)!r})"] if c.keys else []
        if c.events:
            tests.append(f"({is_chat} AND list_has_any({events}, {list(c.events)!r}))")
        whens.append(f"WHEN {' OR '.join(tests)} THEN {c.name!r}")
    every = list(dict.fromkeys(k for c in CONVENTIONS for k in c.keys))
    marked = f"(list_has_any({keys}, {every!r}) OR ({is_chat} AND {has_events}))"
    return f"CASE WHEN {marked} THEN CASE {' '.join(whens)} END END"


def session_sql(lookup: Callable[[str], str], keys: str) -> str:
    """A SQL expression for a span's conversation id: the first of SESSION_KEYS it holds;
    `lookup(key)` is the expression for one key's value, `keys` the span's keys (a list).
    The recorders' own keys are looked up only on a span that has one of them (one pass
    over its keys, not one per key)."""
    first, *others = SESSION_KEYS
    return (
        f"coalesce({lookup(first)}, CASE WHEN list_has_any({keys}, {others!r}) THEN "
        f"coalesce({', '.join(lookup(k) for k in others)}) END)"
    )


def unread_note(name: str, spans: int) -> str:
    c = BY_NAME[name]
    return (
        f"{spans:,} span(s) look like model calls recorded with {c.name} ({c.who}), but "
        f"carry no messages this app can read: {c.setting}"
    )
