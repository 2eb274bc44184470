"""`trajectory-review bench` and `generate`: registered with the command line by entry point
(`trajectory_review.commands`), so they exist where this folder is installed (a checkout,
after `make setup`) and nowhere else."""

from __future__ import annotations

import argparse
import sys

from trajectory_review.tools.cli import EXIT_STATUS


def cmd_generate(args: argparse.Namespace) -> int:
    from trajectory_review_bench.generate import generate

    counts = generate(args.outdir, conversations=args.conversations, seed=args.seed)
    print(
        f"wrote {counts['conversations']} conversations, {counts['spans']} spans in "
        f"{counts['files']} files to {args.outdir}",
        file=sys.stderr,
    )
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    from trajectory_review_bench.bench import run_bench

    return run_bench(args)


def register_generate(sub: argparse._SubParsersAction, fmt: type) -> None:
    g = sub.add_parser("generate", help="realistic synthetic traces", formatter_class=fmt)
    g.add_argument("outdir", help="folder to write trace files to")
    g.add_argument("--conversations", type=int, default=200, help="how many conversations")
    g.add_argument("--seed", type=int, default=7, help="random seed (same seed, same traces)")
    g.set_defaults(func=cmd_generate)
    g.epilog = EXIT_STATUS


def register_bench(sub: argparse._SubParsersAction, fmt: type) -> None:
    b = sub.add_parser(
        "bench", help="the performance report (ratios against baselines)", formatter_class=fmt
    )
    b.add_argument("--json", action="store_true", help="print the figures as JSON")
    b.add_argument("--spans", type=int, default=1_000_000, help="spans in the big corpus")
    b.add_argument("--big", type=int, default=100_000, help="conversations in the big index")
    b.add_argument("--small", type=int, default=1_000, help="conversations in the small index")
    b.add_argument(
        "--mid", type=int, default=5_000, help="conversations in the corpus served and linted"
    )
    b.add_argument(
        "--sessions",
        type=int,
        default=8,
        help="browser sessions reviewing the big corpus at once (0: skip that step)",
    )
    b.add_argument("--text-mb", type=int, default=50, help="MB of answers for the scanner")
    b.add_argument(
        "--long-turns",
        type=int,
        default=20_000,
        help="answers in the one long conversation set beside the mid corpus",
    )
    b.add_argument(
        "--repeat",
        type=int,
        default=3,
        help="runs of serve and of lint on the mid corpus, each beside a raw scan (medians)",
    )
    b.add_argument("--workdir", default="bench-data", help="where the corpora are written")
    b.add_argument("--yes", action="store_true", help="write the corpora without asking")
    b.add_argument(
        "--steps",
        default="all",
        help="comma-separated: files (index, open, ready, lint, scanner), reviewers, "
        "clickhouse, reviews (the PostgreSQL review store); or all",
    )
    b.add_argument(
        "--clickhouse-small", type=int, default=10_000, help="spans in the small chdb store"
    )
    b.add_argument(
        "--clickhouse-big", type=int, default=1_000_000, help="spans in the big chdb store"
    )
    b.set_defaults(func=cmd_bench)
    b.epilog = EXIT_STATUS
