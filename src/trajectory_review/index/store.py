"""The DuckDB trace index: one columnar scan of the sources, then cheap lookups.

Building the index never parses a message in Python: DuckDB reads every line, counts the
ones that are not JSON, unnests spans, deduplicates them by (traceId, spanId), resolves
each chat span's conversation id and nearest turn span through its ancestors, and leaves
out title calls. Every span is written once, in the same pass that parses it; the
message histories are never copied or sorted afterwards. Each chat span's conversation
and turn record go in a small `marks` table beside the spans; opening a conversation then
reads only that conversation's rows, through ART indexes on the conversation id. Small
traces are indexed in memory, large ones (or the cached index) in a file.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import weakref
from collections.abc import Iterator, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb

from trajectory_review.index.cache import building, files_key, prune, publish
from trajectory_review.index.database import (
    built_database,
    discard,
    fresh_database,
    scratch_dir,
)
from trajectory_review.index.ingest import IndexStats, ingest, make_lookups
from trajectory_review.index.lines import line_files, merged
from trajectory_review.index.rows import ChatRow, RawRow, StreamedRows, chat_row
from trajectory_review.settings import cache_dir
from trajectory_review.sources import SourceError, trace_files
from trajectory_review.sources.files import trace_bytes
from trajectory_review.support.scratch import own_folder

if TYPE_CHECKING:  # the index itself needs no pandas (a lint or an index build imports none)
    import pandas as pd


# Traces up to this size (sources.files.trace_bytes) are indexed in memory.
IN_MEMORY_BYTES = 256 * 1024 * 1024


# Chat rows made Python's per fetch. Each carries its whole history: a thousand at a time
# are megabytes of new strings, which no longer fit in the processor's cache, and were
# made more slowly than a few hundred (docs/performance-log.md, "Tenth session of #50").
FETCH_BATCH = 256


class TraceIndex:
    """A DuckDB database of the spans the app needs. Thread-safe: one cursor per call."""

    def __init__(
        self,
        con: duckdb.DuckDBPyConnection,
        stats: IndexStats,
        path: Path | None,
        cache_key: str | None = None,
        scratch: Path | None = None,
        lookups: bool = True,
    ):
        self._con = con
        self.stats = stats
        self.path = path  # None: in memory
        self.scratch = scratch  # where an index in memory spills, removed with it
        self.cache_key = cache_key  # set when the index lives in the on-disk cache
        self.engine = "duckdb"  # listed by a catalog in this process (listing/catalog.py)
        self._lock = threading.Lock()
        self._lookups = lookups  # made (ingest.make_lookups), or made at the first open
        # An index built in a scratch directory is removed with it: on close, when the
        # object is collected, or when the process exits.
        self._cleanup = weakref.finalize(self, discard, con, scratch)

    # -- building -------------------------------------------------------------------

    @classmethod
    def build(
        cls,
        sources: Sequence[str | os.PathLike[str]] | None = None,
        *,
        database: str | os.PathLike[str] | None = None,
        memory_limit: str = "1GB",
        cache: bool = True,
        threads: int | None = None,
        lookups: bool = True,
    ) -> TraceIndex:
        """threads: DuckDB's threads for the build (default: one per core); queries on
        the built index use one per core whatever it was built with. lookups=False: for
        a run that streams every conversation (ingest.make_lookups); made all the same,
        at once, for an index in the cache, which the app opens later."""
        skipped: list[str] = []
        files = trace_files(sources, skipped)
        cdir = cache_dir() if cache and database is None else None
        if cdir is not None:
            index = cls._cached(files, cdir, memory_limit, threads)
            both = merged(skipped, index.stats.skipped_files)
            index.stats = replace(index.stats, skipped_files=both)
            return index
        scratch = path = None
        if database is None:
            # A scratch index, removed with it: in memory when the traces are small
            # (writing a file costs), in a file when they are not (in memory past the
            # limit DuckDB spills uncompressed; docs/performance-log.md, "scratch index
            # in memory or a file").
            scratch = scratch_dir()
            if trace_bytes(files) > IN_MEMORY_BYTES:
                path = scratch / "index.duckdb"
        else:
            path = Path(database)
        documents = own_folder("doc-")
        try:
            names, shown = line_files(files, documents, skipped)
            if not names:
                raise SourceError(f"no OTLP trace file among {len(files)}: {skipped[-1]}")
            con, stats, bad = cls._ingest_readable(
                path, names, shown, memory_limit, scratch, threads, lookups
            )
        finally:
            shutil.rmtree(documents, ignore_errors=True)
        stats = replace(
            stats, bad_files=tuple(bad), skipped_files=merged(skipped, stats.skipped_files)
        )
        return cls(con, stats, path, scratch=scratch, lookups=lookups)

    @staticmethod
    def _ingest_readable(
        path: Path | None,
        names: list[str],
        shown: dict[str, str],
        memory_limit: str,
        spill: Path | None = None,
        threads: int | None = None,
        lookups: bool = True,
    ) -> tuple[duckdb.DuckDBPyConnection, IndexStats, list[str]]:
        bad: list[str] = []
        while True:
            con = fresh_database(path, memory_limit, spill, threads)
            readable = [f for f in names if f not in bad]
            if not readable:
                con.close()
                raise SourceError(f"no readable trace file among {len(names)}: {bad[0]}")
            try:
                stats = ingest(con, readable, shown, path is not None, lookups)
                if path is not None:  # in a file: written now, not when it is closed
                    con.execute("CHECKPOINT")  # (docs/performance-log.md, "checkpoint")
                built_database(con, memory_limit, threads is not None)
                break
            except duckdb.Error as exc:
                # A file DuckDB cannot read at all (a corrupt or truncated gzip, a file
                # removed mid-read) is left out and named; the others still load.
                con.close()
                named = [f for f in readable if f in str(exc)]
                culprit = max(named, key=len) if named else None  # a.jsonl vs a.jsonl.gz
                if culprit is None:
                    raise
                bad.append(culprit)
        return con, stats, [shown.get(b, b) for b in bad]

    @classmethod
    def _cached(
        cls, files: list[Path], cdir: Path, memory_limit: str, threads: int | None = None
    ) -> TraceIndex:
        key = files_key(files)
        db, meta = cdir / f"index-{key}.duckdb", cdir / f"index-{key}.json"
        if not (db.exists() and meta.exists()):
            with building(cdir, f"index-{key}"):
                if not (db.exists() and meta.exists()):  # not built while we waited
                    tmp = cdir / f"index-{key}.{os.getpid()}.tmp"
                    built = cls.build(
                        [str(f) for f in files],
                        database=tmp,
                        memory_limit=memory_limit,
                        cache=False,
                        threads=threads,
                    )
                    built.close()
                    tmp_meta = tmp.with_suffix(".json.tmp")
                    tmp_meta.write_text(json.dumps(asdict(built.stats)))
                    publish(tmp, db)
                    publish(tmp_meta, meta)
                    prune(cdir, "index")
        con = duckdb.connect(str(db), read_only=True)
        con.execute(f"SET memory_limit='{memory_limit}'")
        data = json.loads(meta.read_text())
        for field in ("bad_files", "bad_line_details", "skipped_files", "span_warnings"):
            data[field] = tuple(data.get(field, ()))
        return cls(con, IndexStats(**data), db, key)

    def cursor(self) -> duckdb.DuckDBPyConnection:
        # DuckDB connections are not safe to share between threads; cursors are.
        with self._lock:
            return self._con.cursor()

    def close(self) -> None:
        self._cleanup()

    @property
    def origin(self) -> str:
        """Where the spans are, for the header."""
        n = self.stats.files
        return f"{n:,} file{'' if n == 1 else 's'}"

    # -- reading --------------------------------------------------------------------

    def conversations(self) -> pd.DataFrame:
        """One row per conversation: id, last_active (ns), chat span count."""
        return (
            self.cursor()
            .execute(
                "SELECT conversation_id, last_active_ns, start_ns, chat_spans "
                "FROM conversations ORDER BY last_active_ns DESC, conversation_id"
            )
            .fetchdf()
        )

    def conversation_ids(self) -> list[str]:
        return [
            r[0]
            for r in self.cursor()
            .execute(
                "SELECT conversation_id FROM conversations "
                "ORDER BY last_active_ns DESC, conversation_id"
            )
            .fetchall()
        ]

    def time_span(self) -> tuple[int | None, int | None]:
        """The first call's start and the last call's end over every conversation (ns)."""
        lo, hi = (
            self.cursor()
            .execute("SELECT min(start_ns), max(last_active_ns) FROM conversations")
            .fetchall()[0]
        )
        return (None if lo is None else int(lo), None if hi is None else int(hi))

    def chat_rows(self, conversation_id: str) -> list[ChatRow]:
        """The chat spans of one conversation, each with its turn span's record joined.

        Two index lookups joined here, not the `chats` view: joined in SQL, the spans
        table was scanned (docs/performance-log.md, "opening a conversation")."""
        if not self._lookups:
            self._make_lookups()
        cur = self.cursor()
        found = cur.execute(_MARKS_SELECT + " WHERE conversation_id = ?", [conversation_id])
        marks = {int(m[0]): m for m in found.fetchall()}
        spans = cur.execute(_SPAN_SELECT + " WHERE conversation_id = ?", [conversation_id])
        rows = []
        for s in spans.fetchall():
            m = marks.get(int(s[0]))
            if m is not None:  # a second copy of a span in one file has no mark: read once
                # its times whole, as they are stored: for a few rows the expressions that
                # send them as 64 bits when they fit (_FITS) slowed every open
                # (docs/performance-log.md, "Times fetched as 64 bits")
                whole = (s[3], s[4])
                rows.append(chat_row((m[1], *s[1:5], m[2], *s[5:12], *m[3:6], *s[12:], whole)))
        return rows

    def _make_lookups(self) -> None:
        """An index built without its lookups (build's `lookups`) makes them when first
        asked to open a conversation, once, whichever thread asks first."""
        with self._lock:
            if not self._lookups:
                make_lookups(self._con)
                self._lookups = True

    def conversation_fingerprints(self) -> dict[str, str]:
        """Conversation id -> a digest of every row its replay reads."""
        rows = self.cursor().execute("SELECT conversation_id, fingerprint FROM conversations")
        return dict(rows.fetchall())

    def iter_chat_rows(
        self, batch: int = FETCH_BATCH, only: Sequence[str] | None = None
    ) -> Iterator[tuple[str, StreamedRows]]:
        """Every conversation's chat rows (or only these conversations'), newest first,
        in one streamed scan, packed as tuples (rows.chat_row unpacks them): as they are
        handed to worker processes.

        Fetched `batch` rows at a time: the first conversations go to work while the rest
        are fetched, not all at once (docs/performance-log.md, "fetch batches")."""
        cur = self.cursor()
        cur.execute(
            _CHAT_SELECT
            + " JOIN conversations v USING (conversation_id) "
            + (
                "SEMI JOIN (SELECT unnest($only) AS conversation_id) o USING (conversation_id) "
                if only is not None
                else ""
            )
            + "ORDER BY v.last_active_ns DESC, c.conversation_id",
            {"only": list(only)} if only is not None else {},
        )
        current = ""
        group: list[RawRow] = []
        while True:
            chunk = cur.fetchmany(batch)
            if not chunk:
                break
            for r in chunk:
                if r[0] != current:
                    if group:
                        yield current, group
                    current, group = r[0], []
                group.append(r)
        if group:
            yield current, group


# A streamed row's times are sent as signed 64-bit integers, and whole (the last column)
# only when they do not fit: DuckDB makes a Python int of a 128-bit one far more slowly,
# for times that nearly always fit (rows.chat_row reads either; docs/performance-log.md,
# "Times fetched as 64 bits").
_FITS = "try_cast(c.start_ns AS BIGINT), try_cast(c.end_ns AS BIGINT)"
_WHOLE = (
    "CASE WHEN try_cast(c.start_ns AS BIGINT) IS NULL OR try_cast(c.end_ns AS BIGINT) IS NULL "
    "THEN [c.start_ns, c.end_ns] END"
)
# The turn span's record is marked onto each chat row when the index is built, so that
# opening a conversation is one index lookup on the conversation id.
_CHAT_SELECT = f"""
    SELECT c.conversation_id, c.trace_id, c.span_id, {_FITS}, c.turn_span_id,
           c.input_messages, c.output_messages, c.system_instructions, c.model, c.provider,
           c.input_tokens, c.output_tokens, c.has_turn, c.turn_tag, c.turn_candidates,
           c.finish_reasons, c.status_code, c.status_message, c.error_type,
           {_WHOLE}
    FROM chats c
"""


_MARKS_SELECT = (
    "SELECT row_id, conversation_id, turn_span_id, has_turn, turn_tag, turn_candidates FROM marks"
)
# A chat span's own columns, by row id (chat_rows); the order chat_row reads them in,
# less the conversation and the turn record, which come from its mark.
_SPAN_SELECT = """
    SELECT rowid, trace_id, span_id, coalesce(start_ns, 0), coalesce(end_ns, start_ns, 0),
           input_messages, output_messages, system_instructions, model, provider,
           input_tokens, output_tokens, finish_reasons, status_code, status_message,
           error_type
    FROM spans
"""
