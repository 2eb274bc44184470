"""A history that extends one parsed before in its conversation is parsed only past it
(model/history.py): the conversation read must be exactly what a full parse of every history
gives, whatever the spacing, and a broken extension is reported as before."""

from __future__ import annotations

import json

import msgspec
import pytest

from trajectory_review.index.rows import ChatRow, TurnRow, stored_attribute
from trajectory_review.model import history as cache_module
from trajectory_review.model.matching import build_conversation


def text(role: str, content: str) -> dict:
    return {"role": role, "parts": [{"type": "text", "content": content}]}


def wrapped(history_text: str) -> str:
    return stored_attribute({"stringValue": history_text})  # as the index hands it over


def call_row(n: int, history_text: str, output_text: str) -> ChatRow:
    return ChatRow(
        conversation_id="c1",
        trace_id="t1",
        span_id=f"s{n}",
        start_ns=n * 1000,
        end_ns=n * 1000 + 500,
        turn_span_id="turn",
        input_messages=wrapped(history_text),
        output_messages=wrapped(output_text),
        system_instructions=None,
        model="m",
        provider="p",
        input_tokens=None,
        output_tokens=None,
    )


def row(n: int, history_text: str, answer: str) -> ChatRow:
    return call_row(n, history_text, json.dumps([text("assistant", answer)]))


def histories(sep: str, tail: str) -> list[str]:
    """Three calls, each history the one before plus the answer and a new question,
    written with `sep` between elements and `tail` before the closing bracket."""
    msgs = [text("user", "q1"), text("assistant", "a1"), text("user", "q2, [not] the end")]
    msgs += [text("assistant", "a2"), text("user", "q3")]
    out = []
    for k in (1, 3, 5):
        out.append("[" + sep.join(json.dumps(m) for m in msgs[:k]) + tail + "]")
    return out


def read(rows: list[ChatRow], reuse: bool, monkeypatch: pytest.MonkeyPatch):
    if not reuse:  # every history parsed whole, as before the reuse
        monkeypatch.setattr(cache_module.MessageCache, "remember", lambda self, *attributes: None)
    warnings: list = []
    turn = TurnRow("t1", "turn", stored_attribute({"stringValue": "A"}), None)
    conv = build_conversation("c1", rows, [turn], warnings)
    monkeypatch.undo()
    return conv, warnings


@pytest.mark.parametrize(("sep", "tail"), [(", ", ""), (",", "  "), (" ,\n ", "\n")])
def test_an_extended_history_reads_as_a_full_parse_would(monkeypatch, sep, tail):
    hs = histories(sep, tail)
    rows = [row(n, h, f"a{n}") for n, h in enumerate(hs, start=1)]
    rows.reverse()  # the index hands rows in no particular order
    reused, w1 = read(rows, True, monkeypatch)
    whole, w2 = read(rows, False, monkeypatch)
    assert reused == whole and w1 == w2
    assert [ex.question for ex in reused.exchanges] == ["q1", "q2, [not] the end", "q3"]


@pytest.mark.parametrize(
    "tail",
    [', {"role": ]', ";" + json.dumps(text("assistant", "no comma")) + "]"],
    ids=["cut-off element", "no comma before the element"],
)
def test_a_history_extended_by_a_broken_tail_is_reported_as_before(monkeypatch, tail):
    good, _, _ = histories(", ", "")
    broken = good[:-1] + tail
    rows = [row(1, good, "a1"), row(2, broken, "a2")]
    reused, w1 = read(rows, True, monkeypatch)
    whole, w2 = read(rows, False, monkeypatch)
    assert reused == whole and w1 == w2
    assert any("unparseable messages on chat span s2" in w.message for w in w1)


def test_a_history_that_only_starts_like_another_is_parsed_whole(monkeypatch):
    first = json.dumps([text("user", "q1")])
    # the same characters, then more of the same string: not an extension of the list
    other = first[:-3] + ' and more"}]}]'
    rows = [row(1, first, "a1"), row(2, other, "a2")]
    reused, w1 = read(rows, True, monkeypatch)
    whole, w2 = read(rows, False, monkeypatch)
    assert reused == whole and w1 == w2


def test_only_the_latest_histories_are_compared_and_an_older_extension_reads_the_same(
    monkeypatch,
):
    # a long shared prefix, then calls that fork from it (none extends the one before):
    # each new history is compared with a few recent ones, never with every earlier one
    base = [text("user", "q" * 5000), text("assistant", "a")]
    rows = []
    for n in range(1, 2 * cache_module.RECENT_HISTORIES + 3):
        history = [*base, text("user", f"fork {n}"), text("assistant", f"answer {n}")]
        rows.append(row(n, json.dumps(history), f"answer {n}"))
    first = json.dumps([*base, text("user", "fork 1"), text("assistant", "answer 1")])
    # the last call extends the first, far outside the recent window
    rows.append(row(99, first[:-1] + ", " + json.dumps(text("user", "again")) + "]", "x"))
    cache = cache_module.MessageCache()
    for r in rows:
        cache.remember(r.input_messages)
    assert len(cache._bodies) == cache_module.RECENT_HISTORIES
    reused, w1 = read(rows, True, monkeypatch)
    whole, w2 = read(rows, False, monkeypatch)
    assert reused == whole and w1 == w2


QUESTION = text("user", "how many trees?")
SQL = {"type": "tool_call", "id": "c1", "name": "sql", "arguments": {"q": "select 3"}}
CALL = {"role": "assistant", "parts": [SQL]}
RESULT = {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": 3}]}
ANSWER = text("assistant", "Three.")


def tool_loop(call_output: str, second_history: str | None = None) -> list[ChatRow]:
    """A question, a tool call, its result and the answer: two calls, the second's
    history the first's, then its output, then the tool's result."""
    first = call_row(1, json.dumps([QUESTION]), call_output)
    second = call_row(2, json.dumps([QUESTION, CALL, RESULT]), json.dumps([ANSWER]))
    if second_history is not None:
        second = msgspec.structs.replace(second, input_messages=wrapped(second_history))
    return [second, first]


def test_a_history_going_on_from_the_last_output_reuses_its_messages(monkeypatch):
    rows = tool_loop(json.dumps([CALL]))
    reused, w1 = read(rows, True, monkeypatch)
    whole, w2 = read(rows, False, monkeypatch)
    assert reused == whole and w1 == w2
    first, second = sorted(reused.calls, key=lambda c: c.start_ns)
    # the tool call in the second history is the first call's output, not read again
    assert second.history[1] is first.history[-1]
    assert second.history[1].has_tool_calls and second.history[2].has_tool_results


@pytest.mark.parametrize(
    "second_history",
    [
        # the output written otherwise in the history (its keys in another order)
        json.dumps([QUESTION, dict(reversed(CALL.items())), RESULT]),
        # the output's text, then something that is no element
        json.dumps([QUESTION])[:-1] + ", " + json.dumps(CALL) + "x]",
        # the output's text, then the history ends without its closing bracket
        json.dumps([QUESTION])[:-1] + ", " + json.dumps(CALL),
    ],
    ids=["written otherwise", "garbage after it", "cut off after it"],
)
def test_a_history_not_going_on_from_the_output_reads_as_a_full_parse(monkeypatch, second_history):
    rows = tool_loop(json.dumps([CALL]), second_history)
    reused, w1 = read(rows, True, monkeypatch)
    whole, w2 = read(rows, False, monkeypatch)
    assert reused == whole and w1 == w2


def test_once_the_typed_reading_refuses_an_attribute_the_conversation_is_read_as_json(
    monkeypatch,
):
    # a recorder that writes reasoning parts writes them in every later history: each was
    # decoded twice, a typed try and then JSON
    thinking = {"role": "assistant", "parts": [{"type": "thinking", "content": "hm"}, SQL]}
    rows = tool_loop(json.dumps([thinking]))
    rows[0] = msgspec.structs.replace(
        rows[0], input_messages=wrapped(json.dumps([QUESTION, thinking, RESULT]))
    )
    tries: list[str] = []
    real = cache_module.typed_messages

    def spy(text: str):
        tries.append(text)
        return real(text)

    monkeypatch.setattr(cache_module, "typed_messages", spy)
    warnings: list = []
    turn = TurnRow("t1", "turn", stored_attribute({"stringValue": "A"}), None)
    reused = build_conversation("c1", rows, [turn], warnings)
    monkeypatch.undo()
    whole, w2 = read(rows, False, monkeypatch)
    assert reused == whole and warnings == w2
    assert reused.calls[0].history[1].parts[0].type == "reasoning"
    # the first history read typed, the first output refused, nothing tried after it
    assert len(tries) == 2
