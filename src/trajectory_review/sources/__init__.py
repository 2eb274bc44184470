"""Where spans come from: files and folders, Posit Connect contents (a registry of kinds).

Callers name sources as strings (the command line, TRAJECTORY_TRACES); `open_source`
picks the kind that handles each. Nothing downstream knows where spans came from.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from importlib import import_module
from pathlib import Path

from trajectory_review import settings
from trajectory_review.sources.base import Progress, SourceError, TraceSource
from trajectory_review.sources.files import DEFAULT_SOURCE, FileSource
from trajectory_review.sources.locations import is_clickhouse, is_connect

# Tried in order: whether the kind takes a location (told from its text), and its module
# and class, imported only for a location it takes (sources/locations.py says why). Any
# other location is a path: files.
KINDS: tuple[tuple[Callable[[object], bool], str, str], ...] = (
    (is_clickhouse, "trajectory_review.sources.clickhouse", "ClickHouseSource"),
    (is_connect, "trajectory_review.sources.connect", "ConnectSource"),
)

__all__ = ["SourceError", "TraceSource", "default_sources", "open_source", "sync_sources",
           "shown", "trace_files"]  # fmt: skip


def open_source(location: str | os.PathLike[str]) -> TraceSource:
    for takes, module, name in KINDS:
        if takes(location):
            source: TraceSource | None = getattr(import_module(module), name).open(location)
            if source is not None:
                return source
    return FileSource.open(location)


def shown(location: str) -> str:
    """A source as it may be shown or logged: a ClickHouse URL without its password."""
    if is_clickhouse(location):
        from trajectory_review.sources.clickhouse import parse_location

        try:
            return parse_location(location).shown
        except SourceError:
            return location.split("@")[-1]
    return location


def default_sources() -> list[str]:
    """TRAJECTORY_TRACES, else the file exporter's folder, else the folder commons writes
    to (COMMONS_TRACES_DIR, a commons team's setting already), else ./traces."""
    env = settings.traces()
    if env:
        return split_sources(env)
    exporter = settings.exporter_file()
    if exporter:
        return [str(Path(exporter).parent)]
    commons = settings.commons_traces_dir()
    if commons:
        return [commons]
    return [DEFAULT_SOURCE]


def split_sources(value: str) -> list[str]:
    """A `:`-separated list of sources, where `connect:<guid>` keeps its own colon and a
    ClickHouse URL (read alone, and full of colons) is the whole value."""
    if is_clickhouse(value.strip()):
        return [value.strip()]
    out: list[str] = []
    pieces = value.split(os.pathsep)
    i = 0
    while i < len(pieces):
        piece = pieces[i]
        if piece == "connect" and i + 1 < len(pieces):
            piece = f"connect:{pieces[i + 1]}"
            i += 1
            # a content URL (connect:https://host[:port]/content/<guid>/) keeps its colons
            if pieces[i] in ("http", "https") and i + 1 < len(pieces):
                piece += f":{pieces[i + 1]}"
                i += 1
                nxt = pieces[i + 1] if i + 1 < len(pieces) else ""
                if nxt[:1].isdigit() and nxt.split("/", 1)[0].isdigit():
                    piece += f":{nxt}"
                    i += 1
        if piece:
            out.append(piece)
        i += 1
    return out


def sync_sources(
    sources: Sequence[str | os.PathLike[str]] | None = None, progress: Progress | None = None
) -> list[str]:
    """Bring every remote source's local copy up to date; one-line warnings."""
    warnings: list[str] = []
    for location in list(sources) if sources else default_sources():
        warnings.extend(open_source(location).sync(progress))
    return warnings


def trace_files(
    sources: Sequence[str | os.PathLike[str]] | None = None, skipped: list[str] | None = None
) -> list[Path]:
    """Every trace file named by the sources, each once (files that cannot be opened are
    left out and named in `skipped`).

    Once by what it holds, not by its name: `trace-latest.jsonl` is a hard link to the
    newest rotated file (the same inode), and a checkout or a copy makes it a file of the
    same bytes. Read under both names, every bad line of it was a warning twice (the
    shipped traces opened with "12 warnings"). The first name in order is kept."""
    problems: list[str] = []
    files: list[Path] = []
    for location in list(sources) if sources else default_sources():
        files.extend(open_source(location).files(problems))
    if skipped is not None:
        skipped.extend(problems)
    seen: set[object] = set()
    sizes: dict[int, list[Path]] = {}
    unique = []
    for f in files:
        try:
            st = f.stat()
        except OSError:
            unique.append(f)  # the reader names what is wrong with it
            continue
        if (st.st_dev, st.st_ino) in seen:
            continue
        seen.add((st.st_dev, st.st_ino))
        if any(_same_bytes(f, other) for other in sizes.get(st.st_size, [])):
            continue
        sizes.setdefault(st.st_size, []).append(f)
        unique.append(f)
    return unique


def _same_bytes(a: Path, b: Path) -> bool:
    """Two files of one size hold the same bytes (read in blocks, stopping at the first
    difference; only files of equal size are ever compared)."""
    try:
        with open(a, "rb") as fa, open(b, "rb") as fb:
            while True:
                x, y = fa.read(1 << 20), fb.read(1 << 20)
                if x != y:
                    return False
                if not x:
                    return True
    except OSError:
        return False
