"""pydantic-ai 2.x writes the current GenAI conventions with a few names of its own (issue
#47): a tool's output under `result` (as the conventions' registry example does) in a
`user` message, its reasoning as `thinking` parts, and `tool-calls` as the finish reason
of a call that asked for a tool. Each reads as its convention's name."""

from __future__ import annotations

from tests.fixtures import Recorder
from trajectory_review.rules.judged import judge_answer
from trajectory_review.rules.registry import load_rules
from trajectory_review_bench.otlp import msg, text

RESULT = {"table": "plots", "rows": [{"stand_id": "S-12", "plot_count": 12}]}
ANSWER = ("Stand S-12 has 12 plots: the `plots` table gives `plot_count` 12 for `stand_id` "
          "S-12, counted from the latest visit of each plot in the inventory.")  # fmt: skip


def _pydantic_ai_history() -> list[dict]:
    return [
        msg("user", text("How many plots does stand S-12 have?")),
        {"role": "assistant", "parts": [
            {"type": "thinking", "content": "I should count the plots of S-12."},
            {"type": "tool_call", "id": "call_1", "name": "run_sql",
             "arguments": {"sql": "select stand_id, count(*) as plot_count from plots"}},
        ], "finish_reason": "tool-calls"},
        {"role": "user", "parts": [
            {"type": "tool_call_response", "id": "call_1", "name": "run_sql", "result": RESULT},
        ]},
        msg("assistant", text(ANSWER)),
    ]  # fmt: skip


def test_a_pydantic_ai_tool_result_reads_as_the_tools_output(read):
    r = Recorder()
    r.bare_chat(_pydantic_ai_history(), conversation_id="pyd-1")
    conv = read(r).conversation("pyd-1")
    (ex,) = conv.exchanges
    (tool,) = ex.tools()
    assert (tool.name, tool.result, tool.answered) == ("run_sql", RESULT, True)
    assert ex.answer_raw == ANSWER and not ex.cut_off
    reasoning = [p for m in ex.messages for p in m.parts if p.type == "reasoning"]
    assert len(reasoning) == 1  # folded under the answer as reasoning, not an unknown part


def test_a_correct_tool_grounded_pydantic_ai_answer_raises_no_flag(read):
    r = Recorder()
    r.bare_chat(_pydantic_ai_history(), conversation_id="pyd-1")
    (ex,) = read(r).conversation("pyd-1").exchanges
    assert judge_answer(ex, load_rules()).failed == []
