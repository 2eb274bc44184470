"""`trajectory-review bench` end to end, on corpora small enough for the unit suite: what
it prints is one JSON document, and its start-up figures are medians of repeated runs."""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

from trajectory_review_bench.bench import SEEDS, corpus_path


def test_bench_prints_one_json_report_with_start_figures_as_medians_of_paired_runs(tmp_path):
    # Its own process, stdout captured as a user's pipe would be: DuckDB's progress bar
    # once followed the JSON there and broke the parse ("Extra data").
    out = subprocess.run(
        [sys.executable, "-m", "trajectory_review", "bench", "--json", "--yes",
         "--steps", "files", "--big", "40", "--small", "20", "--mid", "60",
         "--text-mb", "1", "--repeat", "3", "--long-turns", "300",
         "--workdir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    ).stdout  # fmt: skip
    report = json.loads(out)
    figures, d = report["figures"], report["detail"]
    for name in ("ready_vs_raw_scan", "lint_vs_raw_scan", "index_vs_raw_scan",
                 "open_100k_vs_1k", "peak_rss_mb", "adversarial_vs_plain",
                 "long_conversation_ready_vs_without", "whatif_vs_lint",
                 "answers_per_second_per_core"):  # fmt: skip
        assert set(figures[name]) == {"value", "goal", "met"}
        assert figures[name]["value"] > 0
    assert d["start_runs"] == 3
    rates = d["answers_per_second_runs"]  # one replay's rate moved by a fifth run to run
    assert (
        len(rates) == 3
        and abs(figures["answers_per_second_per_core"]["value"] - statistics.median(rates)) <= 1
    )
    pairs = d["long_conversation_ready_runs_seconds"]
    paired = statistics.median(w / wo for wo, w in pairs)
    assert (
        len(pairs) == 3
        and abs(figures["long_conversation_ready_vs_without"]["value"] - paired) < 0.01 * paired
    )
    for runs in ("ready_runs_seconds", "lint_runs_seconds", "mid_raw_scan_runs_seconds"):
        assert len(d[runs]) == 3 and all(s > 0 for s in d[runs])
    # each figure is the median of its runs' ratios, each run over the raw scan taken
    # beside it, never one sample and never a lucky baseline's
    raws = d["mid_raw_scan_runs_seconds"]
    for step in ("ready", "lint"):
        runs = d[f"{step}_runs_seconds"]
        assert abs(d[f"{step}_seconds"] - statistics.median(runs)) < 0.002
        paired = statistics.median(r / raw for r, raw in zip(runs, raws, strict=True))
        value = figures[f"{step}_vs_raw_scan"]["value"]
        assert abs(value - paired) < 0.01 * paired
        # the earlier figure, over the session's best raw scan, is kept in the detail
        over_best = statistics.median(runs) / min(raws)
        assert abs(d[f"{step}_vs_best_raw_scan"] - over_best) < 0.01 * over_best
    # every answer judged comes after the list is up, in the median as in each run
    assert d["judged_seconds"] >= d["ready_seconds"] - 0.002
    # the index: the best of three builds over the best of three raw scans beside them,
    # every run kept and the paired median beside the figure
    builds, scans = d["index_runs_seconds"], d["index_raw_scan_runs_seconds"]
    assert len(builds) == len(scans) == 3 and all(s > 0 for s in builds + scans)
    best = min(builds) / min(scans)
    assert abs(figures["index_vs_raw_scan"]["value"] - best) < 0.01 * best
    paired = statistics.median(b / s for b, s in zip(builds, scans, strict=True))
    assert abs(d["index_vs_raw_scan_paired"] - paired) < 0.01 * paired


def test_bench_without_chromium_says_so_before_any_step_runs(tmp_path):
    # Found missing after the files step, the run ended minutes in, with Playwright's
    # note about a browser it never uses.
    bare = tmp_path / "bin"
    bare.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "trajectory_review", "bench", "--json", "--yes",
         "--steps", "files,reviewers", "--big", "40", "--small", "20", "--mid", "60",
         "--workdir", str(tmp_path / "data")],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PATH": str(bare)},
    )  # fmt: skip
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip().splitlines() == [
        "trajectory-review: the reviewers step needs Chromium (`make browser-deps` "
        "installs it; `--sessions 0` leaves the step out)"
    ]
    assert not (tmp_path / "data").exists()  # no corpus written for a run that cannot end


def test_bench_against_measures_the_checkout_it_names_on_the_bench_corpora(tmp_path):
    # scripts/bench_against.py: the before/after of a change on one machine. Every child
    # (serve, lint, the index builds, the in-process steps) must import the named
    # checkout, not this one, or "before" silently measures "after".
    root = Path(__file__).resolve().parents[2]
    other = tmp_path / "before"
    for part in ("src", "static", "benchmarks"):
        shutil.copytree(root / part, other / part, ignore=shutil.ignore_patterns("__pycache__"))
    marks = tmp_path / "imported.txt"
    init = other / "src" / "trajectory_review" / "__init__.py"
    init.write_text(
        init.read_text() + "\nimport os as _os, sys as _sys\n"
        "if _os.environ.get('BENCH_AGAINST_MARKS'):\n"
        "    with open(_os.environ['BENCH_AGAINST_MARKS'], 'a') as _f:\n"
        "        _f.write(' '.join(_sys.argv[1:3]) + '\\n')\n"
    )
    work = tmp_path / "bench-data"
    sizes = {"big": 40, "small": 20, "mid": 60}
    for size, n in sizes.items():
        out = corpus_path(work, n, SEEDS[size])
        subprocess.run(
            [sys.executable, "-m", "trajectory_review", "generate", str(out),
             "--conversations", str(n), "--seed", str(SEEDS[size])],
            check=True, capture_output=True, timeout=120,
        )  # fmt: skip
        (out / ".complete").write_text("ok")
    done = subprocess.run(
        [sys.executable, str(root / "scripts" / "bench_against.py"), str(other),
         "--workdir", str(work), "--repeat", "1",
         *(f"--{size}={n}" for size, n in sizes.items())],
        capture_output=True, text=True, timeout=300,
        env={**os.environ, "BENCH_AGAINST_MARKS": str(marks)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    figures = ("ready_vs_raw_scan", "lint_vs_raw_scan", "index_vs_raw_scan", "open_100k_vs_1k")
    for name in (*figures, "adversarial_vs_plain", "answers_per_second_per_core"):
        assert report[name] > 0, name
    imported = marks.read_text().splitlines()
    assert any(line.startswith("serve") for line in imported)
    assert any(line.startswith("lint") for line in imported)
    assert any(line.startswith("index") for line in imported)  # the build's child
    assert any(line.startswith("raw") for line in imported)  # the raw scan's, beside it
    assert any(line.startswith(str(work)) for line in imported)  # the in-process steps


def test_the_reviews_step_measures_postgresql_against_the_file_store(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "trajectory_review", "bench", "--yes", "--steps", "reviews",
         "--workdir", str(tmp_path)],
        capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip
    assert "| reviews_start_100k_seconds |" in done.stdout
    assert "review saves: PostgreSQL p50" in done.stdout and "from the file" in done.stdout
