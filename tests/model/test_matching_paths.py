"""A conversation whose calls all lie on one history is matched by positions in that
history (matching._linear), not by the hashed prefixes every other conversation goes
through. The two must never disagree: same exchanges, same record on each, same
conflicts, same calls in the same order, same warnings in the same order."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trajectory_review.index.rows import ChatRow, TurnRow, resolved, stored_attribute
from trajectory_review.model import matching
from trajectory_review.model.matching import build_conversation, conversation_from_rows
from trajectory_review.model.reader import TraceReader

ROOT = Path(__file__).resolve().parents[2]


def _text(role: str, content: str) -> dict:
    return {"role": role, "parts": [{"type": "text", "content": content}]}


def _tool_call(n: int) -> dict:
    return {
        "role": "assistant",
        "parts": [{"type": "tool_call", "id": f"c{n}", "name": "query", "arguments": {"n": n}}],
    }


def _tool_result(n: int) -> dict:
    return {"role": "user", "parts": [{"type": "tool_call_response", "id": f"c{n}", "response": n}]}


@st.composite
def _conversations(draw: st.DrawFn) -> tuple[list[ChatRow], list[TurnRow]]:
    """Calls of one conversation as a recorder writes them: each model call's input is
    the history so far and its output the next assistant message. Questions, answers,
    times, turn spans and their records come from small pools, so repeats, ties,
    conflicting and missing records, retried calls, answers continued by another call and
    edits (a second path) all occur."""
    words = st.sampled_from(["how many?", "why?", "ok", ""])
    history: list[dict] = []
    calls: list[tuple[list[dict], dict, str | None]] = []  # (input, output, turn span id)
    tool = 0
    if draw(st.integers(0, 5)) == 0:  # a greeting before any question
        history.append(_text("assistant", "Hello"))
        calls.append(([], history[0], "t1"))
    for _ in range(draw(st.integers(0 if calls else 1, 4))):
        history.append(_text("user", draw(words)))
        turn = draw(st.sampled_from(["t1", "t2", "t3", None]))
        for _ in range(draw(st.integers(0, 2))):  # rounds of the tool loop
            tool += 1
            calls.append((list(history), _tool_call(tool), turn))
            history += [_tool_call(tool), _tool_result(tool)]
        if draw(st.booleans()) or not calls:  # else cut off at its tool result
            answer = _text("assistant", draw(words))
            calls.append((list(history), answer, turn))
            history.append(answer)
            if draw(st.integers(0, 3)) == 0:  # the answer continued by a further call
                more = _text("assistant", draw(words))
                calls.append((list(history), more, draw(st.sampled_from(["t1", "t2", None]))))
                history.append(more)
        if draw(st.integers(0, 4)) == 0 and calls:  # a retried call: the same input again
            calls.append(calls[-1])
    if draw(st.integers(0, 3)) == 0:  # an edit: an earlier question asked otherwise
        cut = draw(st.integers(0, len(history) - 1))
        calls.append((history[:cut] + [_text("user", "edited")], _text("assistant", "x"), "t9"))
    rows = []
    for n, (inp, out, turn) in enumerate(calls):
        start = draw(st.integers(0, 3)) + n // 2  # ties of time between calls
        rows.append(
            ChatRow(
                conversation_id="c1", trace_id="tr", span_id=f"s{n}",
                start_ns=start, end_ns=start + draw(st.integers(0, 2)), turn_span_id=turn,
                input_messages=stored_attribute({"stringValue": json.dumps(inp)}),
                output_messages=json.dumps([out]), system_instructions=None,
                model="m", provider="p", input_tokens=None, output_tokens=None,
            )
        )  # fmt: skip
    tags = st.sampled_from(["A", "B", "C", "Z", None])
    decisions = st.sampled_from([None, "[]", '[{"verified": true}]', "not json"])
    turns = [
        TurnRow("tr", t, None if (tag := draw(tags)) is None else json.dumps(tag), draw(decisions))
        for t in ("t1", "t2", "t3", "t9")
        if draw(st.booleans())
    ]
    order = draw(st.permutations(range(len(rows))))  # the index hands rows in any order
    return [rows[i] for i in order], turns


def _both(rows: list[ChatRow], turns: list[TurnRow], monkeypatch: pytest.MonkeyPatch):
    w_fast: list = []
    fast = build_conversation("c1", rows, turns, w_fast)
    with monkeypatch.context() as m:
        m.setattr(matching, "_is_linear", lambda calls, latest: False)
        w_general: list = []
        general = build_conversation("c1", rows, turns, w_general)
    return fast, w_fast, general, w_general


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_conversations())
def test_a_conversation_on_one_path_matches_as_the_general_matching_does(case):
    rows, turns = case
    with pytest.MonkeyPatch.context() as monkeypatch:
        fast, w_fast, general, w_general = _both(rows, turns, monkeypatch)
    assert fast == general
    assert w_fast == w_general
    if fast is not None:  # the calls in the same order, which equality of tuples checks
        assert [[c.span_id for c in ex.calls] for ex in fast.exchanges] == [
            [c.span_id for c in ex.calls] for ex in general.exchanges
        ]


def test_the_shipped_traces_match_the_same_either_way(monkeypatch):
    reader = TraceReader.open([ROOT / "traces"], cache=False)
    linear = 0
    for cid, streamed in reader.index.iter_chat_rows():
        rows = resolved(cid, streamed)
        fast = conversation_from_rows(cid, rows, [])
        with monkeypatch.context() as m:
            m.setattr(matching, "_is_linear", lambda calls, latest: False)
            general = conversation_from_rows(cid, rows, [])
        assert fast == general, cid
        linear += fast is not None and not fast.branches
    reader.index.close()
    assert linear  # the fast path was taken
