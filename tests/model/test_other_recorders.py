"""Traces other recorders wrote replay as the conversations they were (issue #47).

Every fixture here was recorded by scripts/record_other_recorders.py running the real
library (versions in the `.versions` file beside each) against a scripted model on
127.0.0.1: one session of two questions, each answered from a `run_sql` tool call whose
result the answer names. Each must show both questions, the tool with its result and
the answer, grouped by the library's own session, from files and from ClickHouse alike,
and the reply rules must find nothing wrong with an answer grounded in the tool."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fixtures import Recorder
from trajectory_review.model.reader import TraceReader
from trajectory_review.tools.cli import main
from trajectory_review.tools.load import load
from trajectory_review_bench import otlp

DATA = Path(__file__).parents[1] / "data" / "recorders"
QUESTIONS = ["What is the average canopy cover?", "How is canopy cover measured?"]
ANSWER = (
    "Stand S-12 has an average canopy cover of 61%: the inventory gives `avg_canopy` 0.61 "
    "for `stand_id` S-12, over `plot_count` 12 plots."
)
SESSION = "forest-session-1"
# fixture -> the attribute its conversation id comes from (SESSION when it is ours)
RECORDED = {
    "openinference": "session.id",
    "traceloop": "traceloop.association.properties.session_id",
    "traceloop-legacy": "traceloop.association.properties.session_id",
    "pydantic-ai": "gen_ai.conversation.id",
    "pydantic-ai-1": "gen_ai.conversation.id",
    "logfire": None,  # Logfire scrubs session.id: the trace is the conversation
    "logfire-1": None,
    "strands": "session.id",
    "strands-latest": "session.id",
    "google-adk": "gen_ai.conversation.id",
    "google-adk-legacy": "gcp.vertex.agent.session_id",
}


def spans(name: str) -> list[dict]:
    lines = (DATA / f"{name}.jsonl").read_text().splitlines()
    return [
        s
        for doc in map(json.loads, lines)
        for rs in doc["resourceSpans"]
        for ss in rs["scopeSpans"]
        for s in ss["spans"]
    ]


def recorded_value(name: str, key: str) -> str:
    for s in spans(name):
        for a in s.get("attributes", []):
            if a["key"] == key:
                return a["value"]["stringValue"]
    raise AssertionError(f"{name} has no {key}")


def export(capsys, *paths: Path) -> dict:
    assert main(["export", *map(str, paths)]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("name", list(RECORDED))
def test_each_recorders_session_replays_as_one_conversation_with_its_tools(capsys, name):
    doc = export(capsys, DATA / f"{name}.jsonl")
    (conv,) = doc["conversations"]
    key = RECORDED[name]
    if key is None:
        assert conv["id"] == spans(name)[0]["traceId"]
        (note,) = [w["message"] for w in doc["warnings"]]
        assert "carry no gen_ai.conversation.id" in note
    else:
        assert conv["id"] == recorded_value(name, key)
        assert doc["warnings"] == []  # nothing unread, no content blamed
    assert [e["question"] for e in conv["exchanges"]] == QUESTIONS
    for ex in conv["exchanges"]:
        (tool,) = ex["tools"]
        assert tool["name"] == "run_sql"
        assert tool["arguments"] == {"sql": "SELECT avg(canopy) FROM plots"}
        assert '"avg_canopy": 0.61' in json.dumps(tool["result"]).replace("\\", "")
        assert ex["answer_raw"] == ANSWER


def test_our_sessions_name_the_conversation_whatever_key_the_recorder_keeps_it_under():
    ours = [n for n, key in RECORDED.items() if key and recorded_value(n, key) == SESSION]
    assert len(ours) == 6  # the script gave these its session; the rest chose their own


def test_a_correct_tool_grounded_answer_from_each_recorder_raises_no_flag(capsys):
    paths = [str(DATA / f"{n}.jsonl") for n in RECORDED]
    assert main(["lint", "--json", *paths]) == 0
    answers = json.loads(capsys.readouterr().out)["answers"]
    assert len(answers) >= len(RECORDED)  # shared session ids merge some fixtures' answers
    failed = [(a["conversation_id"], r["rule"]) for a in answers for r in a["results"]
              if r["applicable"] and not r["passed"]]  # fmt: skip
    assert failed == []


def test_the_same_answer_without_its_tool_result_is_flagged(capsys, tmp_path):
    # what the rules said of these answers before the readers: the tool's output unread
    lines = []
    for line in (DATA / "openinference.jsonl").read_text().splitlines():
        doc = json.loads(line)
        for s in doc["resourceSpans"][0]["scopeSpans"][0]["spans"]:
            tools = {a["key"].rsplit(".message.", 1)[0] for a in s["attributes"]
                     if a["value"].get("stringValue") == "tool"}  # fmt: skip
            results = {f"{t}.message.content" for t in tools}
            s["attributes"] = [a for a in s["attributes"] if a["key"] not in results]
        lines.append(json.dumps(doc))
    path = tmp_path / "openinference-without-results.jsonl"
    path.write_text("\n".join(lines) + "\n")
    main(["lint", "--json", str(path)])
    answers = json.loads(capsys.readouterr().out)["answers"]
    flagged = {r["rule"] for a in answers for r in a["results"] if not r["passed"]}
    assert "grounded-identifiers" in flagged


def test_adk_without_content_is_told_to_turn_content_on(capsys):
    doc = export(capsys, DATA / "google-adk-no-content.jsonl")
    assert doc["conversations"] == []
    (note,) = [w["message"] for w in doc["warnings"]]
    assert "content capture was off" in note


def test_clickhouse_replays_the_other_recorders_as_the_files_do(store):
    paths = [str(DATA / f"{n}.jsonl") for n in RECORDED]
    load(paths, store)
    from_files = TraceReader.open(paths, cache=False)
    from_store = TraceReader.open([store])
    ids = sorted(from_files.index.conversation_ids())
    assert sorted(from_store.index.conversation_ids()) == ids
    assert len(ids) == len(RECORDED) - 5  # the six of our session are one conversation

    def key(row):
        return (row.trace_id, row.span_id)

    for cid in ids:
        file_rows = sorted(from_files.index.chat_rows(cid), key=key)
        store_rows = sorted(from_store.index.chat_rows(cid), key=key)
        assert [r.span_id for r in store_rows] == [r.span_id for r in file_rows]
        for a, b in zip(store_rows, file_rows, strict=True):
            assert (a.input_messages, a.output_messages) == (b.input_messages, b.output_messages)
            assert (a.model, a.input_tokens, a.output_tokens) == (b.model, b.input_tokens,
                                                                   b.output_tokens)  # fmt: skip


@pytest.mark.parametrize(
    "few, few_ids",
    [(20, 100), (0, 100), (0, 0)],
    ids=["by trace ids", "by conversations", "by conversations' CRC32s"],
)
def test_a_bulk_clickhouse_read_resolves_the_other_recorders_as_the_files_do(
    store, monkeypatch, few, few_ids
):
    """A bulk read (the catalog's) names a few traces by their ids and many by their
    conversations; another recorder's span gets its whole map and its events either way,
    asked for after its mark."""
    from trajectory_review.index import clickhouse
    from trajectory_review.index.rows import resolved

    monkeypatch.setattr(clickhouse, "FEW_TRACES", few)
    monkeypatch.setattr(clickhouse, "FEW_IDS", few_ids)
    paths = [str(DATA / f"{n}.jsonl") for n in RECORDED]
    load(paths, store)
    from_files = TraceReader.open(paths, cache=False).index
    streamed = list(TraceReader.open([store]).index.iter_chat_rows())
    assert sorted(cid for cid, _ in streamed) == sorted(from_files.conversation_ids())

    def seen(rows):
        return sorted(
            (r.span_id, r.input_messages, r.output_messages, r.model, r.output_tokens) for r in rows
        )

    for cid, spans in streamed:
        assert seen(resolved(cid, spans)) == seen(from_files.chat_rows(cid)), cid


def test_a_clickhouse_store_says_which_recorders_calls_it_cannot_read(store, tmp_path):
    r = Recorder()
    langsmith = {"gen_ai.operation.name": "chat", "gen_ai.prompt": "How many plots?",
                 "gen_ai.completion": "There are 12 plots."}  # fmt: skip
    r.spans.append(otlp.span("c" * 32, "d" * 16, "ChatOpenAI", 10**18, 10**18 + 1, attrs=langsmith))
    load([str(r.write(tmp_path / "langsmith.jsonl"))], store)
    said = [w.message for w in TraceReader.open([store]).source_warnings()]
    (line,) = [w for w in said if "look like model calls" in w]
    assert line.startswith("1 span(s)") and "recorded with LangSmith (" in line
