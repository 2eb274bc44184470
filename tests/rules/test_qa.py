"""The lint command over recorded answers and the rule quality figures."""

from __future__ import annotations

import json

from tests.fixtures import A, Q, Recorder, qa_traces
from trajectory_review.reviews.log import ReviewEvent, ReviewLog
from trajectory_review.rules.qa import quality_csv, rule_quality
from trajectory_review.tools.cli import main


def test_lint_prints_the_harness_report(tmp_path, capsys):
    assert main(["lint", str(qa_traces(tmp_path))]) == 1  # an answer would be withheld
    out = capsys.readouterr().out
    assert out.startswith("1/2 answers clean\n")  # the unfinished exchange is not judged
    assert "  FAIL no-banned-phrases: 1/2\n" in out
    assert "Failing answers:\n  c1 #1\n    - no-banned-phrases: praise opener\n" in out


def test_lint_json_follows_the_schema(tmp_path, capsys):
    assert main(["lint", str(qa_traces(tmp_path)), "--json", "--fail-on", "never"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == "trajectory-review/lint@1" and doc["mode"] == "report"
    by_id = {a["conversation_id"]: a for a in doc["answers"]}
    assert by_id["c1"]["would_collapse"] and not by_id["c2"]["would_collapse"]
    assert [r["rule"] for r in by_id["c1"]["results"]][0] == "says-something"
    assert doc["per_rule"]["no-banned-phrases"] == {"passed": 1, "total": 2}


def test_lint_judges_what_the_user_saw(tmp_path, capsys):
    # the citation markup is projected away before the rules count words
    main(["lint", str(qa_traces(tmp_path)), "--json"])
    doc = json.loads(capsys.readouterr().out)
    c2 = next(a for a in doc["answers"] if a["conversation_id"] == "c2")
    assert all(r["passed"] for r in c2["results"])


def test_lint_with_a_bad_rules_file_is_one_line_and_exit_2(tmp_path, capsys):
    bad = tmp_path / "rules.toml"
    bad.write_text("[says-something]\nminimum = 3\n")
    assert main(["lint", str(qa_traces(tmp_path)), "--rules", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown key 'minimum' in [says-something]" in err


def test_rule_quality_counts_and_never_shows_a_rate_over_zero_reviews(tmp_path):
    rows = [
        {
            "conversation_id": "c1",
            "exchange": 1,
            "failed_rules": ["no-banned-phrases"],
            "blocking_rules": ["no-banned-phrases"],
            "na_rules": ["no-dead-package"],
        },
        {
            "conversation_id": "c2",
            "exchange": 1,
            "failed_rules": ["no-banned-phrases"],
            "blocking_rules": ["no-banned-phrases"],
            "na_rules": [],
        },
        {
            "conversation_id": "c3",
            "exchange": 2,
            "failed_rules": [],
            "blocking_rules": [],
            "na_rules": [],
        },
    ]
    log = ReviewLog(tmp_path / "r.jsonl")
    log.append(
        ReviewEvent("verdict", "c1", "ana", 1, rule="no-banned-phrases", verdict="false_positive")
    )
    log.append(ReviewEvent("verdict", "c2", "ana", 1, rule="no-banned-phrases", verdict="correct"))
    q = {x.rule: x for x in rule_quality(rows, log.state())}
    bp = q["no-banned-phrases"]
    assert (
        bp.evaluated,
        bp.flagged,
        bp.blocking,
        bp.reviewed,
        bp.false_positives,
        bp.unreviewed,
    ) == (3, 2, 2, 2, 1, 0)
    assert bp.fp_rate == 0.5 and bp.rate_text() == "50% (1 of 2)"
    assert q["no-dead-package"].not_applicable == 1 and q["no-dead-package"].evaluated == 2
    assert q["no-hedged-names"].fp_rate is None
    assert q["no-hedged-names"].rate_text() == "no reviews yet"
    csv_text = quality_csv(list(q.values()))
    assert "no-banned-phrases,3,0,2,2,2,1,0.5000,0" in csv_text
    assert "no-hedged-names,3,0,0,0,0,0,,0" in csv_text


def test_lint_exits_1_as_fail_on_says_so_it_can_gate_ci(tmp_path, capsys):
    path = str(qa_traces(tmp_path))
    assert main(["lint", path]) == 1  # default: an answer the linter would withhold
    assert main(["lint", path, "--fail-on", "gate"]) == 1
    assert main(["lint", path, "--fail-on", "metric"]) == 1
    assert main(["lint", path, "--fail-on", "never"]) == 0
    quiet = tmp_path / "quiet.toml"
    quiet.write_text("[no-banned-phrases]\npattern = []\n")
    assert main(["lint", path, "--rules", str(quiet)]) == 0  # nothing withheld any more


def test_lint_in_worker_processes_reports_exactly_what_one_process_does(
    tmp_path, capsys, monkeypatch
):
    from trajectory_review.support import workers
    from trajectory_review_bench.generate import generate

    generate(tmp_path / "traces", conversations=80, seed=5)
    monkeypatch.setattr(workers, "PARALLEL_MIN", 0)
    monkeypatch.setattr(workers, "BATCH", 8)  # several batches in flight, in order
    reports = []
    for n in ("1", "2"):
        monkeypatch.setenv("TRAJECTORY_WORKERS", n)
        main(["lint", str(tmp_path / "traces"), "--json", "--fail-on", "never"])
        reports.append(capsys.readouterr().out)
    assert reports[0] == reports[1]
    assert len(json.loads(reports[0])["answers"]) > 80


def test_lint_on_trace_files_starts_without_pandas_or_an_http_client(tmp_path):
    """lint on files needs neither pandas nor the app nor Connect's HTTP client: importing
    pandas (through the ClickHouse index, for every source) was ~0.5 s of a 3.7 s lint of
    5,000 conversations, httpx 0.05 s of the start of each worker process, and asyncio
    (Connect's downloads) 20 ms before the index build could start."""
    import os
    import subprocess
    import sys

    r = Recorder()
    r.turn("c1", [Q("q1"), A("a1")], tag="A")
    path = r.write(tmp_path / "t.jsonl")
    code = (
        "import sys\n"
        "from trajectory_review.tools.cli import main\n"
        f"rc = main(['lint', {str(path)!r}, '--json', '--fail-on', 'never'])\n"
        "heavy = ('pandas', 'shiny', 'pyarrow', 'httpx', 'asyncio')\n"
        "heavy = sorted(m for m in heavy if m in sys.modules)\n"
        "print('imported:', heavy, file=sys.stderr)\n"
        "sys.exit(rc)\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "TRAJECTORY_CACHE": "off"},
    )
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["answers"]
    assert "imported: []" in run.stderr
