"""Today's commons records each turn's decisions on a `commons_provenance` span set when it
starts (Posit Connect may keep the turn span's attributes as they were at its start):
the latest one per turn is the record, from every source; a turn without one falls back
to its own attributes; an untagged one is no claim (issue #35 §1)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

from tests.fixtures import A, Provenance, Q, Recorder, span_lines
from trajectory_review.tools.cli import main

ACCEPTED = {"quote": "Canopy cover is always acre-weighted for reporting.",
            "status": "accepted", "label": "Reporting guide", "kind": "prose"}  # fmt: skip
REJECTED = {"quote": "a fabricated quote goes here", "status": "rejected"}

# conversation -> (what the turn span says, its provenance spans, the record expected)
CASES: dict[str, tuple[dict, list[Provenance], tuple[str | None, list]]] = {
    # the turn span kept as it started: no tag, no candidates; the record is below it
    "only-provenance": ({}, [Provenance("B", [ACCEPTED])], ("B", [ACCEPTED])),
    "both-disagree": ({"tag": "C", "decisions": [REJECTED]}, [Provenance("A", [])], ("A", [])),
    "two-provenance": (
        {"tag": "C", "decisions": []},
        [Provenance("B", [ACCEPTED], 0, 3), Provenance("C", [REJECTED], 0, 2)],
        ("B", [ACCEPTED]),  # the latest end wins, whatever the order written
    ),
    "same-end-later-start": (
        {},
        [Provenance("C", [], 0, 3), Provenance("A", [], 1, 3)],
        ("A", []),
    ),
    "nested-deeper": ({}, [Provenance("A", [], under_agent=True)], ("A", [])),
    "untagged-provenance": ({"tag": "A", "decisions": []}, [Provenance(None, [])], (None, [])),
    "turn-only": ({"tag": "C", "decisions": [REJECTED]}, [], ("C", [REJECTED])),
}


def recorded(path: Path) -> Path:
    r = Recorder()
    for cid, (turn, provs, _) in CASES.items():
        r.turn(
            cid,
            [Q(f"Question of {cid}?"), A("An answer that is long enough to be one.")],
            tag=turn.get("tag"),
            decisions=turn.get("decisions"),
            provenance=provs,
        )
    return r.write(path)


def records(doc: dict) -> dict[str, tuple[str | None, list]]:
    return {
        c["id"]: (c["exchanges"][0]["provenance_tag"], c["exchanges"][0]["citation_decisions"])
        for c in doc["conversations"]
    }


def expected() -> dict[str, tuple[str | None, list]]:
    return {cid: want for cid, (_, _, want) in CASES.items()}


def export(capsys, *sources: str) -> dict:
    assert main(["export", *sources]) == 0
    return json.loads(capsys.readouterr().out)


def test_files_read_the_latest_provenance_span_of_each_turn(tmp_path, capsys):
    path = recorded(tmp_path / "t.jsonl")
    assert records(export(capsys, str(path))) == expected()


def test_connect_reads_the_same_spans_the_same_way(tmp_path, capsys, monkeypatch):
    from tests.sources.connect_standin import ConnectStandIn
    from trajectory_review.sources import connect_api

    folder = tmp_path / "gen"
    folder.mkdir()
    recorded(folder / "t.jsonl")
    server = ConnectStandIn()
    try:
        monkeypatch.setenv("CONNECT_SERVER", server.url)
        monkeypatch.setenv("CONNECT_API_KEY", server.key)
        monkeypatch.setenv("TRAJECTORY_CACHE", str(tmp_path / "cache"))
        monkeypatch.setattr(connect_api.RetrySettings, "first_wait", 0.01)
        guid = "0f3c2a1e-5b7d-4c9e-8a6f-1d2b3c4d5e6f"
        server.add(guid, span_lines(folder))  # one span a line, as Connect serves them
        assert records(export(capsys, f"connect:{guid}")) == expected()
    finally:
        server.stop()


def test_clickhouse_reads_the_same_spans_the_same_way(tmp_path, capsys, store):
    from trajectory_review.tools.load import load

    load([str(recorded(tmp_path / "t.jsonl"))], store)
    assert records(export(capsys, store)) == expected()


def test_a_catalog_row_replayed_before_its_provenance_span_arrived_is_replayed_again(
    tmp_path, store
):
    from trajectory_review.listing.catalog import build_catalog
    from trajectory_review.model.reader import TraceReader
    from trajectory_review.tools.load import load

    r = Recorder()
    trace = r.turn("late", [Q("How is canopy cover reported?"), A("Acre-weighted, always.")])
    load([str(r.write(tmp_path / "turn.jsonl"))], store)
    catalog = build_catalog(TraceReader.open([store]))
    tags = catalog.rows("SELECT tag FROM answers")
    assert catalog.replayed == 1 and tags == [("none",)]
    # its provenance span arrives later, in the same trace, below the turn
    turn_id = next(s["spanId"] for s in r.spans if s["name"] == "commons_conversation_turn")
    late = Recorder()
    late._t, late._ids = r._t, itertools.count(5000)
    late.spans.append(
        {"traceId": trace, "spanId": "5000000000000001", "parentSpanId": turn_id,
         "name": "commons_provenance", "startTimeUnixNano": str(r._t),
         "endTimeUnixNano": str(r._t + 10**9),
         "attributes": [{"key": "commons.provenance.tag", "value": {"stringValue": "B"}},
                        {"key": "commons.citation.candidates",
                         "value": {"stringValue": json.dumps([ACCEPTED])}}]}
    )  # fmt: skip
    load([str(late.write(tmp_path / "provenance.jsonl"))], store)
    again = build_catalog(TraceReader.open([store]))
    assert again.replayed == 1
    assert again.rows("SELECT tag FROM answers") == [("B",)]
