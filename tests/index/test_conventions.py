"""Other recorders' model calls are never a silent empty (issue #47): spans shaped after
OpenInference, OpenLLMetry before 0.55, Vercel AI, Logfire, pydantic-ai 1.x, LangSmith and
Google ADK each give one line naming the recorder and what to change; "content capture
was off" is said only when it is true."""

from __future__ import annotations

import json

import pytest

from tests.fixtures import Recorder
from trajectory_review.model.reader import TraceReader
from trajectory_review_bench import otlp

QUESTION, ANSWER = "How many plots?", "There are 12 plots."
SHAPES = {
    "OpenInference": {"openinference.span.kind": "LLM", "llm.model_name": "gpt-4o",
                      "llm.input_messages.0.message.role": "user",
                      "llm.input_messages.0.message.content": QUESTION,
                      "llm.output_messages.0.message.role": "assistant",
                      "llm.output_messages.0.message.content": ANSWER, "session.id": "s1"},
    "OpenLLMetry (before 0.55)": {"gen_ai.prompt.0.role": "user",
                                  "gen_ai.prompt.0.content": QUESTION,
                                  "gen_ai.completion.0.content": ANSWER},
    "Vercel AI SDK": {"ai.prompt.messages": json.dumps([{"role": "user", "content": QUESTION}]),
                      "ai.response.text": ANSWER},
    "Logfire": {"request_data": json.dumps({"messages": [{"role": "user", "content": QUESTION}]}),
                "response_data": json.dumps({"message": {"content": ANSWER}})},
    "pydantic-ai 1.x": {"gen_ai.operation.name": "chat",
                        "events": json.dumps([{"event.name": "gen_ai.user.message",
                                               "content": QUESTION}])},
    "LangSmith": {"gen_ai.operation.name": "chat", "gen_ai.prompt": QUESTION,
                  "gen_ai.completion": ANSWER},
    "Google ADK": {"gen_ai.operation.name": "chat",
                   "gcp.vertex.agent.llm_request": json.dumps({"contents": [QUESTION]})},
}  # fmt: skip


def _read(tmp_path, attrs: dict) -> TraceReader:
    r = Recorder()
    r.spans.append(otlp.span("a" * 32, "b" * 16, "llm call", 10**18, 10**18 + 1, attrs=attrs))
    return TraceReader.open([r.write(tmp_path / "t.jsonl")], cache=False)


@pytest.mark.parametrize("name", list(SHAPES))
def test_a_model_call_of_another_convention_says_what_to_change(tmp_path, name):
    said = [w.message for w in _read(tmp_path, SHAPES[name]).source_warnings()]
    (line,) = [w for w in said if "look like model calls" in w]
    assert f"recorded with {name} (" in line and "\n" not in line
    assert not [w for w in said if "content capture" in w]  # it was on: not blamed


def test_a_chat_span_without_any_content_still_blames_content_capture(tmp_path):
    said = [w.message for w in _read(tmp_path, {"gen_ai.operation.name": "chat"}).source_warnings()]
    assert [w for w in said if "content capture was off" in w]
    assert not [w for w in said if "look like model calls" in w]
