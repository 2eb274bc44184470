"""Which files are read as trace lines, and every line that is not read, named by file
and line number with the reason (too long, not UTF-8, not JSON, not an envelope)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import duckdb

from trajectory_review.sources.files import whole_document

MAX_NAMED_LINES = 200  # how many skipped lines are named one by one (the rest are counted)


_REJECT_REASONS = {
    "LINE SIZE OVER MAXIMUM": "longer than {mb} MB (TRAJECTORY_MAX_LINE_MB)",
    "INVALID ENCODING": "not UTF-8",
    "INVALID UNICODE": "not UTF-8",
}


def name_bad_lines(
    con: duckdb.DuckDBPyConnection,
    rejected: list[tuple[Any, ...]],
    limit: int,
    shown: dict[str, str],
) -> tuple[str, ...]:
    """Every skipped line as "file:line: reason" (the first MAX_NAMED_LINES).

    DuckDB numbers the lines it rejects; for lines it read but found not to be JSON (or
    not an envelope) it keeps no number, so the few files holding such lines are read
    again to find them: by the byte length and digest of each skipped line (its
    `line_key`, "bytes:md5"), no parsing. (Not by its first characters: a torn line starts
    exactly like every whole line of its file.)"""
    out: dict[tuple[str, int], str] = {}
    for path, line, kind in rejected:
        reason = _REJECT_REASONS.get(str(kind), str(kind).lower())
        out[(str(path), int(line))] = reason.format(mb=limit // (1024 * 1024))
    heads = con.execute(
        "SELECT filename, problem, list(DISTINCT line_key) FROM spans "
        "WHERE line_start AND bad GROUP BY ALL ORDER BY ALL"
    ).fetchall()
    for filename, problem, wanted in heads:
        for n in _find_lines(filename, wanted):
            out[(filename, n)] = problem
            if len(out) >= MAX_NAMED_LINES:
                break
    ordered = sorted(out.items())[:MAX_NAMED_LINES]
    return tuple(f"{shown.get(name, name)}:{n}: {why}, skipped" for (name, n), why in ordered)


def _find_lines(filename: str, keys: list[str]) -> list[int]:
    """The numbers of the lines whose "bytes:md5" key is among `keys`. Only lines of a
    wanted length are digested, not every line with and without a carriage return
    (docs/performance-log.md, "naming torn lines")."""
    import gzip
    import hashlib

    digests: dict[int, set[str]] = {}
    for key in keys:
        size, _, digest = key.partition(":")
        digests.setdefault(int(size), set()).add(digest)
    found = []
    try:
        opener = gzip.open if filename.endswith(".gz") else open
        with opener(filename, "rb") as fh:
            for n, raw in enumerate(fh, start=1):
                line = raw.rstrip(b"\n")
                # read as DuckDB did: with or without a carriage return before the newline
                for text in (line, line.rstrip(b"\r")) if line.endswith(b"\r") else (line,):
                    wanted = digests.get(len(text))
                    if wanted and hashlib.md5(text, usedforsecurity=False).hexdigest() in wanted:
                        found.append(n)
                        break
                if len(found) >= MAX_NAMED_LINES:
                    break
    except (OSError, EOFError):
        pass  # the file went away or is cut: its lines were counted, not named
    return found


def merged(*lists: Sequence[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(x for items in lists for x in items))


def line_files(
    files: Sequence[Path], scratch: Path, skipped: list[str]
) -> tuple[list[str], dict[str, str]]:
    """The files DuckDB reads as JSON lines, and the name to show for each.

    A whole-file OTLP document (pretty-printed over many lines) is valid OTLP/JSON: it is
    rewritten as one line in `scratch` and read from there. A file that is JSON but not
    OTLP traces is left out and named with the reason, never counted as N bad lines."""
    names: list[str] = []
    shown: dict[str, str] = {}
    for i, f in enumerate(files):
        line, why = whole_document(f)
        if why is not None:
            skipped.append(f"{f}: {why}, skipped")
        elif line is not None:
            copy = scratch / f"document-{i}.jsonl"
            copy.write_bytes(line + b"\n")
            names.append(str(copy))
            shown[str(copy)] = str(f)
        else:
            names.append(str(f))
    return names, shown
