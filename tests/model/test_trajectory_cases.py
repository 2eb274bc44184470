"""Every case of docs/spec.md §2, each pinned by its own test."""

from __future__ import annotations

import json

from tests.fixtures import CALL, RESULT, A, Q, Recorder

ACC = {
    "quote": "Canopy cover is always acre-weighted.",
    "status": "accepted",
    "label": "documentation",
    "kind": "prose",
}


def tags(conv):
    return [ex.tag for ex in conv.exchanges]


def test_linear_history_attaches_each_record_to_its_answer(read):
    r = Recorder()
    r.turn("c1", [Q("q1"), A("a1")], tag="A")
    r.turn("c1", [Q("q1"), A("a1"), Q("q2"), A("a2")], tag="B", decisions=[ACC])
    conv = read(r).conversation("c1")
    assert tags(conv) == ["A", "B"]
    assert conv.exchanges[1].decisions == (ACC,)
    assert conv.branches == ()


def test_restored_conversation_claims_only_the_last_exchange(read):
    r = Recorder()
    r.turn("c1", [Q("q1"), A("a1"), Q("q2"), A("a2"), Q("q3"), A("a3")], tag="C")
    assert tags(read(r).conversation("c1")) == [None, None, "C"]


def test_calls_after_restore_attach_by_content(read):
    r = Recorder()
    h3 = [Q("q1"), A("a1"), Q("q2"), A("a2"), Q("q3"), A("a3")]
    r.turn("c1", h3, tag="A")
    r.turn("c1", h3 + [Q("q4"), A("a4")], tag="C")
    assert tags(read(r).conversation("c1")) == [None, None, "A", "C"]


def test_switched_conversation_keeps_only_the_new_path(read):
    r = Recorder()
    r.turn("c1", [Q("old q"), A("old a")], tag="A")
    r.turn("c1", [Q("new q"), A("new a")], tag="C")
    conv = read(r).conversation("c1")
    assert tags(conv) == ["C"]
    assert conv.exchanges[0].question == "new q"
    assert len(conv.branches) == 1 and tags(conv.branches[0]) == ["A"]


def test_edited_question_drops_the_abandoned_record(read):
    r = Recorder()
    r.turn("c1", [Q("q1"), A("a1")], tag="A")
    r.turn("c1", [Q("q1"), A("a1"), Q("q2"), A("a2")], tag="B")
    r.turn("c1", [Q("q1"), A("a1"), Q("q2 edited"), A("a2 again")], tag="C")
    conv = read(r).conversation("c1")
    assert tags(conv) == ["A", "C"]
    assert len(conv.branches) == 1
    branch = conv.branches[0]
    assert branch.branch_of == "c1" and branch.id == "c1~1"
    assert tags(branch) == ["A", "B"]
    assert read(r).conversation("c1~1").exchanges[1].question == "q2"


def test_tool_loop_only_the_latest_round_counts(read):
    r = Recorder()
    round1 = [Q("q1"), CALL("t1", "run_sql", {"sql": "select 1"})]
    round2 = round1 + [RESULT("t1", "1"), A("one")]
    r.turn("c1", round1, round2, tag="C")
    conv = read(r).conversation("c1")
    assert tags(conv) == ["C"]
    assert conv.branches == ()  # the earlier round is a prefix, not a branch
    assert [c.span_id for c in conv.exchanges[0].calls][-1] == conv.calls[-1].span_id


def test_conflicting_records_show_no_claim_and_warn_once(read):
    r = Recorder()
    r.turn("c1", [Q("q1"), A("a1")], tag="A")
    r.turn("c1", [Q("q1"), A("a1")], tag="C")
    conv = read(r).conversation("c1")
    assert tags(conv) == [None]
    assert conv.exchanges[0].conflict
    assert [w.message for w in conv.warnings] == [
        "conflicting audit records (exchange 1); showing no claim"
    ]


def test_untagged_record_still_conflicts_with_a_tagged_one(read):
    r = Recorder()
    r.turn("c1", [Q("q1"), A("a1")], tag=None, decisions=[])
    r.turn("c1", [Q("q1"), A("a1")], tag="A", decisions=[])
    conv = read(r).conversation("c1")
    assert tags(conv) == [None] and conv.exchanges[0].conflict


def test_identical_duplicate_records_collapse_without_warning(read):
    r = Recorder()
    r.turn("c1", [Q("q1"), A("a1")], tag="B", decisions=[ACC])
    r.turn("c1", [Q("q1"), A("a1")], tag="B", decisions=[dict(reversed(list(ACC.items())))])
    conv = read(r).conversation("c1")
    assert tags(conv) == ["B"] and conv.warnings == ()


def test_incomplete_call_claims_nothing(read):
    r = Recorder()
    r.turn("c1", [Q("q1"), A("a1")], tag="A")
    r.turn("c1", [Q("q1"), A("a1"), Q("q2"), CALL("t1", "run_sql", {"sql": "x"})], tag="C")
    conv = read(r).conversation("c1")
    assert tags(conv) == ["A", None]
    assert not conv.exchanges[1].complete


def test_chat_without_turn_span_has_no_claim_and_trace_id_as_conversation(read):
    r = Recorder()
    trace = r.bare_chat([Q("hello there"), A("hi")])
    reader = read(r)
    conv = reader.conversation(trace)
    assert conv is not None and tags(conv) == [None]


def test_bad_candidates_json_keeps_the_tag_and_warns(read):
    r = Recorder()
    r.turn(
        "c1", [Q("q1"), A("a1")], tag="B", raw_attrs={"commons.citation.candidates": "[{not json"}
    )
    conv = read(r).conversation("c1")
    assert tags(conv) == ["B"] and conv.exchanges[0].decisions == ()
    assert any("unparseable citation decisions" in w.message for w in conv.warnings)


def test_unknown_tag_value_is_no_claim(read):
    r = Recorder()
    r.turn("c1", [Q("q1"), A("a1")], tag="a")
    assert tags(read(r).conversation("c1")) == [None]


def test_signature_ignores_key_order_in_tool_arguments(read):
    r = Recorder()
    base = [
        Q("q1"),
        CALL("t1", "run_sql", {"sql": "x", "limit": {"a": 1, "b": 2}}),
        RESULT("t1", {"rows": 1, "cols": 2}),
        A("done"),
    ]
    swapped = [
        Q("q1"),
        CALL("t1", "run_sql", {"limit": {"b": 2, "a": 1}, "sql": "x"}),
        RESULT("t1", {"cols": 2, "rows": 1}),
        A("done"),
    ]
    r.turn("c1", base, tag="C")
    r.turn("c1", swapped + [Q("q2"), A("a2")], tag="A")
    conv = read(r).conversation("c1")
    assert tags(conv) == ["C", "A"] and conv.branches == ()


def test_conversation_id_from_chat_span_itself_wins(read):
    r = Recorder()
    r.turn("turn-id", [Q("q1"), A("a1")], tag="A", chat_conversation_id="chat-id")
    reader = read(r)
    assert reader.conversation("chat-id") is not None
    assert reader.conversation("turn-id") is None


def test_exchange_split_keeps_tool_results_in_user_role_inside_the_exchange(read):
    r = Recorder()
    mixed = {
        "role": "user",
        "parts": [
            {"type": "tool_call_response", "id": "t1", "response": "42"},
            {"type": "text", "content": "x"},
        ],
    }
    r.turn(
        "c1",
        [
            {"role": "system", "parts": [{"type": "text", "content": "sys"}]},
            Q("q1"),
            CALL("t1", "run_sql", {}),
            mixed,
            A("a1"),
        ],
        tag="C",
    )
    conv = read(r).conversation("c1")
    assert len(conv.exchanges) == 1 and conv.exchanges[0].complete
    assert conv.exchanges[0].tools()[0].result == "42"


def test_structured_messages_attribute_is_accepted(read, tmp_path):
    from trajectory_review_bench import otlp

    r = Recorder()
    r.turn("c1", [Q("q1"), A("a1")], tag="A")
    for s in r.spans:
        for a in s["attributes"]:
            if a["key"] in ("gen_ai.input.messages", "gen_ai.output.messages"):
                a["value"] = otlp.any_value(json.loads(a["value"]["stringValue"]))
    conv = read(r).conversation("c1")
    assert tags(conv) == ["A"] and conv.exchanges[0].question == "q1"
