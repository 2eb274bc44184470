"""What newer recorders add around a turn changes nothing (issue #46): shinychat's
`shinychat.response` root span above the turn, and `gen_ai.conversation.id` on
`execute_tool` spans (allowed there by the GenAI conventions now)."""

from __future__ import annotations

from tests.fixtures import CALL, RESULT, A, Q, Recorder
from trajectory_review_bench import otlp

HISTORY = [Q("How many plots?"), CALL("t1", "run_sql", {"sql": "select 1"}),
           RESULT("t1", "12"), A("There are 12 plots in the stand inventory.")]  # fmt: skip


def _plain(read):
    r = Recorder()
    r.turn("conv-1", HISTORY, tag="B", decisions=[])
    return read(r)


def _with_extras(read, tool_conversation: str):
    r = Recorder()
    trace = r.turn("conv-1", HISTORY, tag="B", decisions=[])
    root = "f" * 16
    turn = next(s for s in r.spans if s["name"] == otlp.TURN_SPAN)
    turn["parentSpanId"] = root
    r.spans.append(otlp.span(trace, root, "shinychat.response", int(turn["startTimeUnixNano"]) - 1,
                             int(turn["endTimeUnixNano"]) + 1))  # fmt: skip
    agent = next(s for s in r.spans if s["name"] == "invoke_agent")
    r.spans.append(otlp.span(trace, "e" * 16, "execute_tool run_sql",
                             int(agent["startTimeUnixNano"]), int(agent["endTimeUnixNano"]),
                             parent=agent["spanId"],
                             attrs={"gen_ai.conversation.id": tool_conversation,
                                    "gen_ai.tool.name": "run_sql"}))  # fmt: skip
    return read(r)


def _view(reader):
    out = []
    for cid, conv, why in reader.iter_conversations():
        assert conv is not None, why
        out.append((cid, [(ex.question, ex.answer_raw, ex.tag, ex.tools()) for ex in
                          conv.exchanges], [w.message for w in conv.warnings]))  # fmt: skip
    return out


def test_a_root_span_above_the_turn_and_ids_on_tool_spans_change_nothing(read):
    plain = _view(_plain(read))
    for tool_conversation in ("conv-1", "another-id-altogether"):
        assert _view(_with_extras(read, tool_conversation)) == plain
