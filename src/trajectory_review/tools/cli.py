"""The command line: the same reading and replay code as the app, never a second copy."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from trajectory_review import settings
from trajectory_review.sources import SourceError


def package_version() -> str:
    try:
        from importlib.metadata import version

        return version("trajectory-review")
    except Exception:  # noqa: BLE001 - a checkout run without installing
        from trajectory_review import __version__

        return __version__


def _sources(args: argparse.Namespace) -> list[str] | None:
    return list(args.sources) or None


def _open_reader(args: argparse.Namespace):  # noqa: ANN202
    from trajectory_review.model.reader import TraceReader
    from trajectory_review.sources import sync_sources

    # Connect contents are brought up to date first (only what is new is downloaded)
    for warning in sync_sources(_sources(args)):
        print(f"warning: {warning}", file=sys.stderr)
    return TraceReader.open(_sources(args))


def cmd_export(args: argparse.Namespace) -> int:
    from trajectory_review.tools.export import export_csv, export_document

    reader = _open_reader(args)
    if args.format == "csv":
        sys.stdout.write(export_csv(reader, **_csv_hooks(reader, args)))
    else:
        json.dump(export_document(reader), sys.stdout, ensure_ascii=False, indent=1)
        sys.stdout.write("\n")
    _report_bad_lines(reader)
    return 0


def _csv_hooks(reader, args: argparse.Namespace) -> dict:  # noqa: ANN001
    hooks: dict = {}
    try:
        from trajectory_review.rules.qa import flagged_rule_names
        from trajectory_review.rules.registry import load_rules

        rules = load_rules(getattr(args, "rules", None))
        hooks["flagged_rules"] = lambda conv, ex: flagged_rule_names(ex, rules)
    except ImportError:
        pass
    try:
        from trajectory_review.reviews.log import ReviewLog, default_review_log

        log = ReviewLog(default_review_log(_sources(args)))
        state = log.state()
        hooks["review_status"] = lambda conv, ex: state.exchange_status(conv.id, ex.index)
    except ImportError:
        pass
    return hooks


def _report_bad_lines(reader) -> None:  # noqa: ANN001
    # the same list the app's warnings panel shows: every skipped line and file, by name
    for w in reader.source_warnings():
        if "content capture" not in w.message:
            print(f"warning: {w.message}", file=sys.stderr)


def cmd_generate(args: argparse.Namespace) -> int:
    from trajectory_review.tools.generate import generate

    counts = generate(args.outdir, conversations=args.conversations, seed=args.seed)
    print(
        f"wrote {counts['conversations']} conversations, {counts['spans']} spans in "
        f"{counts['files']} files to {args.outdir}",
        file=sys.stderr,
    )
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    import os

    import uvicorn

    from trajectory_review.sources import open_source, trace_files
    from trajectory_review.sources.files import FileSource

    srcs = _sources(args)
    # fail early, with one line, before the server starts (Connect contents are read by
    # the server itself, behind its progress page)
    files = [s for s in srcs or [] if isinstance(open_source(s), FileSource)]
    if files or not srcs:
        trace_files(files or None)
    if srcs:
        os.environ["TRAJECTORY_TRACES"] = os.pathsep.join(
            os.path.abspath(s) if isinstance(open_source(s), FileSource) else s for s in srcs
        )
    from trajectory_review.app.server import make_app

    print(f"serving on http://{args.host}:{args.port}", file=sys.stderr)
    uvicorn.run(make_app(), host=args.host, port=args.port, log_level="warning")
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    from trajectory_review.tools.bench import run_bench

    return run_bench(args)


def cmd_lint(args: argparse.Namespace) -> int:
    from trajectory_review.rules.qa import run_lint

    return run_lint(_open_reader(args), args.rules, args.json)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="trajectory-review", description="Play back recorded data-assistant conversations."
    )
    p.add_argument("--version", action="version", version=f"%(prog)s {package_version()}")
    sub = p.add_subparsers(dest="command", required=True)

    e = sub.add_parser("export", help="conversations, exchanges and decisions as JSON or CSV")
    e.add_argument("sources", nargs="*")
    e.add_argument("--format", choices=["json", "csv"], default="json")
    e.set_defaults(func=cmd_export)

    s = sub.add_parser("serve", help="the web app")
    s.add_argument("sources", nargs="*")
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--port", type=int, default=8000)
    s.set_defaults(func=cmd_serve)

    g = sub.add_parser("generate", help="realistic synthetic traces")
    g.add_argument("outdir")
    g.add_argument("--conversations", type=int, default=200)
    g.add_argument("--seed", type=int, default=7)
    g.set_defaults(func=cmd_generate)

    lint = sub.add_parser("lint", help="reply-rule report over every recorded answer")
    lint.add_argument("sources", nargs="*")
    lint.add_argument("--rules", default=None)
    lint.add_argument("--json", action="store_true")
    lint.set_defaults(func=cmd_lint)

    b = sub.add_parser("bench", help="the performance report (ratios against baselines)")
    b.add_argument("--json", action="store_true", help="print the figures as JSON")
    b.add_argument("--spans", type=int, default=1_000_000)
    b.add_argument("--big", type=int, default=100_000, help="conversations in the big index")
    b.add_argument("--small", type=int, default=1_000)
    b.add_argument("--text-mb", type=int, default=50)
    b.add_argument("--workdir", default="bench-data")
    b.set_defaults(func=cmd_bench)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    from trajectory_review.listing import summary

    # Our entry points guard their main script, so replay may use worker processes.
    summary.PARALLEL_SAFE = True
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except SourceError as exc:
        print(f"trajectory-review: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    except Exception as exc:  # one line for the user; TRAJECTORY_DEBUG=1 for the traceback
        if settings.debug():
            raise
        print(f"trajectory-review: {type(exc).__name__}: {exc}".splitlines()[0], file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
