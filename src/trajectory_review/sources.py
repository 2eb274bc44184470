"""Where spans come from: trace files on disk today.

A source is a file or a directory (read recursively). Other back ends (the Connect API,
object storage, ClickHouse) plug in here by producing the same list of files or lines;
nothing downstream knows where spans came from.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

TRACE_SUFFIXES = (".jsonl", ".json", ".jsonl.gz", ".json.gz")
DEFAULT_SOURCE = "traces"


class SourceError(Exception):
    """A source that cannot be read at all. Its message is one line, fit for a user."""


def default_sources() -> list[str]:
    env = os.environ.get("TRAJECTORY_TRACES")
    if env:
        return [p for p in env.split(os.pathsep) if p]
    return [DEFAULT_SOURCE]


def is_trace_file(path: Path) -> bool:
    name = path.name.lower()
    return name.endswith(TRACE_SUFFIXES)


def trace_files(
    sources: Sequence[str | os.PathLike[str]] | None = None, skipped: list[str] | None = None
) -> list[Path]:
    """Every trace file named by the sources, sorted, each once.

    `trace-latest.jsonl` is a hard link to a rotated file: both are listed (the reader
    deduplicates spans by id), because a hard link cannot be told from its target.
    A file that cannot be opened (a symlink loop, a dangling link, no permission) is left
    out and named in `skipped`; only a source with nothing readable at all is an error.
    """
    given = list(sources) if sources else default_sources()
    files: list[Path] = []
    problems: list[str] = []
    for src in given:
        path = Path(src)
        if not path.exists():
            raise SourceError(f"trace source not found: {path}")
        if path.is_file():
            files.append(path)
            continue
        listed = sorted(p for p in _walk(path) if is_trace_file(p))
        if not listed:
            raise SourceError(f"no trace files (*.jsonl, *.json, .gz) under {path}")
        found = []
        for p in listed:
            problem = _unreadable(p)
            if problem:
                problems.append(f"{p}: {problem}, skipped")
            else:
                found.append(p)
        if not found:
            raise SourceError(f"no readable trace file under {path}: {problems[-1]}")
        if all(_empty(p) for p in found):
            raise SourceError(f"only empty trace files under {path} ({len(found)} of them)")
        files.extend(found)
    if skipped is not None:
        skipped.extend(problems)
    seen: set[Path] = set()
    unique = []
    for f in files:
        key = f.resolve()
        if key not in seen:
            seen.add(key)
            unique.append(f)
    return unique


def _unreadable(path: Path) -> str | None:
    """Why a listed file cannot be read, or None. `resolve()` raises RuntimeError on a
    symlink loop, which used to abort the whole load."""
    try:
        path.resolve(strict=True)
    except RuntimeError:
        return "symlink loop"
    except FileNotFoundError:
        return "dangling link"
    except OSError as exc:
        return exc.strerror or "cannot be opened"
    if not path.is_file():
        return "not a regular file"
    if not os.access(path, os.R_OK):
        return "permission denied"
    return None


def _empty(path: Path) -> bool:
    try:
        return path.stat().st_size == 0
    except OSError:
        return False


def _walk(root: Path) -> Iterable[Path]:
    for dirpath, _dirs, names in os.walk(root):
        for name in names:
            yield Path(dirpath) / name
