"""Before and after on one machine: the bench's own measurements run against another
checkout of the package, so that a change's figures are compared in the same hour, by
the same harness, on the same corpora.

    git worktree add /tmp/before REV
    .venv/bin/python scripts/bench_against.py /tmp/before     # that checkout
    .venv/bin/python scripts/bench_against.py .               # this one

Prints one JSON document: ready_vs_raw_scan and lint_vs_raw_scan (the median of paired
ratios, as `bench`), index_vs_raw_scan (the best build over the best raw scan,
alternated, as `bench`), and open_100k_vs_1k, adversarial_vs_plain and the answers
replayed and judged per second on one core, each with its runs.

Every child process (`serve`, `lint`, the index build, the in-process steps) imports
the package from the named checkout's `src` (PYTHONPATH comes before the editable
install); the raw scans, the corpora (`bench-data/`, made by `make bench`) and the timing
are this checkout's. An older checkout runs from its Python sources where it predates
the compiled replay, as it ran then.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from trajectory_review.tools.cli import build_parser
from trajectory_review_bench import bench, bench_serve

# The app page is told from the progress page by its title: every version of the app
# has served "trajectory-review · loading" while it reads the traces, and the list's own
# element (bench_serve.READY_MARK) is newer than some checkouts worth comparing with.
APP_PAGE_TITLE = b"<title>trajectory-review</title>"

# The steps that run inside one process, run in a child importing the other checkout:
# its own bench functions (in its benchmarks/, or before #37 its tools/; their names and
# results have not changed since the issue that set the goals was filed), on this
# checkout's corpora.
_IN_PROCESS = r"""
import json, sys
from pathlib import Path
try:  # the checkout's benchmarks/ folder (since #37), else its package's tools/
    from trajectory_review_bench.bench import (
        answer_text, bench_adversarial, bench_open, bench_replay
    )
except ImportError:
    from trajectory_review.tools.bench import (
        answer_text, bench_adversarial, bench_open, bench_replay
    )
big, small, out = (Path(a) for a in sys.argv[1:4])
d = {}
d.update(bench_open(big, small))
d.update(bench_adversarial(answer_text(1)))
d.update(bench_replay(small))
out.write_text(json.dumps(d))
"""


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("checkout", type=Path, help="the checkout to measure (its src/ is imported)")
    bench_defaults = build_parser().parse_args(["bench"])  # the corpora and runs of bench
    p.add_argument("--workdir", type=Path, default=Path(bench_defaults.workdir),
                   help="bench's corpora")  # fmt: skip
    p.add_argument("--repeat", type=int, default=bench_defaults.repeat,
                   help="runs of each, as bench's --repeat")  # fmt: skip
    for size in bench.SEEDS:
        p.add_argument(f"--{size}", type=int, default=getattr(bench_defaults, size),
                       help=f"conversations, as bench's --{size}")  # fmt: skip
    args = p.parse_args()
    src = (args.checkout / "src").resolve()
    if not (src / "trajectory_review").is_dir():
        print(f"bench_against: no src/trajectory_review in {args.checkout}", file=sys.stderr)
        return 2
    corpora = {
        size: bench.corpus_path(args.workdir, getattr(args, size), seed)
        for size, seed in bench.SEEDS.items()
    }
    missing = [str(c) for c in corpora.values() if not (c / ".complete").exists()]
    if missing:
        print(f"bench_against: run `make bench` first (missing {', '.join(missing)})",
              file=sys.stderr)  # fmt: skip
        return 2
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [
            str(src),
            str((args.checkout / "benchmarks").resolve()),
            *filter(None, [os.environ.get("PYTHONPATH")]),
        ]
    )
    bench_serve.READY_MARK = APP_PAGE_TITLE
    mid, big, small = corpora["mid"], corpora["big"], corpora["small"]
    report: dict = {"checkout": str(args.checkout)}
    report.update(bench.bench_start(mid, args.repeat))
    report.update(bench.bench_index(big, args.repeat))
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "in-process.json"
        subprocess.run(
            [sys.executable, "-c", _IN_PROCESS, str(big), str(small), str(out)],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        report.update(json.loads(out.read_text()))
    print(json.dumps({k: round(v, 4) if isinstance(v, float) else v for k, v in report.items()},
                     indent=1))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
