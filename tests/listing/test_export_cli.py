"""The export schema (docs/spec.md §7) and the command line's errors."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys

from tests.fixtures import CALL, RESULT, A, Q, Recorder
from trajectory_review.model.spans import iso_ns
from trajectory_review.tools.cli import main

QUOTE = "Canopy cover is always acre-weighted for reporting."
ANSWER = (
    "Average canopy cover is 61%.\n\n<commons-citation>\n\nFollows the weighting rule."
    f"\n\n> {QUOTE}\n\n</commons-citation>\n\n<commons-citation>\n> made up quote here"
    "\n</commons-citation>"
)
DECISIONS = [
    {"quote": QUOTE, "status": "accepted", "label": "documentation", "kind": "prose"},
    {"quote": "made up quote here", "status": "rejected"},
]


def sample(tmp_path):
    r = Recorder()
    history = [
        Q("How is canopy cover reported?"),
        CALL("c1", "run_sql", {"sql": "SELECT avg(canopy) FROM plots"}),
        RESULT("c1", "0.61"),
        A(ANSWER),
    ]
    r.turn("conv-1", history[:2], history, tag="B", decisions=DECISIONS)
    r.turn("conv-2", [Q("hi"), A("hello")], tag="C")
    r.turn("conv-2", [Q("hi"), A("hello"), Q("governed?"), A("yes")], tag="A")
    return r.write(tmp_path / "trace-1.jsonl", extra_lines=["{torn"])


def run_export(capsys, *args):
    assert main(["export", *args]) == 0
    return capsys.readouterr()


def test_export_json_follows_the_schema(tmp_path, capsys):
    out = run_export(capsys, str(sample(tmp_path)))
    doc = json.loads(out.out)
    assert doc["schema"] == "trajectory-review/export@1"
    assert doc["stats"] == {
        "files": 1,
        "lines": doc["stats"]["lines"],
        "bad_lines": 1,
        "spans": doc["stats"]["spans"],
        "conversations": 2,
        "dropped_conversations": 0,
    }
    assert [c["id"] for c in doc["conversations"]] == ["conv-2", "conv-1"]  # newest first
    ex = doc["conversations"][1]["exchanges"][0]
    assert ex["index"] == 1 and ex["question"] == "How is canopy cover reported?"
    assert ex["tools"] == [
        {"name": "run_sql", "arguments": {"sql": "SELECT avg(canopy) FROM plots"}, "result": "0.61"}
    ]
    assert ex["answer_raw"] == ANSWER
    assert ex["answer_projected"] == (
        'Average canopy cover is 61%.\n\n<shiny-aside display="compact" label="documentation" '
        'icon="commons-icons/citation-prose.svg">Follows the weighting rule.\n\n> '
        + QUOTE
        + "</shiny-aside>\n\n"
    )
    assert ex["provenance_tag"] == "B" and ex["citation_decisions"] == DECISIONS
    assert ex["rejected_citations"] == 1 and ex["malformed_citations"] == 0
    assert ex["chips"] == [
        {"kind": "review-audit", "label": "Review audit", "body": "1 citation rejected."}
    ]
    conv2 = doc["conversations"][0]
    assert [e["provenance_tag"] for e in conv2["exchanges"]] == ["C", "A"]
    assert conv2["exchanges"][1]["chips"][0]["label"] == "Verified answer"
    assert conv2["last_active"].endswith("Z") and len(conv2["last_active"]) == 30
    assert "trace-1.jsonl:5: not JSON, skipped" in out.err  # by file and line


def test_iso_timestamps_keep_nanoseconds():
    assert iso_ns(1_767_225_603_900_000_001) == "2026-01-01T00:00:03.900000001Z"


def test_export_csv_has_one_row_per_exchange(tmp_path, capsys):
    out = run_export(capsys, str(sample(tmp_path)), "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out.out)))
    assert [(r["conversation_id"], r["index"], r["provenance_tag"]) for r in rows] == [
        ("conv-2", "1", "C"),
        ("conv-2", "2", "A"),
        ("conv-1", "1", "B"),
    ]
    assert rows[2]["rejected_citations"] == "1"


def test_missing_source_exits_2_with_one_line(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "trajectory_review.tools.cli", "export", str(tmp_path / "missing")],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0
    assert "trace source not found" in proc.stderr and "Traceback" not in proc.stderr


def test_empty_directory_exits_2(tmp_path, capsys):
    assert main(["export", str(tmp_path)]) == 2
    assert "no trace files" in capsys.readouterr().err


def test_traces_env_variable_is_the_default_source(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("TRAJECTORY_TRACES", str(sample(tmp_path)))
    doc = json.loads(run_export(capsys).out)
    assert doc["stats"]["conversations"] == 2


def test_generate_writes_rotated_files_a_link_and_a_cut_line(tmp_path, capsys):
    out = tmp_path / "gen"
    assert main(["generate", str(out), "--conversations", "40", "--seed", "3"]) == 0
    names = sorted(p.name for p in out.iterdir())
    assert "trace-latest.jsonl" in names and any(n.endswith(".gz") for n in names)
    latest = out / "trace-latest.jsonl"
    newest = max(
        (p for p in out.iterdir() if p.name != "trace-latest.jsonl" and not p.name.endswith(".gz")),
        key=lambda p: int(p.stem.split("-")[1]),
    )
    assert latest.stat().st_ino == newest.stat().st_ino
    assert not latest.read_text().endswith("\n")  # cut mid-write
    capsys.readouterr()
    doc = json.loads(run_export(capsys, str(out)).out)
    assert doc["stats"]["bad_lines"] >= 2
    tags = {e["provenance_tag"] for c in doc["conversations"] for e in c["exchanges"]}
    assert tags == {"A", "B", "C", None}


def test_generate_is_deterministic_for_a_seed(tmp_path):
    from trajectory_review_bench.generate import generate

    generate(tmp_path / "a", 15, seed=5)
    generate(tmp_path / "b", 15, seed=5)
    for p in (tmp_path / "a").iterdir():
        assert p.read_bytes() == (tmp_path / "b" / p.name).read_bytes(), p.name


def test_a_corrupt_file_is_one_warning_and_the_rest_exports(tmp_path):
    r = Recorder()
    r.turn("c1", [Q("q1"), A("a1")], tag="A")
    r.write(tmp_path / "t.jsonl")
    (tmp_path / "old.jsonl.gz").write_bytes(b"rotated but never finished")
    proc = subprocess.run(
        [sys.executable, "-m", "trajectory_review.tools.cli", "export", str(tmp_path)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["conversations"][0]["id"] == "c1"
    assert proc.stderr.strip().splitlines() == [
        f"warning: {tmp_path / 'old.jsonl.gz'}: not readable (corrupt or truncated?), skipped"
    ]
