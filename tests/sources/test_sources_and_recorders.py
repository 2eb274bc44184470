"""Where traces are, and every GenAI recorder's shapes (issue #8 §2-§3)."""

from __future__ import annotations

import gzip
import json

from tests.fixtures import A, Q, Recorder
from trajectory_review.app.transcript_html import conversation_html
from trajectory_review.listing.catalog import build_catalog
from trajectory_review.listing.filters import Filters
from trajectory_review.model.reader import TraceReader
from trajectory_review.reviews.log import ReviewState
from trajectory_review.rules.registry import load_rules
from trajectory_review.sources import trace_files
from trajectory_review.tools.cli import main
from trajectory_review_bench import otlp


def one_conversation(cid: str = "c1") -> Recorder:
    r = Recorder()
    trace = cid.encode().hex().rjust(32, "0")[-32:]  # distinct per conversation
    r.turn(cid, [Q("How tall are the stands?"), A("They average 31 m.")], tag="A", trace_id=trace)
    return r


def lines_of(r: Recorder) -> str:
    return "\n".join(otlp.line([s]) for s in r.spans) + "\n"


def export(capsys, *args: str) -> dict:
    assert main(["export", *args]) == 0
    return json.loads(capsys.readouterr().out)


# -- §2 where traces are ---------------------------------------------------------------------


def test_directories_are_read_for_ndjson_and_its_gzip_form(tmp_path):
    (tmp_path / "a.ndjson").write_text(lines_of(one_conversation("c1")))
    (tmp_path / "b.ndjson.gz").write_bytes(gzip.compress(lines_of(one_conversation("c2")).encode()))
    (tmp_path / "c.log").write_text(lines_of(one_conversation("c3")))
    assert sorted(p.name for p in trace_files([tmp_path])) == ["a.ndjson", "b.ndjson.gz"]


def test_the_file_exporters_template_names_where_traces_are(tmp_path, monkeypatch, capsys):
    folder = tmp_path / "exported"
    folder.mkdir()
    (folder / "spans-1.log").write_text(lines_of(one_conversation("c1")))
    (folder / "spans-2.log").write_text(lines_of(one_conversation("c2")))
    (folder / "other.log").write_text(lines_of(one_conversation("c3")))
    monkeypatch.delenv("TRAJECTORY_TRACES", raising=False)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_FILE", str(folder / "spans-%N.log"))
    monkeypatch.chdir(tmp_path)
    doc = export(capsys)  # no source given
    assert sorted(c["id"] for c in doc["conversations"]) == ["c1", "c2"]


def test_a_pretty_printed_otlp_document_is_read_whole(tmp_path, capsys):
    r = one_conversation()
    (tmp_path / "doc.json").write_text(json.dumps(otlp.envelope(r.spans), indent=2))
    doc = export(capsys, str(tmp_path / "doc.json"))
    assert [c["id"] for c in doc["conversations"]] == ["c1"]
    assert doc["stats"]["bad_lines"] == 0
    assert doc["stats"]["spans"] == len(r.spans)


def test_json_that_is_not_otlp_is_named_with_its_reason_not_counted_as_bad_lines(tmp_path, capsys):
    r = one_conversation("good")
    (tmp_path / "good.jsonl").write_text(lines_of(r))
    snake = {"resource_spans": [{"scope_spans": [{"spans": [{"trace_id": "AAEC"}]}]}]}
    (tmp_path / "dump.json").write_text(json.dumps(snake, indent=2))  # a protobuf dump
    (tmp_path / "rows.jsonl").write_text("\n".join(json.dumps(snake) for _ in range(187)))
    assert main(["export", str(tmp_path)]) == 0
    out = capsys.readouterr()
    doc = json.loads(out.out)
    assert [c["id"] for c in doc["conversations"]] == ["good"]
    assert doc["stats"]["bad_lines"] == 0
    assert "dump.json: JSON but not OTLP/JSON: snake_case resource_spans" in out.err
    assert "rows.jsonl: JSON but not OTLP/JSON: snake_case resource_spans" in out.err
    assert "187" not in out.err


# -- §3 every GenAI recorder --------------------------------------------------------------------


def recorded(tmp_path, operation: str = "chat", **span_fields) -> Recorder:
    r = Recorder()
    r.turn("c1", [Q("Summarise the plots."), A("Plots cover 12 ha in total.")], tag="C")
    chat = r.spans[2]
    for a in chat["attributes"]:
        if a["key"] == "gen_ai.operation.name":
            a["value"] = {"stringValue": operation}
    chat.update(span_fields)
    return r


def test_generate_content_and_text_completion_spans_are_model_calls(tmp_path, capsys):
    for op in ("generate_content", "text_completion"):
        r = recorded(tmp_path, op)
        path = r.write(tmp_path / f"{op}.jsonl")
        doc = export(capsys, str(path))
        assert [c["id"] for c in doc["conversations"]] == ["c1"], op


def test_finish_reasons_and_errors_are_shown_exported_and_filterable(tmp_path, capsys):
    r = Recorder()
    r.turn("cut", [Q("Long answer please."), A("The first half of a long")], tag="C")
    r.spans[2]["attributes"].append(
        {"key": "gen_ai.response.finish_reasons", "value": otlp.any_value(["length"])}
    )
    r.turn("failed", [Q("Anything?"), A("Partial")], tag=None)
    r.spans[5]["status"] = {"code": 2, "message": "upstream timed out after 60 s"}
    r.spans[5]["attributes"].append({"key": "error.type", "value": {"stringValue": "Timeout"}})
    r.turn("fine", [Q("Hi"), A("Hello there.")], tag=None)
    for a in r.spans[8]["attributes"]:  # a recorder writing the reason on the message
        if a["key"] == "gen_ai.output.messages":
            messages = json.loads(a["value"]["stringValue"])
            messages[0]["finish_reason"] = "stop"
            a["value"] = {"stringValue": json.dumps(messages)}
    path = r.write(tmp_path / "t.jsonl")
    doc = export(capsys, str(path))
    by_id = {c["id"]: c["exchanges"][0] for c in doc["conversations"]}
    assert by_id["cut"]["finish_reasons"] == ["length"] and by_id["cut"]["error"] is None
    assert by_id["failed"]["error"] == {
        "type": "Timeout",
        "message": "upstream timed out after 60 s",
    }
    assert by_id["fine"]["finish_reasons"] == ["stop"] and by_id["fine"]["error"] is None
    reader = TraceReader.open([path])
    catalog = build_catalog(reader)
    ids = set(catalog.page(Filters(problem=True)).rows["conversation_id"])
    assert ids == {"cut", "failed"}
    assert catalog.facet_counts(Filters())["problem"]["yes"] == 2
    page = str(conversation_html(reader.conversation("cut"), ReviewState(), load_rules()))
    assert "cut off: length" in page
    page = str(conversation_html(reader.conversation("failed"), ReviewState(), load_rules()))
    assert "failed: Timeout" in page and "upstream timed out after 60 s" in page


def test_reasoning_and_binary_parts_are_shown_never_dropped(tmp_path):
    r = Recorder()
    answer = otlp.msg(
        "assistant",
        {"type": "reasoning", "content": "The user wants the <total> area."},
        {"type": "blob", "modality": "image", "mime_type": "image/png", "content": "iVBOR" * 40},
        {"type": "uri", "uri": "http://127.0.0.1:9/x.png", "modality": "image"},
        {"type": "made_up_part"},
        otlp.text("Plots cover 12 ha."),
    )
    r.turn("c1", [Q("Area?"), answer], tag=None)
    reader = TraceReader.open([r.write(tmp_path / "t.jsonl")])
    page = str(conversation_html(reader.conversation("c1"), ReviewState(), load_rules()))
    assert "<summary>Reasoning</summary>" in page and "The user wants the &lt;total&gt;" in page
    assert "[blob · image/png · 200 characters: not shown]" in page
    assert "[uri · " in page and "[made_up_part: not shown]" in page
    assert "<img" not in page.split("tr-assistant")[1].split("tr-raw")[0]
