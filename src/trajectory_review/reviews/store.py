"""Where review events are kept: one contract, a kind of store per entry of KINDS.

- a JSON-lines file (reviews/log.ReviewLog): the default for one machine;
- PostgreSQL (reviews/postgres.PostgresStore): `postgresql://` or `postgres://`, a team's
  store that every reviewer process shares and that survives a redeploy;
- ClickHouse (reviews/clickhouse.ClickHouseStore): `clickhouse://` (a server: the default
  for a ClickHouse source) or `chdb://`, a table beside the traces.

A location is a URL of a known kind or a file path; never anything else. A URL of an
unknown kind, or one that cannot be read, is a configuration error (one line): taken as
a path, `postgresql://qa:secret@db/reviews` once became a folder tree named after the
URL, password included, and the reviews went there.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

from trajectory_review import settings
from trajectory_review.reviews.log import (
    ReviewEvent,
    ReviewLog,
    ReviewState,
    StoreConfigError,
)


class ReviewStore(Protocol):
    """What the app, the command line and `reviews copy` use of a store."""

    kind: str  # file | postgresql
    shown: str  # the store as it may be printed (never a password)

    def append(self, event: ReviewEvent) -> ReviewEvent:
        """Write one event; ReviewLogError (one line) when the store cannot take it,
        ValueError for an event no store may take. An event whose id is there already
        adds nothing."""
        ...

    def state(self) -> ReviewState:
        """Everything the store says; never raises (`error` says why it may be behind)."""
        ...

    def signature(self) -> object:
        """Changes whenever any process appends: what sessions poll, without waiting."""
        ...

    def writable_problem(self) -> str | None:
        """Why nothing can be saved now (one line), or None."""
        ...

    def to_csv(self) -> str: ...

    def all_events(self) -> list[ReviewEvent]:
        """Every event, read now; ReviewLogError when the store cannot be read."""
        ...


_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]{0,30})://")


def _postgres(location: str) -> ReviewStore:
    from trajectory_review.reviews.postgres import PostgresStore

    return PostgresStore(location)


def _clickhouse(location: str) -> ReviewStore:
    from trajectory_review.reviews.clickhouse import ClickHouseStore

    return ClickHouseStore(location)


# scheme -> the store for a location of it; a path has no scheme and is a file
KINDS: dict[str, Callable[[str], ReviewStore]] = {
    "postgresql": _postgres,
    "postgres": _postgres,
    "clickhouse": _clickhouse,
    "chdb": _clickhouse,
}


def open_store(location: str | Path) -> ReviewStore:
    text = str(location).strip()
    m = _SCHEME.match(text)
    if m is None:
        if not text:
            raise StoreConfigError("review store: no location given")
        return ReviewLog(text)
    opener = KINDS.get(m.group(1).lower())
    if opener is None:
        raise StoreConfigError(
            f"review store {m.group(0)}…: not a kind of store this app knows (a file path, "
            "postgresql://, clickhouse:// or chdb://)"
        )
    return opener(text)


def review_location(sources: Sequence[str] | None = None) -> str:
    """TRAJECTORY_REVIEW_LOG, else: for a ClickHouse server, a table of ours in its
    database (every process reads it, a redeploy keeps it); else a file beside the
    traces (beside a chdb folder, or in the working directory for a Connect content).
    A source that cannot be parsed decides nothing: SourceError."""
    env = settings.review_log().strip()
    if env:
        return env
    from trajectory_review.sources import default_sources
    from trajectory_review.sources.clickhouse import parse_location
    from trajectory_review.sources.connect_api import content_guid
    from trajectory_review.sources.locations import is_clickhouse, is_connect

    source = str((list(sources) if sources else default_sources())[0])
    if is_clickhouse(source):
        loc = parse_location(source)
        if loc.scheme != "chdb":
            return source  # the store's table, beside the traces' (reviews/clickhouse.py)
        return str(Path(loc.path).parent / f"{loc.database}.{loc.table}.reviews.jsonl")
    if is_connect(source):  # no folder of its own: the working directory
        return str(Path.cwd() / f"{content_guid(source)}.reviews.jsonl")
    first = Path(source)
    # Beside the traces, not inside them: a .jsonl inside would be read as a trace file.
    return str(first.parent / f"{first.name.rstrip('/') or 'traces'}.reviews.jsonl")


LOST_ON_DEPLOY = (
    "Reviews are kept inside this deployment and are lost at the next deploy — set "
    "TRAJECTORY_REVIEW_LOG to a PostgreSQL URL (docs/connect.md)"
)


def lost_on_redeploy(store: ReviewStore) -> str | None:
    """On Posit Connect, a review file inside the bundle's folder (the working directory)
    is gone at the next deploy and unseen by the deployment's other processes: the one
    line the page and `serve` then show, else None."""
    if not settings.on_posit_connect() or store.kind != "file":
        return None
    where = Path(store.shown).resolve()
    return LOST_ON_DEPLOY if where.is_relative_to(Path.cwd().resolve()) else None


def default_store(sources: Sequence[str] | None = None) -> ReviewStore:
    return open_store(review_location(sources))


def copy_events(source: ReviewStore, target: ReviewStore) -> tuple[int, int]:
    """Every event of `source` into `target`, ids, authors and times kept; an event the
    target has already (by id) is left out, so a second copy adds nothing. Returns
    (copied, already there)."""
    have = {e.id for e in target.all_events()}
    copied = skipped = 0
    for event in source.all_events():
        if event.id in have:
            skipped += 1
            continue
        target.append(event)
        have.add(event.id)
        copied += 1
    return copied, skipped
