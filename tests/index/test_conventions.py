"""Other recorders' model calls are never a silent empty (issue #47). A call of a convention
the app reads but whose messages were not recorded, and a call of a convention it does not
read, each give one line naming the recorder and the setting to change; "content capture
was off" is said only when it is true. (What the readers make of real recordings:
tests/model/test_other_recorders.py.)"""

from __future__ import annotations

import json

import pytest

from tests.fixtures import Recorder
from trajectory_review.model.reader import TraceReader
from trajectory_review_bench import otlp

QUESTION, ANSWER = "How many plots?", "There are 12 plots."
# Calls of conventions the app reads, recorded with their content left out
HIDDEN = {
    "OpenInference": {"openinference.span.kind": "LLM", "llm.model_name": "gpt-4o",
                      "session.id": "s1"},
    "OpenLLMetry (before 0.55)": {"llm.request.type": "chat", "gen_ai.request.model": "gpt-4o"},
    "Logfire (version 1)": {"request_data": json.dumps({"model": "gpt-4o"}),
                            "response_data": "{}"},
    "pydantic-ai 1.x events": {"gen_ai.operation.name": "chat", "events": "[]"},
    "Google ADK": {"gcp.vertex.agent.llm_request": "{}", "gcp.vertex.agent.llm_response": "{}"},
}  # fmt: skip
# Calls of conventions the app does not read
UNREAD = {
    "Vercel AI SDK": {"ai.prompt.messages": json.dumps([{"role": "user", "content": QUESTION}]),
                      "ai.response.text": ANSWER},
    "LangSmith": {"gen_ai.operation.name": "chat", "gen_ai.prompt": QUESTION,
                  "gen_ai.completion": ANSWER},
}  # fmt: skip


def _read(tmp_path, *spans: dict) -> TraceReader:
    r = Recorder()
    for i, attrs in enumerate(spans):
        r.spans.append(otlp.span(f"{i + 1:032x}", "b" * 16, "llm call", 10**18, 10**18 + 1,
                                 attrs=attrs))  # fmt: skip
    return TraceReader.open([r.write(tmp_path / "t.jsonl")], cache=False)


@pytest.mark.parametrize("name", [*HIDDEN, *UNREAD])
def test_a_call_whose_messages_cannot_be_read_names_its_recorder_and_the_setting(tmp_path, name):
    reader = _read(tmp_path, {**HIDDEN, **UNREAD}[name])
    said = [w.message for w in reader.source_warnings()]
    (line,) = [w for w in said if "look like model calls" in w]
    assert f"recorded with {name} (" in line and "\n" not in line
    assert not [w for w in said if "content capture" in w]  # not the hint for GenAI spans
    assert [reader.conversation(c) for c in reader.index.conversation_ids()] in ([], [None])


def test_a_chat_span_without_any_content_still_blames_content_capture(tmp_path):
    said = [w.message for w in _read(tmp_path, {"gen_ai.operation.name": "chat"}).source_warnings()]
    assert [w for w in said if "content capture was off" in w]
    assert not [w for w in said if "look like model calls" in w]


def test_a_tool_span_carrying_adks_empty_request_is_no_model_call(tmp_path):
    tool = {"gen_ai.operation.name": "execute_tool", "gcp.vertex.agent.llm_request": "{}",
            "gcp.vertex.agent.llm_response": "{}"}  # fmt: skip
    assert _read(tmp_path, tool).source_warnings() == []


def test_values_shaped_unlike_the_recorders_read_as_far_as_they_go(tmp_path):
    # untrusted: a role that is a list, arguments that are a number, an index past any
    # list, a tool call without a name; nothing raises, the rest still loads
    odd = {
        "llm.input_messages.0.message.role": "user",
        "llm.input_messages.0.message.content": QUESTION,
        "llm.input_messages.99999999999999999999.message.role": ["x"],
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": 7,
        "llm.output_messages.0.message.content": {"not": "text"},
        "session.id": "odd",
    }
    reader = _read(tmp_path, odd, {"events": "[1, {\"event.name\": 2}]",
                                   "gen_ai.operation.name": "chat"})  # fmt: skip
    conv = reader.conversation("odd")
    assert conv is not None and conv.exchanges[0].question == QUESTION


def test_sessions_logfire_scrubbed_stay_apart(tmp_path):
    scrubbed = "[Scrubbed due to 'session']"
    call = {
        "gen_ai.operation.name": "chat",
        "session.id": scrubbed,
        "gen_ai.input.messages": json.dumps([{"role": "user", "content": QUESTION}]),
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "content": ANSWER}]),
    }
    reader = _read(tmp_path, call, call)
    ids = reader.index.conversation_ids()
    assert len(ids) == 2 and scrubbed not in ids  # each trace its own, as with no id


def test_a_value_nested_past_any_parser_drops_that_call_not_the_load(tmp_path):
    deep = "[" * 5000 + "]" * 5000
    nested = {"gen_ai.operation.name": "chat", "request_data": json.dumps({"messages": []})[:-1]
              + ', "x": ' + deep + "}", "response_data": deep}  # fmt: skip
    fine = {
        "gen_ai.operation.name": "chat",
        "session.id": "fine",
        "gen_ai.input.messages": json.dumps([{"role": "user", "content": QUESTION}]),
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "content": ANSWER}]),
    }
    reader = _read(tmp_path, nested, fine)
    assert reader.conversation("fine").exchanges[0].answer_raw == ANSWER
