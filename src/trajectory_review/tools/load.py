"""`trajectory-review load SOURCE DEST`: OTLP/JSON trace files into ClickHouse's
`otel_traces`, as the OpenTelemetry Collector's ClickHouse exporter would write them (its
DDL, its flattening of attributes). For demos, tests and teams that start from files; in
production the Collector does this."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from trajectory_review.sources import SourceError, trace_files
from trajectory_review.sources.clickhouse import (
    ClickHouseLocation,
    client,
    explain,
    parse_location,
)
from trajectory_review.sources.clickhouse_spans import COLLECTOR_DDL, INSERT_COLUMNS, span_row
from trajectory_review.sources.files import _open, whole_document
from trajectory_review.sources.locations import is_clickhouse

BATCH_ROWS = 2_000  # rows per INSERT: chat spans carry whole histories


@dataclass
class LoadStats:
    files: int = 0
    spans: int = 0
    bad_lines: int = 0
    warnings: list[str] = field(default_factory=list)


def create_tables(loc: ClickHouseLocation, cli: Any) -> None:
    """The database and the Collector's tables, unless they exist."""
    try:
        cli.command(f"CREATE DATABASE IF NOT EXISTS `{loc.database}`")
        for ddl in COLLECTOR_DDL:
            cli.command(ddl.format(db=f"`{loc.database}`", table=loc.table))
    except Exception as exc:
        raise SourceError(f"{loc.shown}: cannot create {loc.table}: {explain(exc, loc)}") from None


def load(
    sources: Sequence[str],
    destination: str,
    progress: Callable[[int], None] | None = None,
) -> LoadStats:
    """Every span of the sources' trace files into the destination's spans table."""
    if not is_clickhouse(destination):
        raise SourceError(f"not a ClickHouse destination: {destination} (chdb://DIR or "
                          "clickhouse://host/database)")  # fmt: skip
    if any(is_clickhouse(s) for s in sources):
        raise SourceError("load reads trace files or folders; the destination is ClickHouse")
    loc = parse_location(destination)
    cli = client(loc, create=True)
    create_tables(loc, cli)
    stats = LoadStats()
    skipped: list[str] = []
    files = trace_files(list(sources), skipped)
    stats.warnings.extend(skipped)
    target = f"{loc.database}.{loc.table}"
    batch: list[list[Any]] = []

    def flush() -> None:
        if not batch:
            return
        try:
            cli.insert(target, batch, column_names=INSERT_COLUMNS)
        except Exception as exc:
            raise SourceError(f"{loc.shown}: insert failed: {explain(exc, loc)}") from None
        stats.spans += len(batch)
        batch.clear()
        if progress is not None:
            progress(stats.spans)

    for path in files:
        stats.files += 1
        for where, envelope in _envelopes(path, stats):
            try:
                rows = list(_rows(envelope))
            except (TypeError, ValueError, AttributeError) as exc:
                stats.bad_lines += 1
                stats.warnings.append(f"{where}: not an OTLP span ({exc}), skipped")
                continue
            batch.extend(rows)
            if len(batch) >= BATCH_ROWS:
                flush()
    flush()
    return stats


def trace_ids(sources: Sequence[str]) -> set[str]:
    """The trace ids of every span `load` would insert from these sources."""
    stats = LoadStats()
    return {row[1] for path in trace_files(list(sources)) for _, envelope in
            _envelopes(path, stats) for row in _rows(envelope)}  # fmt: skip


def _envelopes(path: Path, stats: LoadStats) -> Iterator[tuple[str, dict[str, Any]]]:
    document, why = whole_document(path)
    if why is not None:
        stats.warnings.append(f"{path}: {why}, skipped")
        return
    if document is not None:
        yield str(path), orjson.loads(document)
        return
    try:
        with _open(path) as fh:
            for n, raw in enumerate(fh, start=1):
                if not raw.strip():
                    continue
                try:
                    value = orjson.loads(raw)
                except orjson.JSONDecodeError:
                    stats.bad_lines += 1
                    stats.warnings.append(f"{path}:{n}: not JSON, skipped")
                    continue
                if not isinstance(value, dict) or not isinstance(value.get("resourceSpans"), list):
                    stats.bad_lines += 1
                    stats.warnings.append(f"{path}:{n}: not an OTLP envelope, skipped")
                    continue
                yield f"{path}:{n}", value
    except (OSError, EOFError) as exc:
        stats.warnings.append(f"{path}: not readable ({exc}), skipped")


def _rows(envelope: dict[str, Any]) -> Iterator[list[Any]]:
    for rs in envelope["resourceSpans"]:
        resource = rs.get("resource") or {}
        for ss in rs.get("scopeSpans") or []:
            scope = ss.get("scope") or {}
            for span in ss.get("spans") or []:
                if isinstance(span, dict) and span.get("traceId") and span.get("spanId"):
                    yield span_row(resource, scope, span)
