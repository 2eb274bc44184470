"""Where spans come from: trace files on disk today.

A source is a file or a directory (read recursively). Other back ends (the Connect API,
object storage, ClickHouse) plug in here by producing the same list of files or lines;
nothing downstream knows where spans came from.
"""

from __future__ import annotations

import gzip
import io
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from trajectory_review import settings
from trajectory_review.sources.base import Progress, SourceError

TRACE_SUFFIXES = (".jsonl", ".ndjson", ".json", ".jsonl.gz", ".ndjson.gz", ".json.gz")
DEFAULT_SOURCE = "traces"
# The OpenTelemetry file exporter's path, possibly a template with %N for the rotation
# number (`/data/traces/spans-%N.ndjson`). As in commons: with no source given, traces are
# read from its folder, and files named from the template count whatever their extension.
EXPORTER_FILE = "OTEL_EXPORTER_OTLP_TRACES_FILE"


def _template() -> re.Pattern[str] | None:
    name = Path(settings.exporter_file()).name
    if not name:
        return None
    # escaped literally, %N as digits: linear, and nothing in the name is a pattern
    return re.compile("".join("[0-9]+" if p == "%N" else re.escape(p) for p in _split_n(name)))


def _split_n(name: str) -> list[str]:
    out: list[str] = []
    for i, piece in enumerate(name.split("%N")):
        if i:
            out.append("%N")
        out.append(piece)
    return out


# The trace files as they stand: (path, size, modification time) each, a stat apiece and
# nothing read. What the index's cache is keyed by, what an early index build is checked
# against, and what the server watches for new traces: one snapshot for all three.
Snapshot = tuple[tuple[str, int, int], ...]


def snapshot(files: Iterable[Path]) -> Snapshot:
    """The files' snapshot, in path order (OSError when one is gone meanwhile)."""
    return tuple(
        sorted((str(f.resolve()), st.st_size, st.st_mtime_ns) for f in files for st in [f.stat()])
    )


def is_trace_file(path: Path) -> bool:
    name = path.name.lower()
    if name.endswith(TRACE_SUFFIXES):
        return True
    template = _template()
    return template is not None and template.fullmatch(path.name) is not None


@dataclass(frozen=True)
class FileSource:
    """A trace file, or a directory read recursively for trace files."""

    location: str

    @classmethod
    def open(cls, location: str | os.PathLike[str]) -> FileSource:
        return cls(str(location))

    def sync(self, progress: Progress | None = None) -> list[str]:
        return []  # local files are read as they are

    def files(self, skipped: list[str]) -> list[Path]:
        path = Path(self.location)
        if not path.exists():
            raise SourceError(f"trace source not found: {path}")
        if path.is_file():
            return [path]
        listed = sorted(p for p in _walk(path) if is_trace_file(p))
        if not listed:
            raise SourceError(f"no trace files (*.jsonl, *.ndjson, *.json, .gz) under {path}")
        found = []
        for p in listed:
            problem = _unreadable(p)
            if problem:
                skipped.append(f"{p}: {problem}, skipped")
            else:
                found.append(p)
        if not found:
            raise SourceError(f"no readable trace file under {path}: {skipped[-1]}")
        if all(_empty(p) for p in found):
            raise SourceError(f"only empty trace files under {path} ({len(found)} of them)")
        return found


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


# -- whole-file documents -------------------------------------------------------------------

# A pretty-printed OTLP document (one TracesData over many lines) is read whole up to
# this size; DuckDB's line reader would see every line of it as "not JSON".
MAX_DOCUMENT_BYTES = 256 * 1024 * 1024


def _open(path: Path) -> gzip.GzipFile | io.BufferedReader:
    return gzip.open(path, "rb") if path.name.lower().endswith(".gz") else open(path, "rb")


def _first_line(path: Path, limit: int = 1 << 20) -> bytes | None:
    """The first non-blank line, or None for a blank file or a first line longer than
    `limit` (one long line is JSON lines, never a pretty-printed document)."""
    try:
        with _open(path) as fh:
            while True:
                raw = fh.readline(limit + 1)
                if not raw:
                    return None
                if len(raw) > limit:
                    return None
                if raw.strip():
                    return bytes(raw)
    except (OSError, EOFError):
        return None


def whole_document(path: Path) -> tuple[bytes | None, str | None]:
    """For a file that is not JSON lines: (its spans as one OTLP/JSON line, None) when it
    is a whole-file TracesData document, (None, why) when it is JSON but not OTLP traces,
    (None, None) when it reads as lines (or cannot be told: the line reader reports it)."""
    import orjson

    first = _first_line(path)
    if first is None:
        return None, None
    try:
        orjson.loads(first)
        return None, None  # the first line is a JSON value: JSON lines
    except orjson.JSONDecodeError:
        pass
    try:
        if path.stat().st_size > MAX_DOCUMENT_BYTES:
            return None, None
        with _open(path) as fh:
            value = orjson.loads(fh.read(MAX_DOCUMENT_BYTES + 1))
    except (OSError, EOFError, orjson.JSONDecodeError):
        return None, None  # not one JSON document either: lines, some of them bad
    if isinstance(value, dict) and isinstance(value.get("resourceSpans"), list):
        return orjson.dumps(value), None
    return None, not_otlp_reason(value)


def not_otlp_reason(value: object) -> str:
    if isinstance(value, dict) and "resource_spans" in value:
        return (
            "JSON but not OTLP/JSON: snake_case resource_spans (a protobuf dump?); "
            "OTLP/JSON writes resourceSpans"
        )
    if isinstance(value, dict):
        keys = ", ".join(sorted(str(k) for k in value)[:5])
        return f"JSON but not OTLP/JSON lines (no resourceSpans; keys: {keys})"
    return f"JSON but not OTLP/JSON lines (a {type(value).__name__}, not an object)"


# gzip files are counted at a typical compression of trace lines
GZIP_RATIO = 8


def trace_bytes(files: Sequence[Path]) -> int:
    """About how many bytes of trace lines these files hold (to size work ahead)."""
    total = 0
    for f in files:
        try:
            size = f.stat().st_size
        except OSError:
            continue  # gone: whoever reads it names it
        total += size * GZIP_RATIO if f.name.endswith(".gz") else size
    return total
