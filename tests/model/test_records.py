"""The model's records (msgspec Structs): immutable, equal by what they hold (never by
what they keep once computed, nor by how a part was written), and whole after the trip
to a worker process and back."""

from __future__ import annotations

import json
import pickle

import msgspec
import pytest

from trajectory_review.index.rows import ChatRow, TurnRow, stored_attribute
from trajectory_review.model.matching import build_conversation
from trajectory_review.model.messages import parse_messages, parse_part


def _history(*pairs: tuple[str, str]) -> list[dict]:
    return [{"role": r, "parts": [{"type": "text", "content": c}]} for r, c in pairs]


def _rows() -> list[ChatRow]:
    first = _history(("user", "How many plots?"))
    second = [*first, *_history(("assistant", "Forty."), ("user", "And trees?"))]
    out = []
    for n, (inp, answer) in enumerate([(first, "Forty."), (second, "Nine hundred.")]):
        out.append(
            ChatRow(
                conversation_id="c1", trace_id="t1", span_id=f"s{n}",
                start_ns=n * 1000, end_ns=n * 1000 + 500, turn_span_id=f"turn{n}",
                input_messages=stored_attribute({"stringValue": json.dumps(inp)}),
                output_messages=json.dumps(_history(("assistant", answer))),
                system_instructions=None, model="m", provider="p",
                input_tokens=None, output_tokens=None,
                turn=TurnRow("t1", f"turn{n}", "A", None),
            )
        )  # fmt: skip
    return out


def _conversation():
    rows = _rows()
    return build_conversation("c1", rows, [r.turn for r in rows if r.turn])


def test_a_record_cannot_be_changed_once_made():
    conv = _conversation()
    with pytest.raises(AttributeError):
        conv.id = "other"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        conv.exchanges[0].messages[0].parts[0].content = "edited"  # type: ignore[misc]


def test_records_are_equal_by_what_they_hold_not_by_what_they_kept_once_computed():
    one, two = _conversation(), _conversation()
    assert one is not two and one == two
    for call in one.calls:  # worked out on one side only
        call.signatures()
        call.exchange_count()
    assert one == two and one.calls[0] == two.calls[0]
    assert len({one.calls[0], two.calls[0]}) == 1


def test_a_part_is_equal_whatever_else_its_recorder_wrote_beside_it():
    plain = parse_part({"type": "text", "content": "Forty."})
    noted = parse_part({"type": "text", "content": "Forty.", "x-recorder": {"id": 7}})
    assert plain == noted and hash(plain) == hash(noted)
    stop = parse_messages([{"role": "assistant", "parts": [{"type": "text", "content": "a"}],
                            "finish_reason": "stop"}])  # fmt: skip
    bare = parse_messages(_history(("assistant", "a")))
    assert stop == bare  # why it stopped is not part of what it said


def test_records_come_back_whole_from_a_worker_process():
    conv = _conversation()
    back = pickle.loads(pickle.dumps(conv))
    assert back == conv
    assert [ex.record for ex in back.exchanges] == [ex.record for ex in conv.exchanges]
    assert back.exchanges[-1].messages[-1].sig == conv.exchanges[-1].messages[-1].sig
    assert isinstance(back, msgspec.Struct)
