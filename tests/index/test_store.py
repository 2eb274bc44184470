"""The DuckDB index: files, bad lines, duplicates, parents, nanoseconds, title calls."""

from __future__ import annotations

import gzip
import json
import os

import pytest

from tests.fixtures import A, Q, Recorder
from trajectory_review.index.rows import resolved
from trajectory_review.index.store import _MARKS_SELECT, _SPAN_SELECT, TraceIndex
from trajectory_review.model.reader import TraceReader
from trajectory_review.sources import SourceError, trace_files
from trajectory_review_bench import otlp


def test_directory_is_read_recursively_with_gzip_and_json(tmp_path):
    r = Recorder()
    r.turn("c1", [Q("q1"), A("a1")], tag="A")
    (tmp_path / "sub").mkdir()
    data = "\n".join(otlp.line([s]) for s in r.spans) + "\n"
    (tmp_path / "sub" / "trace-1.jsonl.gz").write_bytes(gzip.compress(data.encode()))
    (tmp_path / "other.json").write_text(otlp.line([]) + "\n")
    (tmp_path / "notes.txt").write_text("not a trace")
    files = trace_files([tmp_path])
    assert sorted(p.name for p in files) == ["other.json", "trace-1.jsonl.gz"]
    reader = TraceReader.open([tmp_path])
    assert reader.conversation("c1").exchanges[0].tag == "A"


def test_missing_source_and_empty_directory_are_one_line_errors(tmp_path):
    with pytest.raises(SourceError, match="not found"):
        trace_files([tmp_path / "nope"])
    with pytest.raises(SourceError, match="no trace files"):
        trace_files([tmp_path])


def test_bad_lines_are_counted_and_the_rest_loads(tmp_path):
    r = Recorder()
    r.turn("c1", [Q("q1"), A("a1")], tag="B")
    path = r.write(tmp_path / "t.jsonl", extra_lines=["{cut mid-wri", "WARN stray log", ""])
    index = TraceIndex.build([path])
    assert index.stats.bad_lines == 2
    assert index.stats.spans == len(r.spans)
    assert TraceReader(index).conversation("c1").exchanges[0].tag == "B"


def test_every_line_is_counted_once_whatever_spans_it_holds(tmp_path):
    """Lines and bad lines are counted in the pass that reads the spans: a line's first
    span stands for the line. A line with no span, a line whose first span has no id,
    blank lines and lines of spaces must each count right."""
    r = Recorder()
    r.turn("c1", [Q("q1"), A("a1")], tag="A")
    spans = r.spans
    no_id = {**spans[0], "spanId": None}
    two = {"resourceSpans": [{"scopeSpans": [{"spans": spans[:2]}]},
                             {"scopeSpans": [{"spans": []}, {"spans": spans[2:]}]}]}  # fmt: skip
    lines = [
        json.dumps(two),  # every span of the turn, over two resources and three scopes
        "",
        "    ",  # blank: skipped, not counted
        json.dumps({"resourceSpans": []}),  # a line, no span
        json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [no_id, spans[0]]}]}]}),
        "{cut mid-wri",  # not JSON
        json.dumps({"hello": 1}),  # JSON but not an envelope
        "  " + otlp.line(spans[:1]),  # indented: read, a copy of a span already read
    ]
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(lines) + "\n")
    stats = TraceIndex.build([path]).stats
    assert (stats.lines, stats.bad_lines, stats.spans) == (6, 2, len(spans))
    assert [d.split("t.jsonl:")[1] for d in stats.bad_line_details] == [
        "6: not JSON, skipped",
        "7: JSON but not an OTLP envelope, skipped",
    ]
    assert TraceReader.open([path]).conversation("c1").exchanges[0].tag == "A"


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_skipped_lines_are_named_among_lines_of_their_length(tmp_path, newline):
    """Skipped lines are found again by byte length and digest: lines of the same length
    (in bytes, not characters), CRLF line ends and a second bad line of equal length
    must each give the right line number."""
    r = Recorder()
    r.turn("c1", [Q("q1"), A("a1")], tag="A")
    good = otlp.line(r.spans)
    lines = [
        good,
        "{cut é mid",  # 11 bytes, 10 characters
        "{cut e mid",  # 10 bytes: the same characters' count, another length
        "x" * 10,  # 10 bytes, not JSON either
        good,
        "{cut é mie",  # the first bad line's length, other bytes
    ]
    path = tmp_path / "t.jsonl"
    path.write_bytes(newline.join(lines).encode() + newline.encode())
    stats = TraceIndex.build([path]).stats
    assert [d.split("t.jsonl:")[1] for d in stats.bad_line_details] == [
        f"{n}: not JSON, skipped" for n in (2, 3, 4, 6)
    ]
    assert stats.spans == len(r.spans)


def test_duplicate_spans_from_a_hard_link_are_read_once(tmp_path):
    r = Recorder()
    r.turn("c1", [Q("q1"), A("a1")], tag="A")
    path = r.write(tmp_path / "trace-1.jsonl")
    os.link(path, tmp_path / "trace-latest.jsonl")
    reader = TraceReader.open([tmp_path])
    assert reader.stats.spans == len(r.spans)
    assert reader.stats.files == 1  # the link is the same file: read once
    chat_spans = [s for s in r.spans if s["name"].startswith("chat")]
    assert len(reader.index.chat_rows("c1")) == len(chat_spans)
    conv = reader.conversation("c1")
    assert [ex.tag for ex in conv.exchanges] == ["A"] and conv.warnings == ()


@pytest.mark.parametrize("root_parent", ["", None, "absent"])
def test_empty_null_and_absent_parents_all_mean_root(tmp_path, root_parent):
    r = Recorder()
    r.turn("c1", [Q("q1"), A("a1")], tag="A")
    for s in r.spans:
        if s["parentSpanId"] == "":
            if root_parent == "absent":
                del s["parentSpanId"]
            else:
                s["parentSpanId"] = root_parent
    reader = TraceReader.open([r.write(tmp_path / "t.jsonl")])
    assert reader.conversation("c1").exchanges[0].tag == "A"


def test_latest_chat_is_chosen_by_exact_integer_nanoseconds(tmp_path):
    # Two ends one nanosecond apart beyond double precision: a float would tie them.
    base = 1_767_225_600_000_000_000
    spans = []
    for i, (end, answer) in enumerate([(base + 2, "newer"), (base + 1, "older")]):
        attrs = otlp.chat_attrs([Q("q")], [A(answer)], conversation_id="c1")
        span = otlp.span("t" * 32, f"{i:016x}", "chat", base, end, attrs=attrs)
        span["endTimeUnixNano"] = end if i == 0 else str(end)  # integer and string forms
        spans.append(span)
    path = tmp_path / "t.jsonl"
    path.write_text(otlp.line(spans) + "\n")
    conv = TraceReader.open([path]).conversation("c1")
    assert conv.exchanges[0].answer_raw == "newer"
    assert conv.last_active_ns == base + 2


@pytest.mark.parametrize("start", [1_767_225_600_000_000_000, 2**63 + 5])
def test_times_past_64_bits_are_read_whole_when_opened_and_when_streamed(tmp_path, start):
    # the index sends a time as 64 bits when it fits and whole only when it does not: both
    # ways of reading a conversation's rows must give the recorded nanoseconds exactly
    end = 2**64 - 1  # the largest time OTLP can write
    attrs = otlp.chat_attrs([Q("q")], [A("a")], conversation_id="c1")
    span = otlp.span("t" * 32, "0" * 16, "chat", start, end, attrs=attrs)
    path = tmp_path / "t.jsonl"
    path.write_text(otlp.line([span]) + "\n")
    index = TraceIndex.build([path])
    opened = [(r.start_ns, r.end_ns) for r in index.chat_rows("c1")]
    streamed = [
        (r.start_ns, r.end_ns) for _, rows in index.iter_chat_rows() for r in resolved("c1", rows)
    ]
    assert opened == streamed == [(start, end)]


def test_title_calls_are_left_out_of_conversations(tmp_path):
    r = Recorder()
    r.turn("c1", [Q("q1"), A("a1")], tag="A")
    r.bare_chat(
        [Q("q1"), A("Canopy question")],
        conversation_id="c1",
        system="You title chat conversations. Reply with a title.",
    )
    index = TraceIndex.build([r.write(tmp_path / "t.jsonl")])
    assert index.stats.title_calls == 1
    assert index.stats.conversations == 1
    conv = TraceReader(index).conversation("c1")
    assert conv.exchanges[0].answer_raw == "a1" and conv.branches == ()


@pytest.mark.parametrize(
    ("instructions", "is_title"),
    [
        ('[{"type": "text", "content": "  You title chat conversations."}]', True),
        ("  You title chat conversations. Reply with a title.", True),  # plain text
        ('[{"type": "text", "content": "You title chat', False),  # torn JSON
        ('[{"type": "text", "content": "You answer questions."}]', False),
        (["You title chat conversations."], False),  # an arrayValue: no JSON text
        ("\x1eYou title chat conversations.", False),  # starts with the index's mark
    ],
)
def test_a_title_call_is_told_by_its_instructions_whatever_their_form(
    tmp_path, instructions, is_title
):
    attrs = otlp.chat_attrs([Q("q")], [A("Canopy question")], conversation_id="c1")
    attrs["gen_ai.system_instructions"] = instructions
    spans = [otlp.span("b" * 32, "2" * 16, "chat", 1, 2, attrs=attrs)]
    path = tmp_path / "t.jsonl"
    path.write_text(otlp.line(spans) + "\n")
    index = TraceIndex.build([path])
    assert index.stats.title_calls == int(is_title)
    assert index.stats.conversations == int(not is_title)


def test_chat_spans_without_captured_content_are_reported(tmp_path):
    spans = [otlp.span("a" * 32, "1" * 16, "chat", 1, 2, attrs={"gen_ai.operation.name": "chat"})]
    path = tmp_path / "t.jsonl"
    path.write_text(otlp.line(spans) + "\n")
    reader = TraceReader.open([path])
    assert reader.stats.chat_spans_without_messages == 1
    hint = " ".join(w.message for w in reader.source_warnings())
    assert "content capture was off" in hint
    assert "OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental" in hint
    assert "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=span_only" in hint
    assert reader.conversation("a" * 32) is None


def test_opening_a_conversation_reads_only_its_rows(tmp_path):
    r = Recorder()
    for i in range(30):
        r.turn(f"c{i}", [Q(f"q{i}"), A(f"a{i}")], tag="A")
    index = TraceIndex.build([r.write(tmp_path / "t.jsonl")])
    rows = index.chat_rows("c7")
    assert [row.conversation_id for row in rows] == ["c7"]
    # through the indexes on the conversation id (its marks, then its spans), not a scan
    # of every span
    for select in (_MARKS_SELECT, _SPAN_SELECT):
        plan = (
            index.cursor()
            .execute("EXPLAIN ANALYZE " + select + " WHERE conversation_id = ?", ["c7"])
            .fetchall()[0][1]
        )
        assert "Index Scan" in plan


def test_attribute_values_of_every_kind_are_decoded():
    from trajectory_review.model.messages import decode_any_value

    value = {
        "kvlistValue": {
            "values": [
                {"key": "s", "value": {"stringValue": "x"}},
                {"key": "i", "value": {"intValue": "9007199254740993"}},
                {"key": "d", "value": {"doubleValue": 1.5}},
                {"key": "b", "value": {"boolValue": True}},
                {"key": "a", "value": {"arrayValue": {"values": [{"intValue": 1}]}}},
                {"key": "y", "value": {"bytesValue": "AAE="}},
            ]
        }
    }
    assert decode_any_value(value) == {
        "s": "x",
        "i": 9007199254740993,
        "d": 1.5,
        "b": True,
        "a": [1],
        "y": "AAE=",
    }


def test_conversation_id_found_on_an_ancestor(tmp_path):
    r = Recorder()
    r.turn("from-turn", [Q("q1"), A("a1")], tag="C")
    reader = TraceReader.open([r.write(tmp_path / "t.jsonl")])
    assert reader.conversation("from-turn").exchanges[0].tag == "C"
    assert json.loads(json.dumps(reader.stats.__dict__))["conversations"] == 1


def test_a_corrupt_gzip_file_is_skipped_and_named(tmp_path):
    r = Recorder()
    r.turn("c1", [Q("q1"), A("a1")], tag="A")
    r.write(tmp_path / "good.jsonl")
    (tmp_path / "good.jsonl.gz").write_bytes(b"not a gzip stream")  # a name that contains the other
    reader = TraceReader.open([tmp_path], cache=False)
    assert reader.conversation("c1").exchanges[0].tag == "A"
    assert reader.stats.bad_files == (str(tmp_path / "good.jsonl.gz"),)
    assert reader.stats.files == 1
    assert any("good.jsonl.gz: not readable" in w.message for w in reader.source_warnings())


def test_only_corrupt_files_is_a_one_line_error(tmp_path):
    (tmp_path / "a.jsonl.gz").write_bytes(b"\x1f\x8b truncated")
    with pytest.raises(SourceError, match="no readable trace file"):
        TraceIndex.build([tmp_path], cache=False)
