"""Traces from Posit Connect's traces API: the source `connect:<content-guid>`.

What commons does (posit-dev/commons R/connect.R), matched here:
- server and key from CONNECT_SERVER (trailing `/` and `/__api__` stripped, a path kept)
  and CONNECT_API_KEY, sent as `Authorization: Key <key>`;
- `GET /__api__/v1/content/{guid}/traces?limit&offset[&from&to]` returns OTLP/JSON lines,
  newest first by span start, the total in X-Total-Count; `from`/`to` filter on span start
  over [from, to) and must be `%Y-%m-%dT%H:%M:%SZ` (Connect silently ignores any other
  format); `from` is padded by -1 h (earlier-starting parents carry conversation ids),
  `to` by +1 s;
- a 404 there means an older server: read `/jobs` and each job's `traces` (`since=`), at
  most 20 requests in flight. Connect 2026.07 moved new traces to the content endpoint
  without migrating old per-job files, so from that version (or when the `Server` header
  does not say) both are read and each line is kept once;
- 401/403: reading traces needs collaborator (owner) access for the key's user.

Downloaded lines are kept in the cache folder (private to the app's user), gzip-compressed,
one segment per sync, so a restart downloads nothing old and the index reads them like
any trace file. A sync after the first asks only for spans that started after the newest
one it has (padded as above); when a new span's parent is missing because of that window,
it fetches again without it.

Everything a server sends is untrusted, as a trace file is (a hostile or broken server, a
proxy in between): each line is checked as the index checks a file's (a line of the
wrong shape is skipped and named, the rest kept), a response is streamed to disk under
caps on the bytes received and decompressed and a deadline, paging follows what pages
hold (an empty page, one with nothing new, a short one, or the hard maximum ends it; the
total header only bounds it), and the saved state is checked when read, so one bad value
never fails every later sync.

The API and its caps are connect_api.py; what a line holds, and the saved state,
connect_lines.py.
"""

from __future__ import annotations

import atexit
import gzip
import hashlib
import json
import os
import re
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from trajectory_review import settings
from trajectory_review.sources.base import Progress, SourceError
from trajectory_review.sources.connect_api import Client, TracesAPI, content_guid
from trajectory_review.sources.connect_lines import Page, Written, checked_state, envelope_spans
from trajectory_review.sources.locations import CONNECT_PREFIX, is_connect
from trajectory_review.support.scratch import own_folder

MAX_NAMED = 20  # skipped lines named one by one in a sync's warning (the rest counted)


@dataclass
class SyncResult:
    files: list[Path]
    new_lines: int = 0
    warnings: list[str] = field(default_factory=list)


def private_dir(path: Path) -> Path:
    """A folder only the app's user can read (traces hold every conversation)."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(path, 0o700)
    return path


def private_file(path: Path) -> IO[bytes]:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    return os.fdopen(fd, "wb")


class ContentTraces:
    """One Connect content's traces, mirrored into `folder` (a cache directory)."""

    def __init__(
        self,
        guid: str,
        folder: Path,
        client: Client | None = None,
        progress: Callable[[int, int], None] | None = None,
    ):
        self.guid = guid
        self.folder = folder
        self.api = TracesAPI(guid, client or Client.from_env(guid), progress)
        self.warnings = self.api.warnings  # the API's lines and the sync's, in order
        self._skipped: list[str] = []  # lines not read, "where: why"
        self._skipped_count = 0

    # -- state ----------------------------------------------------------------------------

    @property
    def _state_path(self) -> Path:
        return self.folder / "state.json"

    def _state(self, now_ns: int) -> dict[str, Any]:
        raw: Any = None
        if self._state_path.exists():
            try:
                raw = json.loads(self._state_path.read_text())
            except (OSError, ValueError, RecursionError):
                raw = "unreadable"
        state, reset = checked_state(raw, now_ns)
        if reset:
            self.warnings.append(
                f"{CONNECT_PREFIX}{self.guid}: the cache's sync state could not be used; "
                "reading every span again"
            )
            for old in self.files():
                old.unlink(missing_ok=True)
            state["segments"] = max(state["segments"], self._last_segment())
        return state

    def _last_segment(self) -> int:
        numbers = [int(m.group(1)) for f in self.folder.glob("segment-*.jsonl.gz")
                   if (m := re.fullmatch(r"segment-(\d{1,9})\.jsonl\.gz", f.name))]  # fmt: skip
        return max(numbers, default=0)

    def files(self) -> list[Path]:
        return sorted(self.folder.glob("segment-*.jsonl.gz"))

    # -- syncing --------------------------------------------------------------------------

    def sync(self) -> SyncResult:
        """Download what is new since the last sync; the segment files to read."""
        private_dir(self.folder)
        started_ns = time.time_ns()
        state = self._state(started_ns)
        since = state["newest_start_ns"]
        known = set(state["span_ids"])
        absent = set(state["absent_parents"])
        recent = set(state["recent"])
        n = state["segments"] + 1
        tmp = self.folder / f".segment-{n:06d}.{os.getpid()}.tmp"
        try:
            got = self._download(since, started_ns, recent, tmp)
            if since is not None and (got.parents - got.ids - known - absent):
                # A parent that started before the window (a long-lived wrapper span) is
                # missing: read everything again, and let it replace what was kept.
                known, recent = set(), set()
                got = self._download(None, started_ns, recent, tmp)
                for old in self.files():
                    old.unlink()
            result = SyncResult([], 0, [])
            if got.written:
                os.replace(tmp, self.folder / f"segment-{n:06d}.jsonl.gz")
                state["segments"] = n
                result.new_lines = got.written
        finally:
            tmp.unlink(missing_ok=True)
        state["absent_parents"] = sorted((absent | got.parents) - got.ids - known)
        newest = max(since or 0, got.newest)
        state["newest_start_ns"] = newest or None
        # lines that a padded window can bring back, remembered to be kept once
        state["recent"] = sorted(got.recent)
        state["span_ids"] = sorted(known | got.ids)
        tmp_state = self.folder / f".state.{os.getpid()}.tmp"
        with private_file(tmp_state) as fh:
            fh.write(json.dumps(state).encode())
        os.replace(tmp_state, self._state_path)
        if self._skipped_count:
            named = "; ".join(self._skipped[:MAX_NAMED])
            more = self._skipped_count - min(len(self._skipped), MAX_NAMED)
            self.warnings.append(
                f"{CONNECT_PREFIX}{self.guid}: {self._skipped_count:,} line(s) skipped: {named}"
                + (f" (and {more:,} more)" if more > 0 else "")
            )
        result.warnings = list(self.warnings)
        result.files = self.files()
        return result

    def _download(self, since: int | None, now_ns: int, recent: set[str], tmp: Path) -> Written:
        """Every line since `since` into `tmp` (gzip), each once; what it held."""
        import asyncio  # here, not at the top: see connect_api

        out = Written(now_ns, recent)
        with private_file(tmp) as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=5) as gz:
            for page in asyncio.run(self.api.fetch(since, now_ns)):
                self._take(page, out, gz)
        return out

    def _take(self, page: Page, out: Written, gz: gzip.GzipFile) -> None:
        """One page's lines into the segment: checked, each once."""
        try:
            if page.spool.too_long:
                self._skip(page, None, f"{page.spool.too_long} line(s) longer than the line cap")
            for k, line in enumerate(page.spool, start=1):
                spans = envelope_spans(line)
                if isinstance(spans, str):
                    self._skip(page, k, spans)
                    continue
                out.take(line, spans, gz)
        finally:
            page.spool.close()

    def _skip(self, page: Page, line: int | None, why: str) -> None:
        self._skipped_count += 1
        if len(self._skipped) < MAX_NAMED:
            where = f"page at offset {page.offset}" + (f", line {line}" if line else "")
            self._skipped.append(f"{where}: {why}")


def cache_folder(root: Path, client: Client, guid: str) -> Path:
    server = hashlib.sha256(client.server.encode()).hexdigest()[:12]
    return root / "connect" / server / content_guid(guid)


_PROCESS_DIR: list[Path] = []  # the per-process folder when the cache is off


@dataclass(frozen=True)
class ConnectSource:
    """`connect:<content-guid>`: a content's traces, mirrored in the cache folder."""

    location: str

    @classmethod
    def open(cls, location: object) -> ConnectSource | None:
        return cls(str(location)) if is_connect(location) else None

    @property
    def guid(self) -> str:
        return content_guid(self.location)

    @property
    def folder(self) -> Path:
        """Where the downloaded traces are kept (per process when the cache is off)."""
        root = settings.cache_dir()
        if root is None:
            if not _PROCESS_DIR:
                # private and unpredictable (mkdtemp), named by the pid so that a later
                # process removes it should this one be killed; removed as this one
                # ends: it holds the content's traces, downloaded for this process
                # alone, and every run with the cache off left a copy behind
                mine = own_folder("connect-")
                atexit.register(shutil.rmtree, mine, ignore_errors=True)
                _PROCESS_DIR.append(mine)
            root = _PROCESS_DIR[0]
        private_dir(root / "connect")
        return cache_folder(root, Client.from_env(self.guid), self.guid)

    def sync(self, progress: Progress | None = None) -> list[str]:
        guid = self.guid
        folder = self.folder
        private_dir(folder.parent)
        return ContentTraces(guid, folder, progress=progress).sync().warnings

    def files(self, skipped: list[str]) -> list[Path]:
        segments = sorted(self.folder.glob("segment-*.jsonl.gz"))
        if not segments:
            raise SourceError(f"{CONNECT_PREFIX}{self.guid}: no traces read from Posit Connect yet")
        return segments
