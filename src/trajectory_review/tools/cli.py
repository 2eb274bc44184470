"""The command line: the same reading and replay code as the app, never a second copy.

Long on purpose: every command's options and entry points, as --help lists them."""

from __future__ import annotations

import argparse
import atexit
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from trajectory_review import settings
from trajectory_review.sources import SourceError
from trajectory_review.support.errors import one_line

if TYPE_CHECKING:  # the commands import what they use when they run (a fast --help)
    from trajectory_review.model.reader import TraceReader
    from trajectory_review.reviews.store import ReviewStore

# One exit-status contract for every command (README, Command line; every --help).
EXIT_DONE, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
# a failure's line on stderr: long enough for a source's whole message (a path, a URL)
CLI_LINE = 2_000
EXIT_STATUS = (
    "exit status: 0 done; 1 findings (lint: an answer the gate would withhold, or what "
    "--fail-on names); 2 a usage, configuration or source error (one line on stderr)"
)


def package_version() -> str:
    try:
        from importlib.metadata import version

        return version("trajectory-review")
    except Exception:
        from trajectory_review import __version__

        return __version__


def _sources(args: argparse.Namespace) -> list[str] | None:
    return list(args.sources) or None


def _rules_path(args: argparse.Namespace) -> str | None:
    """--rules, else TRAJECTORY_RULES, else the shipped profile (None): the same rules the
    app uses, for lint and the CSV alike."""
    return getattr(args, "rules", None) or settings.rules_file() or None


def _review_store(args: argparse.Namespace) -> ReviewStore:
    """--review-log, else TRAJECTORY_REVIEW_LOG, else the file beside the traces: a store
    of a known kind, or StoreConfigError / SourceError before anything is written."""
    from trajectory_review.reviews.store import default_store, open_store

    given = getattr(args, "review_log", None)
    return open_store(given) if given else default_store(_sources(args))


def _open_reader(args: argparse.Namespace) -> TraceReader:
    from trajectory_review.model import startup
    from trajectory_review.sources import sync_sources

    # Connect contents are brought up to date first (only what is new is downloaded)
    for warning in sync_sources(_sources(args)):
        print(f"warning: {warning}", file=sys.stderr)
    return startup.open_reader(_sources(args), since=getattr(args, "since", None))


def cmd_export(args: argparse.Namespace) -> int:
    from trajectory_review.listing.export import (
        export_csv,
        export_document,
        write_jsonl,
        write_reviewed,
    )

    reader = _open_reader(args)
    if args.reviewed:
        from trajectory_review.rules.registry import load_rules

        log = _review_store(args)
        state = log.state()
        if state.error:
            raise SourceError(state.error)
        n = write_reviewed(reader, state, load_rules(_rules_path(args)), sys.stdout)
        print(f"{n} reviewed answer(s) from {log.shown}", file=sys.stderr)
    elif args.format == "csv":
        sys.stdout.write(export_csv(reader, **_csv_hooks(reader, args)))
    elif args.format == "jsonl":
        write_jsonl(reader, sys.stdout)
    else:
        json.dump(export_document(reader), sys.stdout, ensure_ascii=False, indent=1)
        sys.stdout.write("\n")
    _report_bad_lines(reader)
    return 0


def _csv_hooks(reader: TraceReader, args: argparse.Namespace) -> dict[str, Any]:
    """The CSV's rule and review columns: the rules in force, and the review store's state."""
    from trajectory_review.rules.registry import load_rules

    state = _review_store(args).state()
    return {
        "rules": load_rules(_rules_path(args)),
        "review_status": lambda conv, ex: state.exchange_status(conv.id, ex.index),
    }


def _report_bad_lines(reader: TraceReader) -> None:
    # the same list the app's warnings panel shows: every skipped line and file, by name
    for w in reader.source_warnings():
        if "content capture" not in w.message:
            print(f"warning: {w.message}", file=sys.stderr)


def cmd_serve(args: argparse.Namespace) -> int:
    from trajectory_review.model import startup as early
    from trajectory_review.sources import open_source
    from trajectory_review.sources.files import FileSource

    srcs = _sources(args)
    if srcs:
        os.environ["TRAJECTORY_TRACES"] = os.pathsep.join(
            os.path.abspath(s) if isinstance(open_source(s), FileSource) else s for s in srcs
        )
    # The index is built while the rest is imported (model/startup.py), started before
    # anything the build does not need (the checks below import the ClickHouse modules).
    early.start()
    try:
        _check_serve_sources(args, srcs)
        # where reviews go is settled before anything serves (or writes): a URL of an
        # unknown kind or a source that cannot be parsed stops here, in one line
        review_store = _review_store(args)
    except BaseException:
        early.stop()  # Python exiting while the build is inside DuckDB aborts
        raise
    if args.since:
        os.environ["TRAJECTORY_SINCE"] = args.since
    if args.rules:
        os.environ["TRAJECTORY_RULES"] = os.path.abspath(args.rules)
    if args.review_log:
        os.environ["TRAJECTORY_REVIEW_LOG"] = (
            os.path.abspath(args.review_log) if review_store.kind == "file" else args.review_log
        )
    import uvicorn

    from trajectory_review.app.server import make_app
    from trajectory_review.sources import default_sources, shown

    cache = settings.cache_dir()
    for name, value in (
        ("sources", " ".join(shown(s) for s in default_sources())),
        ("review log", review_store.shown),
        ("rules", settings.rules_file() or "the shipped default profile"),
        ("cache", cache if cache is not None else "off"),
    ):
        print(f"{name}: {value}", file=sys.stderr)
    from trajectory_review.reviews.store import lost_on_redeploy

    if (lost := lost_on_redeploy(review_store)) is not None:
        print(f"warning: {lost}", file=sys.stderr)
    print(f"serving on http://{args.host}:{args.port}", file=sys.stderr)
    if args.host not in ("127.0.0.1", "localhost", "::1") and not settings.allowed_hosts():
        # app/guard.py answers loopback names, this machine's names and addresses only
        print(
            "note: a proxy or another name in front of the app needs it in "
            "TRAJECTORY_ALLOWED_HOSTS (README, Security)",
            file=sys.stderr,
        )
    uvicorn.run(make_app(), host=args.host, port=args.port, log_level="warning")
    _leave_at_once(0)


def _leave_at_once(code: int) -> NoReturn:
    """End a process whose work is done without Python's teardown of its objects: a
    server that has shut down (the loader stopped, builds interrupted, every review
    written when it was saved) or a command that has written its output (run). The
    teardown only frees objects, in an order of its own, and a thread still holding
    DuckDB's had them reported as leaked: dozens of lines of "nanobind: leaked …" after
    a clean Ctrl-C on a loaded machine. The exit handlers still run: temporary folders
    removed, worker processes ended."""
    sys.stdout.flush()
    sys.stderr.flush()
    atexit._run_exitfuncs()
    os._exit(code)


def _check_serve_sources(args: argparse.Namespace, srcs: list[str] | None) -> None:
    """Fail early, with one line, before the server starts (Connect contents and ClickHouse
    tables are read by the server itself, behind its progress page)."""
    from trajectory_review.index.clickhouse import since_ns
    from trajectory_review.sources import open_source, trace_files
    from trajectory_review.sources.clickhouse import parse_location
    from trajectory_review.sources.connect_api import content_guid
    from trajectory_review.sources.files import FileSource
    from trajectory_review.sources.locations import is_clickhouse, is_connect

    for source in srcs or []:
        if is_connect(source):
            content_guid(source)  # `connect:../../x` stops here, before any file is named
    stores = [s for s in srcs or [] if is_clickhouse(s)]
    for store in stores:
        parse_location(store)
    if stores and len(srcs or []) > 1:
        raise SourceError("a ClickHouse source is read in place and alone; name it alone")
    files = [s for s in srcs or [] if isinstance(open_source(s), FileSource)]
    if (files or not srcs) and not stores:
        trace_files(files or None)
    if args.since:
        since_ns(args.since)  # a window that cannot be read stops here, in one line


def cmd_reviews_copy(args: argparse.Namespace) -> int:
    from trajectory_review.reviews.store import copy_events, open_store

    source, target = open_store(args.source), open_store(args.target)
    copied, there = copy_events(source, target)
    print(
        f"copied {copied:,} review event(s) from {source.shown} to {target.shown}"
        + (f" ({there:,} already there)" if there else ""),
        file=sys.stderr,
    )
    return 0


def cmd_load(args: argparse.Namespace) -> int:
    import time

    from trajectory_review.sources import shown
    from trajectory_review.tools.load import load

    began = time.monotonic()
    stats = load(args.sources, args.destination)
    for warning in stats.warnings[:50]:
        print(f"warning: {warning}", file=sys.stderr)
    if len(stats.warnings) > 50:
        print(f"warning: {len(stats.warnings) - 50} more not shown", file=sys.stderr)
    print(
        f"loaded {stats.spans:,} spans from {stats.files} file(s) into "
        f"{shown(args.destination)} in {time.monotonic() - began:.1f} s"
        + (f" ({stats.bad_lines} line(s) skipped)" if stats.bad_lines else ""),
        file=sys.stderr,
    )
    return 0


def cmd_lint(args: argparse.Namespace) -> int:
    from trajectory_review.model import startup as early
    from trajectory_review.support import isolated

    # the index is built while the rules are imported and the workers start (the fork
    # server, or what-if's own for --compare), not after them (model/startup.py); both
    # stream every conversation and open none, so it is built without the lookups an
    # open reads through
    early.start(_sources(args), share_cores=False, lookups=False)
    try:
        if args.compare is not None:
            from trajectory_review.rules.whatif import whatif_batch, whatif_workers

            isolated.start(whatif_workers(), whatif_batch.__module__)
            return _compare(args)
        from trajectory_review.rules.qa import lint_batch, run_lint
        from trajectory_review.support.workers import start_server

        start_server(lint_batch)
        return run_lint(_open_reader(args), _rules_path(args), args.json, args.fail_on)
    finally:
        early.stop()  # a build not taken (an error before it, Ctrl-C): out of DuckDB
        isolated.drop_started()  # what-if's, when the comparison failed before its run


def _compare(args: argparse.Namespace) -> int:
    """`lint --rules NEW --compare [OLD]`: the candidate against the profile in force (or
    OLD), scored against the review log's verdicts (rules/whatif.py)."""
    from trajectory_review.rules.whatif import run_whatif

    if not args.rules:
        raise SourceError("--compare needs the candidate profile in --rules")
    old = args.compare or settings.rules_file() or None
    state = _review_store(args).state()
    return run_whatif(_open_reader(args), args.rules, old, state, args.json, args.fail_on)


# The benchmark and the trace generator come with a checkout of the project, not with the
# package: they live in benchmarks/ (a distribution of their own that `make` installs and
# registers here by entry point), so the wheel and the Connect bundle never carry code
# nobody runs there.
CHECKOUT_COMMANDS = {"bench": "the performance report", "generate": "synthetic traces"}
COMMANDS_GROUP = "trajectory_review.commands"


def add_checkout_commands(sub: argparse._SubParsersAction[Any], fmt: type) -> None:
    from importlib.metadata import entry_points

    found = set()
    for entry in entry_points(group=COMMANDS_GROUP):
        entry.load()(sub, fmt)
        found.add(entry.name)
    for name, what in CHECKOUT_COMMANDS.items():
        if name not in found:
            # no option prefix a command line can hold: `bench --yes` reaches the one-line
            # message below instead of argparse's usage error about `--yes`
            c = sub.add_parser(
                name, help=f"{what} (with a checkout of the project)", prefix_chars="\0",
                add_help=False,
            )  # fmt: skip
            c.add_argument("rest", nargs="*")
            c.set_defaults(func=_from_a_checkout(name))


def _from_a_checkout(name: str) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        print(
            f"trajectory-review: {name} comes with a checkout of the project (its "
            f"benchmarks/ folder, installed by `make setup`); this installation has the "
            f"reviewer only",
            file=sys.stderr,
        )
        return EXIT_ERROR

    return run


# Long on purpose: every command's options in one place, as --help lists them.
def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    fmt = argparse.ArgumentDefaultsHelpFormatter
    p = argparse.ArgumentParser(
        prog="trajectory-review",
        description="Play back recorded data-assistant conversations.",
        formatter_class=fmt,
        epilog=EXIT_STATUS,
    )
    p.add_argument("--version", action="version", version=f"%(prog)s {package_version()}")
    sub = p.add_subparsers(dest="command", required=True)
    sources_help = (
        "trace files, folders, connect:<content-guid>, or one clickhouse://… or chdb://DIR "
        "(default: TRAJECTORY_TRACES, else "
        "the folder of OTEL_EXPORTER_OTLP_TRACES_FILE, else ./traces)"
    )
    since_help = (
        "only conversations active in this window: 30d, 12h, 2w or a date "
        "(default: TRAJECTORY_SINCE, else all); for large ClickHouse stores"
    )
    rules_help = "reply-rule profile (TOML) (default: TRAJECTORY_RULES, else the shipped one)"
    log_help = "the review log (default: TRAJECTORY_REVIEW_LOG, else beside the traces)"

    e = sub.add_parser(
        "export", help="conversations, exchanges and decisions as JSON or CSV", formatter_class=fmt
    )
    e.add_argument("sources", nargs="*", help=sources_help)
    e.add_argument(
        "--format",
        choices=["json", "jsonl", "csv"],
        default="json",
        help="one JSON document, JSON lines (streamed), or one CSV row per answer",
    )
    e.add_argument(
        "--reviewed",
        action="store_true",
        help="only answers with review events, as the reviewed@1 dataset (JSON lines)",
    )
    e.add_argument("--rules", default=None, help=rules_help + "; flags the CSV's rule column")
    e.add_argument("--review-log", default=None, help=log_help + "; the CSV's review column")
    e.add_argument("--since", default=None, help=since_help)
    e.set_defaults(func=cmd_export, ends_at_once=True)

    s = sub.add_parser("serve", help="the web app", formatter_class=fmt)
    s.add_argument("sources", nargs="*", help=sources_help)
    s.add_argument("--host", default="127.0.0.1", help="address to listen on")
    s.add_argument("--port", type=int, default=8000, help="port to listen on")
    s.add_argument("--rules", default=None, help=rules_help)
    s.add_argument("--review-log", default=None, help=log_help)
    s.add_argument("--since", default=None, help=since_help)
    s.set_defaults(func=cmd_serve)

    lint = sub.add_parser(
        "lint", help="reply-rule report over every recorded answer", formatter_class=fmt
    )
    lint.add_argument("sources", nargs="*", help=sources_help)
    lint.add_argument("--rules", default=None, help=rules_help)
    lint.add_argument("--json", action="store_true", help="the lint@1 JSON report")
    lint.add_argument(
        "--compare",
        nargs="?",
        const="",
        default=None,
        metavar="OLD",
        help="what if: the --rules profile against OLD (default: the profile in force: "
        "TRAJECTORY_RULES, else the shipped one), answer by answer, scored against the "
        "review log's verdicts (--json: whatif@1)",
    )
    lint.add_argument(
        "--review-log", default=None, help=log_help + "; the verdicts --compare scores against"
    )
    lint.add_argument("--since", default=None, help=since_help)
    lint.add_argument(
        "--fail-on",
        choices=["gate", "metric", "never"],
        default="gate",
        help="exit 1 when an answer would be withheld (gate), fails any rule (metric), or never",
    )
    lint.set_defaults(func=cmd_lint, ends_at_once=True)

    ld = sub.add_parser(
        "load",
        help="put OTLP trace files into ClickHouse's otel_traces (the Collector's table)",
        formatter_class=fmt,
    )
    ld.add_argument("sources", nargs="+", help="trace files or folders")
    ld.add_argument("destination", help="chdb://DIR[?database=…] or clickhouse://host/database")
    ld.set_defaults(func=cmd_load)

    rv = sub.add_parser("reviews", help="the review store", formatter_class=fmt)
    rv_sub = rv.add_subparsers(dest="reviews_command", required=True)
    cp = rv_sub.add_parser(
        "copy",
        help="every review event from one store to another (a file or postgresql://…); "
        "ids, authors and times kept, and a second copy adds nothing",
        formatter_class=fmt,
    )
    cp.add_argument("source", help="the store to read (a file path or postgresql://…)")
    cp.add_argument("target", help="the store to add to (a file path or postgresql://…)")
    cp.set_defaults(func=cmd_reviews_copy)

    # entry points only when the command is none of the above: the lookup reads every
    # installed distribution, on the path of every `serve` and `lint` (performance-log, #37)
    wanted = next((a for a in (argv or ()) if not a.startswith("-")), None)
    if wanted not in sub.choices:
        add_checkout_commands(sub, fmt)
    for command in sub.choices.values():
        command.epilog = EXIT_STATUS
    return p


def run() -> NoReturn:
    """The command line as a process runs it (`trajectory-review`, `python -m
    trajectory_review`): main, then the end of the process. A command that only writes
    its output (`ends_at_once`: lint, export) leaves its index for the process's end to
    free instead of closing it (index.database.leave_to_the_os), and ends without
    Python's teardown (_leave_at_once): both freed memory the process's end frees at
    once (docs/performance-log.md, "Seventh session of #50")."""
    raise SystemExit(main(at_once=True))


def main(argv: Sequence[str] | None = None, *, at_once: bool = False) -> int:
    """The command line; `at_once` (run only): a command that ends at once ends the
    process, which a caller of main in its own process (the tests) must not have."""
    from trajectory_review.support import workers

    # Our entry points guard their main script, so replay may use worker processes.
    workers.PARALLEL_SAFE = True
    workers.MAIN_MODULE = __name__
    from trajectory_review.reviews.log import ReviewLogError, StoreConfigError
    from trajectory_review.rules.registry import RulesError

    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser(argv).parse_args(argv)
    ends_at_once = at_once and getattr(args, "ends_at_once", False)
    if ends_at_once:
        from trajectory_review.index.database import leave_to_the_os

        leave_to_the_os()
    try:
        code = int(args.func(args) or 0)
        if ends_at_once:
            _leave_at_once(code)
        return code
    except (SourceError, RulesError, StoreConfigError, ReviewLogError) as exc:
        # a source, a profile or a review store that cannot be used
        print(f"trajectory-review: {one_line(exc, CLI_LINE)}", file=sys.stderr)
        return EXIT_ERROR
    except BrokenPipeError:
        return EXIT_DONE
    except Exception as exc:  # one line for the user; TRAJECTORY_DEBUG=1 for the traceback
        if settings.debug():
            raise
        print(f"trajectory-review: {one_line(exc, CLI_LINE)}", file=sys.stderr)
        # never 1: a script reads 1 as "the rules found something"
        return EXIT_ERROR


if __name__ == "__main__":
    run()
