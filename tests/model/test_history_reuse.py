"""A history that extends one parsed before in its conversation is parsed only past it
(MessageCache): the conversation read must be exactly what a full parse of every history
gives, whatever the spacing, and a broken extension is reported as before."""

from __future__ import annotations

import json

import pytest

from trajectory_review.index.rows import ChatRow, TurnRow, stored_attribute
from trajectory_review.model import messages
from trajectory_review.model.matching import build_conversation


def text(role: str, content: str) -> dict:
    return {"role": role, "parts": [{"type": "text", "content": content}]}


def wrapped(history_text: str) -> str:
    return stored_attribute({"stringValue": history_text})  # as the index hands it over


def row(n: int, history_text: str, answer: str) -> ChatRow:
    return ChatRow(
        conversation_id="c1",
        trace_id="t1",
        span_id=f"s{n}",
        start_ns=n * 1000,
        end_ns=n * 1000 + 500,
        turn_span_id="turn",
        input_messages=wrapped(history_text),
        output_messages=wrapped(json.dumps([text("assistant", answer)])),
        system_instructions=None,
        model="m",
        provider="p",
        input_tokens=None,
        output_tokens=None,
    )


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
        monkeypatch.setattr(messages.MessageCache, "remember", lambda self, raw: None)
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
    for n in range(1, 2 * messages.RECENT_HISTORIES + 3):
        history = [*base, text("user", f"fork {n}"), text("assistant", f"answer {n}")]
        rows.append(row(n, json.dumps(history), f"answer {n}"))
    first = json.dumps([*base, text("user", "fork 1"), text("assistant", "answer 1")])
    # the last call extends the first, far outside the recent window
    rows.append(row(99, first[:-1] + ", " + json.dumps(text("user", "again")) + "]", "x"))
    cache = messages.MessageCache()
    for r in rows:
        cache.remember(r.input_messages)
    assert len(cache._bodies) == messages.RECENT_HISTORIES
    reused, w1 = read(rows, True, monkeypatch)
    whole, w2 = read(rows, False, monkeypatch)
    assert reused == whole and w1 == w2
