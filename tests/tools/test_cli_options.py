"""The command line explains itself, uses the deployment's rules everywhere, and writes
CSV no spreadsheet will run (issue #12, first part)."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
import time

import pytest

from tests.fixtures import A, Q, Recorder, qa_traces
from trajectory_review.reviews.log import ReviewEvent, ReviewLog
from trajectory_review.rules.qa import RuleQuality, quality_csv
from trajectory_review.tools.cli import build_parser, main

FORMULA = '=HYPERLINK("http://127.0.0.1:9/x","click")'


def test_a_deployment_profile_changes_lint_and_the_csv_alike(tmp_path, capsys, monkeypatch):
    path = str(qa_traces(tmp_path))
    assert main(["export", path, "--format", "csv"]) == 0
    rows = {r["conversation_id"]: r for r in csv.DictReader(io.StringIO(capsys.readouterr().out))}
    assert rows["c1"]["flagged_rules"] == "no-banned-phrases"
    quiet = tmp_path / "quiet.toml"
    quiet.write_text("[no-banned-phrases]\npattern = []\n")
    monkeypatch.setenv("TRAJECTORY_RULES", str(quiet))  # what the app would use too
    assert main(["lint", path]) == 0
    assert "ok   no-banned-phrases" in capsys.readouterr().out
    assert main(["export", path, "--format", "csv"]) == 0
    rows = {r["conversation_id"]: r for r in csv.DictReader(io.StringIO(capsys.readouterr().out))}
    assert rows["c1"]["flagged_rules"] == ""
    monkeypatch.delenv("TRAJECTORY_RULES")
    assert main(["export", path, "--format", "csv", "--rules", str(quiet)]) == 0
    rows = {r["conversation_id"]: r for r in csv.DictReader(io.StringIO(capsys.readouterr().out))}
    assert rows["c1"]["flagged_rules"] == ""


def test_export_reads_the_review_log_it_is_given(tmp_path, capsys):
    path = str(qa_traces(tmp_path))
    log = ReviewLog(tmp_path / "elsewhere" / "log.jsonl")
    log.append(ReviewEvent("flag", "c1", "ann", 1))
    assert main(["export", path, "--format", "csv", "--review-log", str(log.path)]) == 0
    rows = {r["conversation_id"]: r for r in csv.DictReader(io.StringIO(capsys.readouterr().out))}
    assert rows["c1"]["review_status"] == "flagged"


def test_no_csv_cell_starts_a_formula(tmp_path, capsys):
    r = Recorder()
    r.turn("=1+1", [Q(FORMULA), A("-2 is the answer, and it is plain.")], tag="A")
    path = str(r.write(tmp_path / "t.jsonl"))
    assert main(["export", path, "--format", "csv"]) == 0
    (row,) = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert row["conversation_id"] == "'=1+1" and row["question"] == "'" + FORMULA
    log = ReviewLog(tmp_path / "r.jsonl")
    for text in ("@SUM(A1)", "+1", "\tx", "\rx", "-x"):
        log.append(ReviewEvent("note", "=1+1", "=cmd|' /C calc'!A0", 1, text))
    cells = [c for row in csv.reader(io.StringIO(log.to_csv(), newline="")) for c in row]
    assert cells and not any(c.startswith(("=", "+", "-", "@", "\t", "\r")) for c in cells)
    rq = RuleQuality("=evil", 1, 0, 1, 1, 0, 0, 1)
    assert list(csv.reader(io.StringIO(quality_csv([rq]))))[1][0] == "'=evil"


@pytest.mark.parametrize("command", ["export", "serve", "lint", "generate", "bench"])
def test_every_option_has_help_and_its_default(command):
    parser = build_parser()
    sub = parser._subparsers._group_actions[0].choices[command]
    text = sub.format_help()
    for action in sub._actions:
        if action.dest == "help":
            continue
        assert action.help, f"{command} {action.dest} has no help"
        if action.default not in (None, False) and action.option_strings:
            assert "(default:" in action.help % {"default": action.default} or "default" in text
    assert "(default:" in text


def test_version_is_printed(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.startswith("trajectory-review ")


def test_serve_says_what_it_uses(tmp_path):
    path = qa_traces(tmp_path)
    log = tmp_path / "team.reviews.jsonl"
    env = {**os.environ, "TRAJECTORY_CACHE": str(tmp_path / "cache")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "trajectory_review.tools.cli", "serve", str(path),
         "--port", "0", "--review-log", str(log)],
        env=env, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    lines = []
    deadline = time.time() + 60
    try:
        while time.time() < deadline and not any(ln.startswith("serving on") for ln in lines):
            lines.append(proc.stderr.readline())
    finally:
        proc.kill()
        proc.wait()
    said = "".join(lines)
    assert f"sources: {path}" in said and f"review log: {log}" in said
    assert "rules: the shipped default profile" in said and f"cache: {tmp_path / 'cache'}" in said


def test_bench_asks_before_writing_its_corpora(tmp_path, capsys):
    work = tmp_path / "bench"
    code = main(["bench", "--workdir", str(work), "--big", "10", "--small", "5"])
    assert code == 2 and not work.exists()
    assert "--yes" in capsys.readouterr().err


def test_jsonl_export_is_the_json_export_a_line_at_a_time(tmp_path, capsys):
    path = str(qa_traces(tmp_path))
    assert main(["export", path]) == 0
    whole = json.loads(capsys.readouterr().out)
    assert main(["export", path, "--format", "jsonl"]) == 0
    head, *convs = [json.loads(ln) for ln in capsys.readouterr().out.splitlines()]
    assert head == {k: whole[k] for k in ("schema", "stats", "warnings")}
    assert convs == whole["conversations"]


def test_reviewed_answers_export_as_a_dataset(tmp_path, capsys):
    import pandas as pd

    path = str(qa_traces(tmp_path))
    log = ReviewLog(tmp_path / "r.jsonl")
    log.append(ReviewEvent("flag", "c1", "ann", 1))
    log.append(ReviewEvent("verdict", "c1", "ann", 1, "praise, really", "no-banned-phrases",
                           "correct"))  # fmt: skip
    log.append(ReviewEvent("note", "c1", "bob", 1, "agree"))
    log.append(ReviewEvent("note", "c2", "bob", None, "a conversation note, not an answer's"))
    args = ["export", path, "--reviewed", "--format", "jsonl", "--review-log", str(log.path)]
    assert main(args) == 0
    out = capsys.readouterr()
    (row,) = [json.loads(ln) for ln in out.out.splitlines()]
    assert row["schema"] == "trajectory-review/reviewed@1"
    assert (row["conversation_id"], row["exchange"]) == ("c1", 1)
    assert row["question"] == "How is canopy reported?" and row["provenance_tag"] == "A"
    assert row["tools"][0]["name"] == "call_measure" and row["answer_raw"].startswith("Great")
    failed = [r["rule"] for r in row["rule_results"] if not r["passed"]]
    assert failed == ["no-banned-phrases"]
    review = row["review"]
    assert review["state"] == "flagged" and review["queue"] == "done"
    assert [(v["rule"], v["verdict"], v["author"], v["note"]) for v in review["verdicts"]] == [
        ("no-banned-phrases", "correct", "ann", "praise, really")
    ]
    assert [(n["author"], n["text"]) for n in review["notes"]] == [("bob", "agree")]
    frame = pd.read_json(io.StringIO(out.out), lines=True)  # as the README shows
    assert list(frame["conversation_id"]) == ["c1"]


def test_every_command_keeps_one_exit_status_contract(tmp_path, capsys):
    path = str(qa_traces(tmp_path))
    bad = tmp_path / "bad.toml"
    bad.write_text("[no-such-rule]\nx = 1\n")
    for command in (["lint", path], ["export", path, "--format", "csv"],
                    ["export", path, "--reviewed"]):  # fmt: skip
        assert main([*command, "--rules", str(bad)]) == 2, command
        err = capsys.readouterr().err.strip()
        assert "\n" not in err and "no-such-rule" in err and "Error" not in err.split(":")[0]
    assert main(["lint", path, "--fail-on", "metric"]) == 1  # findings
    assert main(["export", str(tmp_path / "nowhere")]) == 2  # a source error
    for name in ("", "export", "serve", "lint", "load", "generate", "bench"):
        parser = build_parser()
        text = (
            parser.format_help()
            if not name
            else parser._subparsers._group_actions[0].choices[name].format_help()
        )
        assert "exit status: 0 done; 1 findings" in " ".join(text.split())


def test_a_mistyped_chdb_store_is_an_error_that_creates_nothing(tmp_path, capsys):
    store = tmp_path / "chdb-typo"
    assert main(["export", f"chdb://{store}"]) == 2
    assert "no chdb store there" in capsys.readouterr().err
    assert not store.exists()


def test_commons_traces_dir_names_the_traces_when_nothing_else_does(tmp_path, monkeypatch):
    from trajectory_review.sources import default_sources

    for name in ("TRAJECTORY_TRACES", "OTEL_EXPORTER_OTLP_TRACES_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("COMMONS_TRACES_DIR", str(tmp_path / "commons"))
    assert default_sources() == [str(tmp_path / "commons")]
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_FILE", str(tmp_path / "otel" / "spans.jsonl"))
    assert default_sources() == [str(tmp_path / "otel")]  # the exporter's own path first
    monkeypatch.delenv("COMMONS_TRACES_DIR")
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_FILE")
    assert default_sources() == ["traces"]


def test_conversations_named_by_their_trace_are_said_once(tmp_path, capsys):
    r = Recorder()
    for i in range(3):  # chat calls no span names a conversation of
        r.bare_chat([Q(f"question {i}?"), A("an answer of a few words here")])
    r.turn("named", [Q("q"), A("an answer of a few words here too")], tag="A")
    path = str(r.write(tmp_path / "t.jsonl"))
    assert main(["export", path]) == 0
    doc = json.loads(capsys.readouterr().out)
    said = [w["message"] for w in doc["warnings"] if "gen_ai.conversation.id" in w["message"]]
    assert len(said) == 1 and said[0].startswith("3 conversation(s)")
    assert "Set the chat's conversation id" in said[0]


@pytest.mark.parametrize(
    ("command", "status"),
    [
        (["lint", "--json", "--fail-on", "metric"], 1),
        (["export"], 0),
        (["export", "--format", "csv"], 0),
        (["lint", "--rules", "{bad}"], 2),
    ],
)
def test_commands_that_end_at_once_write_everything_and_leave_no_scratch(
    tmp_path, capsys, command, status
):
    # lint and export end the process without closing their index or Python's teardown
    # (tools.cli.run): their whole output and exit status as main gives them in-process,
    # through a pipe bigger than its buffer, and no scratch directory left behind
    r = Recorder()
    for n in range(600):
        r.turn(f"c{n}", [Q(f"How is canopy reported in stand {n}?"), A("Great question! " * 40)])
    path = str(r.write(tmp_path / "t.jsonl"))
    bad = tmp_path / "bad.toml"
    bad.write_text("[no-such-rule]\nx = 1\n")
    argv = [command[0], path, *(a.format(bad=bad) for a in command[1:])]
    assert main(argv) == status
    expected = capsys.readouterr().out
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    run = subprocess.run(
        [sys.executable, "-m", "trajectory_review", *argv],
        capture_output=True,
        # buffered, as a user's shell has it: what the process has not flushed is lost
        env={
            **{k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"},
            "TMPDIR": str(scratch),
            "TRAJECTORY_CACHE": "off",
        },
    )
    assert run.returncode == status, run.stderr
    out = run.stdout.decode()  # as written: the CSV's line ends are its own
    assert out == expected and (len(run.stdout) > 65_536 or status == 2)
    assert list(scratch.iterdir()) == []
