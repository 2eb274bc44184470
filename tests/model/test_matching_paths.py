"""Conversations of modest size are matched by positions in each path's history
(matching._by_positions: the canonical history, then each branch's), not by the hashed
prefixes a conversation of thousands of branches goes through. The two must never
disagree: same exchanges, same record on each, same conflicts, same branches, same calls
in the same order, same warnings in the same order."""

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
        if draw(st.integers(0, 3)) == 0 and calls:  # a retried call: the same input again,
            # under its turn or another (two records of one answer: agreeing or not)
            calls.append((*calls[-1][:2], draw(st.sampled_from([calls[-1][2], "t1", "t2"]))))
    for n in range(draw(st.sampled_from([0, 0, 1, 2]))):  # edits: a question asked otherwise
        cut = draw(st.integers(0, len(history) - 1))
        branch = history[:cut] + [_text("user", f"edited {n}")]
        turn = draw(st.sampled_from(["t9", "t3", None]))
        if draw(st.booleans()):  # the edited question answered through a tool
            tool += 1
            calls.append((list(branch), _tool_call(tool), turn))
            branch += [_tool_call(tool), _tool_result(tool)]
        calls.append((branch, _text("assistant", draw(words)), turn))
        if draw(st.booleans()):  # retried under another turn: two records of one answer
            calls.append((*calls[-1][:2], draw(st.sampled_from(["t1", "t2", "t9"]))))
    if history and history[0]["role"] == "assistant" and draw(st.booleans()):
        # the same exchanges after another greeting: a path of its own by its messages,
        # whose record still claims the exchange it ends (the greeting belongs to none)
        end = draw(st.integers(1, len(history)))
        again = [_text("assistant", "Hi"), *history[1:end]]
        if again[-1]["role"] == "assistant" and len(again) > 1:
            calls.append((again[:-1], again[-1], "t3"))
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
    # the last two say the same in another key order: one key, two records (which one
    # is shown must not depend on the matching)
    decisions = st.sampled_from(
        [None, "[]", '[{"verified": true}]', "not json", '[{"a": 1, "b": 2}]', '[{"b": 2, "a": 1}]']
    )
    turns = [
        TurnRow("tr", t, draw(tags), draw(decisions))  # stored as the index keeps a string
        for t in ("t1", "t2", "t3", "t9")
        if draw(st.booleans())
    ]
    order = draw(st.permutations(range(len(rows))))  # the index hands rows in any order
    return [rows[i] for i in order], turns


def _by_hashed_prefixes(m: pytest.MonkeyPatch) -> None:
    """Every conversation through the general matching, whatever its size."""
    m.setattr(matching, "_is_linear", lambda calls, latest: False)
    m.setattr(matching, "POSITIONS_PATHS", 0)


def _both(rows: list[ChatRow], turns: list[TurnRow], monkeypatch: pytest.MonkeyPatch):
    w_fast: list = []
    fast = build_conversation("c1", rows, turns, w_fast)
    with monkeypatch.context() as m:
        _by_hashed_prefixes(m)
        w_general: list = []
        general = build_conversation("c1", rows, turns, w_general)
    return fast, w_fast, general, w_general


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_conversations())
def test_a_conversation_matched_by_positions_matches_as_the_hashed_prefixes_do(case):
    rows, turns = case
    with pytest.MonkeyPatch.context() as monkeypatch:
        fast, w_fast, general, w_general = _both(rows, turns, monkeypatch)
    assert fast == general
    assert w_fast == w_general
    if fast is not None:  # the calls in the same order, which equality of tuples checks
        for mine, theirs in zip((fast, *fast.branches), (general, *general.branches), strict=True):
            assert [[c.span_id for c in ex.calls] for ex in mine.exchanges] == [
                [c.span_id for c in ex.calls] for ex in theirs.exchanges
            ]
            assert mine.warnings == theirs.warnings


def test_the_shipped_traces_match_the_same_either_way(monkeypatch):
    reader = TraceReader.open([ROOT / "traces"], cache=False)
    linear = 0
    for cid, streamed in reader.index.iter_chat_rows():
        rows = resolved(cid, streamed)
        fast = conversation_from_rows(cid, rows, [])
        with monkeypatch.context() as m:
            _by_hashed_prefixes(m)
            general = conversation_from_rows(cid, rows, [])
        assert fast == general, cid
        linear += fast is not None and not fast.branches
    reader.index.close()
    assert linear  # the fast path was taken


def _row(n: int, inp: list[dict], out: dict, turn: str | None, start: int) -> ChatRow:
    return ChatRow(
        conversation_id="c1", trace_id="tr", span_id=f"s{n}", start_ns=start, end_ns=start + 1,
        turn_span_id=turn, input_messages=json.dumps(inp), output_messages=json.dumps([out]),
        system_instructions=None, model="m", provider="p", input_tokens=None, output_tokens=None,
    )  # fmt: skip


def _edited_with_a_conflict() -> tuple[list[ChatRow], list[TurnRow]]:
    """A question answered twice under two turns recording different tags, then asked
    otherwise: the abandoned branch holds the conflict."""
    question, answer = _text("user", "how many?"), _text("assistant", "12")
    rows = [
        _row(0, [question], answer, "tA", 10),
        _row(1, [question], answer, "tB", 20),
        _row(2, [_text("user", "how many trees?")], _text("assistant", "40"), "tC", 30),
    ]
    turns = [TurnRow("tr", "tA", "A", "[]"), TurnRow("tr", "tB", "C", "[]")]
    turns.append(TurnRow("tr", "tC", "B", "[]"))
    return rows, turns


def test_an_edited_conversation_is_matched_by_positions_with_its_branch_conflict_said(
    monkeypatch,
):
    rows, turns = _edited_with_a_conflict()
    with monkeypatch.context() as m:  # positions only: the hashed matching would raise
        m.setattr(matching, "_assemble", lambda *a, **k: pytest.fail("hashed prefixes used"))
        conv = build_conversation("c1", rows, turns, [])
    assert conv is not None and conv.exchanges[0].tag == "B"
    (branch,) = conv.branches
    assert branch.id == "c1~1" and branch.exchanges[0].conflict
    assert [w.message for w in branch.warnings] == [
        "conflicting audit records (exchange 1); showing no claim"
    ]
    fast, w_fast, general, w_general = _both(rows, turns, monkeypatch)
    assert (fast, w_fast) == (general, w_general)


def test_a_conversation_past_the_positions_bound_takes_the_hashed_prefixes(monkeypatch):
    rows, turns = _edited_with_a_conflict()
    used = []
    real = matching._assemble
    monkeypatch.setattr(matching, "_assemble", lambda *a, **k: used.append(1) or real(*a, **k))
    monkeypatch.setattr(matching, "POSITIONS_PATHS", 1)  # the edit makes two
    conv = build_conversation("c1", rows, turns, [])
    assert used and conv is not None and conv.branches[0].exchanges[0].conflict


def test_records_saying_the_same_in_another_key_order_show_the_same_one_either_way(
    monkeypatch,
):
    question, answer = _text("user", "how many?"), _text("assistant", "12")
    rows = [_row(0, [question], answer, "tA", 10), _row(1, [question], answer, "tB", 20)]
    turns = [TurnRow("tr", "tA", "A", '[{"a": 1, "b": 2}]')]
    turns.append(TurnRow("tr", "tB", "A", '[{"b": 2, "a": 1}]'))
    fast, w_fast, general, w_general = _both(rows, turns, monkeypatch)
    assert fast is not None and not fast.exchanges[0].conflict
    assert list(fast.exchanges[0].decisions[0]) == ["b", "a"]  # the one read last
    assert (fast, w_fast) == (general, w_general)
