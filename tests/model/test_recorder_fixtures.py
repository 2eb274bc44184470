"""Traces written by real GenAI recorders load as conversations (issue #8 §3).

The fixtures in tests/data/recorders/ were recorded by scripts/record_fixtures.py: chatlas'
own OpenTelemetry instrumentation and opentelemetry-instrumentation-openai-v2, each
talking to a scripted OpenAI-compatible server on 127.0.0.1, with tool calls."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trajectory_review.app.transcript_html import conversation_html
from trajectory_review.model.reader import TraceReader
from trajectory_review.reviews.log import ReviewState
from trajectory_review.rules.registry import load_rules
from trajectory_review.tools.cli import main

DATA = Path(__file__).parents[1] / "data" / "recorders"


def exchanges(capsys, name: str) -> dict[str, list[dict]]:
    assert main(["export", str(DATA / name)]) == 0
    out = capsys.readouterr()
    # nothing skipped, nothing unreadable; a recorder run without a conversation id is said
    lines = out.err.splitlines()
    assert all("carry no gen_ai.conversation.id" in ln for ln in lines), lines
    return {c["id"]: c["exchanges"] for c in json.loads(out.out)["conversations"]}


def by_question(convs: dict[str, list[dict]], question: str) -> tuple[str, list[dict]]:
    found = [(cid, exs) for cid, exs in convs.items() if exs[-1]["question"] == question]
    assert len(found) == 1, question
    return found[0]


def test_openai_v2_traces_load_with_tool_calls_finish_reasons_and_errors(capsys):
    convs = exchanges(capsys, "openai-v2.jsonl")
    assert len(convs) == 3  # no conversation id: each agent turn is its trace
    cid, (answer,) = by_question(convs, "What is the average canopy cover?")
    assert answer["tools"] == [
        {
            "name": "run_sql",
            "arguments": {"sql": "SELECT avg(canopy) FROM plots"},
            "result": '[{"avg_canopy": 0.61}]',
        }
    ]
    assert answer["answer_raw"].startswith("Average canopy cover is 61%.")
    assert answer["answer_raw"].endswith("The query averaged every plot.")
    assert answer["finish_reasons"] == ["stop"] and answer["error"] is None
    # no commons turn span recorded a decision: the citation renders nothing
    assert answer["provenance_tag"] is None and "<shiny-aside" not in answer["answer_projected"]
    _, (cut,) = by_question(convs, "Tell me everything about the plots.")
    assert cut["finish_reasons"] == ["length"]
    assert cut["answer_raw"] == "Here is everything: the fir"
    _, (failed,) = by_question(convs, "What caused the outage?")
    assert failed["error"]["type"] == "InternalServerError"
    assert "overloaded" in failed["error"]["message"]


def test_chatlas_traces_load_by_conversation_id_and_by_trace(capsys):
    convs = exchanges(capsys, "chatlas.jsonl")
    first, second = convs["chatlas-conversation-1"]
    assert first["question"] == "What is the average canopy cover?"
    assert [t["name"] for t in first["tools"]] == ["run_sql"]
    assert first["tools"][0]["result"] == '[{"avg_canopy": 0.61}]'
    assert first["answer_raw"].endswith("The query averaged every plot.")
    assert second["question"] == "Tell me everything about the plots."
    assert second["answer_raw"] == "Here is everything: the fir"
    # without an id chatlas leaves one trace per chat() call: the failed call is there
    _, exs = by_question(convs, "What caused the outage?")
    assert exs[-1]["error"]["type"] and exs[-1]["answer_raw"] == ""


@pytest.mark.parametrize("name", ["chatlas.jsonl", "openai-v2.jsonl"])
def test_recorded_conversations_render_with_tool_cards(name):
    reader = TraceReader.open([DATA / name])
    rules = load_rules()
    pages = [
        str(conversation_html(reader.conversation(cid), ReviewState(), rules))
        for cid in reader.index.conversation_ids()
    ]
    joined = "\n".join(pages)
    assert joined.count('class="tr-tool-name"') >= 1
    assert "SELECT avg(canopy) FROM plots" in joined
    assert "What is the average canopy cover?" in joined
    assert "failed: " in joined  # the outage, marked on its answer
