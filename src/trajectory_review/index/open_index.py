"""Which index reads the sources: a ClickHouse table is queried in place, anything else
(files, folders, Connect contents) is read into the DuckDB index."""

from __future__ import annotations

import os
from collections.abc import Sequence

from trajectory_review import settings
from trajectory_review.index.base import Index
from trajectory_review.index.clickhouse import ClickHouseIndex, since_ns
from trajectory_review.index.store import TraceIndex
from trajectory_review.sources import SourceError, default_sources
from trajectory_review.sources.locations import is_clickhouse


def open_index(
    sources: Sequence[str | os.PathLike[str]] | None = None,
    cache: bool = True,
    since: str | None = None,
) -> Index:
    """The index of the sources. `since` (else TRAJECTORY_SINCE): a window such as `30d`,
    kept to conversations active in it; for ClickHouse sources, where stores are large."""
    names = [str(s) for s in (list(sources) if sources else default_sources())]
    stores = [s for s in names if is_clickhouse(s)]
    if not stores:
        return TraceIndex.build(names, cache=cache)
    if len(names) > 1:
        raise SourceError(
            f"{stores[0].split('@')[-1]}: a ClickHouse source is read in place and alone; "
            "name it as the only source"
        )
    window = since if since is not None else settings.since()
    return ClickHouseIndex.open(stores[0], since_ns(window))
