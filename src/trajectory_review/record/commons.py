"""The turn and provenance spans of a Python commons agent, with commons' own decisions.

commons 0.1.0b2 computes an answer's citation decisions and its tag inside the
generator behind `Commons.stream_async` (`commons._agent.Commons._projected`): a
`CitationScanner` built there sees every `<commons-citation>` of the stream, and the tag
goes straight into `provenance_aside`. Neither is returned. Re-deriving them here (our
own scanner over the raw text) would record what *we* think, not what the user was
shown, which is the one thing a review must not do. So the recorder watches those two
names where `_projected` looks them up, the module `commons._agent`: a scanner subclass
that registers itself with the answer being recorded, and a pass-through
`provenance_aside` that notes the tag it was given. Both change nothing commons does.
They are private names: `record` checks that they exist and refuses, with the version
it knows, when a commons release moves them (a recorder that silently recorded nothing
would make every answer "no claim").
"""

from __future__ import annotations

import functools
import json
import logging
import threading
from collections.abc import AsyncGenerator, Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from opentelemetry import trace

from trajectory_review.record.export import configure

log = logging.getLogger("trajectory_review.record")
TRACER_NAME = "co.posit.python-package.commons"  # as commons._tracing names it
TURN_SPAN = "commons_conversation_turn"
PROVENANCE_SPAN = "commons_provenance"
CONVERSATION = "gen_ai.conversation.id"
TAG = "commons.provenance.tag"
CANDIDATES = "commons.citation.candidates"
KNOWN_COMMONS = "0.1.0b2"
# On our own spans: a commons that records itself writes the same names, and this says
# which are ours (the reader then keeps one turn record per answer).
MARKER = "trajectory_review.recorder"
_WATCHED = ("CitationScanner", "provenance_aside")


class RecorderError(RuntimeError):
    """The agent cannot be recorded faithfully (not a commons agent, or a commons
    whose internals the recorder does not know)."""


@dataclass
class _Answer:
    """What commons decided while one answer streamed (filled by the watchers)."""

    scanners: list[Any] = field(default_factory=list)
    tags: list[Any] = field(default_factory=list)

    def candidates(self) -> list[dict[str, Any]]:
        # the first scanner is the one `_projected` built for this answer's stream
        if not self.scanners:
            return []
        return [decision.as_record() for decision in self.scanners[0].candidates]

    def tag(self) -> str | None:
        """The tag commons rendered the pill for; None when no data tool ran (commons
        shows no pill) or the stream ended before commons classified it."""
        if not self.tags or self.tags[0] is None:
            return None
        return str(self.tags[0])  # commons' Tag is a StrEnum: str() is the bare letter


_ANSWER: ContextVar[_Answer | None] = ContextVar("trajectory_review_record", default=None)


def _watch_commons() -> None:
    from commons import _agent

    if getattr(_agent, "_trajectory_review_watched", False):
        return
    missing = [name for name in _WATCHED if not hasattr(_agent, name)]
    if missing:
        import commons

        version = getattr(commons, "__version__", "unknown")
        raise RecorderError(
            f"this commons ({version}) has no commons._agent.{missing[0]}: the recorder "
            f"knows commons {KNOWN_COMMONS} and would record no decisions"
        )
    scanner_class: type[Any] = _agent.CitationScanner
    render_pill = _agent.provenance_aside

    class WatchedScanner(scanner_class):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            answer = _ANSWER.get()
            if answer is not None:
                answer.scanners.append(self)

    @functools.wraps(render_pill)
    def watched_pill(tag: Any, *args: Any, **kwargs: Any) -> str:
        answer = _ANSWER.get()
        if answer is not None:
            answer.tags.append(tag)
        return render_pill(tag, *args, **kwargs)

    _agent.CitationScanner = WatchedScanner
    _agent.provenance_aside = watched_pill
    _agent._trajectory_review_watched = True


def record(agent: Any, *, to: str | Path | None = None) -> Any:
    """Record every answer `agent` streams from now on; returns the agent.

    `to`: a folder (rotated `trace-N.jsonl` files, what the reviewer reads) or an
    `http(s)://` OTLP endpoint. Default: the OTLP endpoint variables when set, else
    `COMMONS_TRACES_DIR`, else `./traces`. An app that set up its own OpenTelemetry
    tracer provider keeps it, and the spans go where it sends them."""
    from commons import Commons

    if not isinstance(agent, Commons):
        raise RecorderError(f"record() takes a commons agent, not {type(agent).__name__}")
    if getattr(agent, "_trajectory_review_recorded", False):
        return agent
    _watch_commons()
    provider = configure(to)
    watch_self_recording(provider)
    tracer = trace.get_tracer(TRACER_NAME)
    streamed = agent.stream_async

    @functools.wraps(streamed)
    async def stream_async(*args: Any, **kwargs: Any) -> AsyncGenerator[Any, None]:
        if SELF_RECORDING.is_set():  # commons records this turn itself: step aside
            return await streamed(*args, **kwargs)
        # shinychat sets the agent's conversation_id just before it calls this
        conversation = agent.conversation_id
        answer = _Answer()
        return _recorded(tracer, lambda: streamed(*args, **kwargs), answer, conversation)

    agent.stream_async = stream_async
    agent._trajectory_review_recorded = True
    return agent


async def _recorded(
    tracer: trace.Tracer,
    start: Callable[[], Any],
    answer: _Answer,
    conversation: str | None,
) -> AsyncGenerator[Any, None]:
    attributes: dict[str, Any] = {MARKER: _marker()}
    if conversation:
        attributes[CONVERSATION] = conversation
    with tracer.start_as_current_span(TURN_SPAN, attributes=attributes) as turn:
        token = _ANSWER.set(answer)
        try:
            stream = await start()
            try:
                async for chunk in stream:
                    yield chunk
            finally:
                await stream.aclose()
        finally:
            try:
                _ANSWER.reset(token)
            except ValueError:  # closed from another context (a dropped generator)
                pass
            if not SELF_RECORDING.is_set():  # found out during this turn: commons' counts
                _write_record(tracer, turn, answer)


def _marker() -> str:
    """`trajectory-review <version>`, from the installed distribution (the recorder
    imports nothing of the reviewer's, its package root included)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"trajectory-review {version('trajectory-review')}"
    except PackageNotFoundError:
        return "trajectory-review"


# Set once a commons turn span that is not ours starts: from then on the recorder records
# nothing (commons' `enable_trajectory_tracing` writes the same turn and provenance spans,
# and every answer would otherwise carry two of each).
SELF_RECORDING = threading.Event()


def watch_self_recording(provider: Any) -> None:
    """Watch the spans that start for a commons turn span we did not write."""
    if getattr(provider, "_trajectory_review_watching", False):
        return
    from opentelemetry.sdk.trace import SpanProcessor

    class SelfRecording(SpanProcessor):
        def on_start(self, span: Any, parent_context: Any = None) -> None:
            scope = getattr(span, "instrumentation_scope", None)
            if (
                span.name == TURN_SPAN
                and getattr(scope, "name", None) == TRACER_NAME
                and MARKER not in (span.attributes or {})
                and not SELF_RECORDING.is_set()
            ):
                SELF_RECORDING.set()
                log.warning(
                    "trajectory-review record: commons records its own turns and "
                    "provenance (enable_trajectory_tracing); the recorder records nothing. "
                    "Point the reviewer at the same COMMONS_TRACES_DIR"
                )

    provider.add_span_processor(SelfRecording())
    provider._trajectory_review_watching = True


def _write_record(tracer: trace.Tracer, turn: trace.Span, answer: _Answer) -> None:
    record: dict[str, Any] = {
        CANDIDATES: json.dumps(answer.candidates(), ensure_ascii=False),
    }
    tag = answer.tag()
    if tag is not None:
        record[TAG] = tag
    # On the turn span too, for readers that predate the provenance span; the child
    # carries it from its start, where Connect keeps a span's attributes.
    turn.set_attributes(record)
    with tracer.start_as_current_span(PROVENANCE_SPAN, attributes={**record, MARKER: _marker()}):
        pass
