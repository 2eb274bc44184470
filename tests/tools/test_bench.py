"""`trajectory-review bench` end to end, on corpora small enough for the unit suite: what
it prints is one JSON document, and its start-up figures are medians of repeated runs."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys


def test_bench_prints_one_json_report_with_start_figures_as_medians_of_its_runs(tmp_path):
    # Its own process, stdout captured as a user's pipe would be: DuckDB's progress bar
    # once followed the JSON there and broke the parse ("Extra data").
    out = subprocess.run(
        [sys.executable, "-m", "trajectory_review", "bench", "--json", "--yes",
         "--steps", "files", "--big", "40", "--small", "20", "--mid", "60",
         "--text-mb", "1", "--repeat", "3", "--workdir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    ).stdout  # fmt: skip
    report = json.loads(out)
    figures, d = report["figures"], report["detail"]
    for name in ("ready_vs_raw_scan", "lint_vs_raw_scan", "index_vs_raw_scan",
                 "open_100k_vs_1k", "peak_rss_mb", "adversarial_vs_plain"):  # fmt: skip
        assert set(figures[name]) == {"value", "goal", "met"}
        assert figures[name]["value"] > 0
    assert d["start_runs"] == 3
    for runs in ("ready_runs_seconds", "lint_runs_seconds", "mid_raw_scan_runs_seconds"):
        assert len(d[runs]) == 3 and all(s > 0 for s in d[runs])
    # the figure is the median run over the raw scan's best, never one sample
    assert abs(d["ready_seconds"] - statistics.median(d["ready_runs_seconds"])) < 0.002
    assert abs(d["lint_seconds"] - statistics.median(d["lint_runs_seconds"])) < 0.002
    assert abs(d["mid_raw_scan_seconds"] - min(d["mid_raw_scan_runs_seconds"])) < 0.002
    ratio = d["ready_seconds"] / d["mid_raw_scan_seconds"]
    assert abs(figures["ready_vs_raw_scan"]["value"] - ratio) < 0.01 * ratio
    # every answer judged comes after the list is up, in the median as in each run
    assert d["judged_seconds"] >= d["ready_seconds"] - 0.002
