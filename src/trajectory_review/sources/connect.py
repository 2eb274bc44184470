"""Traces from Posit Connect's traces API: the source `connect:<content-guid>`.

What commons does (posit-dev/commons R/connect.R), matched here:
- server and key from CONNECT_SERVER (a trailing `/` and `/__api__` stripped) and
  CONNECT_API_KEY, sent as `Authorization: Key <key>`;
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

Downloaded lines are kept in the cache folder, gzip-compressed, one segment per sync, so a
restart downloads nothing old and the index reads them like any trace file. A sync after
the first asks only for spans that started after the newest one it has (padded as above);
when a new span's parent is missing because of that window, it fetches again without it.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import orjson

from trajectory_review import settings
from trajectory_review.sources.base import Progress, SourceError

if TYPE_CHECKING:
    import httpx

PREFIX = "connect:"
PAGE = 1000
PAD_FROM_NS = 3600 * 10**9  # an hour before: parents start before their children
PAD_TO_S = 1
MAX_JOBS_IN_FLIGHT = 20
MAX_PAGES_IN_FLIGHT = 4
NEW_TRACE_STORE = (2026, 7)  # traces moved to the content endpoint in this version
_VERSION = re.compile(r"Posit Connect v(\d+)\.(\d+)(?:\.(\d+))?")


def is_connect(source: object) -> bool:
    return isinstance(source, str) and source.startswith(PREFIX)


@dataclass(frozen=True)
class Client:
    server: str
    key: str

    @classmethod
    def from_env(cls, guid: str) -> Client:
        server = settings.connect_server()
        key = settings.connect_api_key()
        missing = [n for n, v in (("CONNECT_SERVER", server), ("CONNECT_API_KEY", key)) if not v]
        if missing:
            raise SourceError(
                f"{PREFIX}{guid}: set {' and '.join(missing)} to read traces from Posit Connect"
            )
        server = server.rstrip("/")
        if server.endswith("/__api__"):
            server = server[: -len("/__api__")]
        return cls(server.rstrip("/"), key)

    def url(self, *parts: str) -> str:
        return "/".join([self.server, "__api__", "v1", *parts])


@dataclass
class SyncResult:
    files: list[Path]
    new_lines: int = 0
    warnings: list[str] = field(default_factory=list)


class RetrySettings:
    """Backoff between retries of a failed request (tests shorten it)."""

    tries = 4
    first_wait = settings.connect_backoff()
    timeout = 60.0


def window_param(ns: int, pad_seconds: float) -> str:
    """A bound as Connect parses it (anything else is ignored without a word)."""
    stamp = datetime.fromtimestamp(ns / 1e9 + pad_seconds, UTC)
    return stamp.strftime("%Y-%m-%dT%H:%M:%SZ")


def server_version(header: str | None) -> tuple[int, int] | None:
    m = _VERSION.search(header or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


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
        self.client = client or Client.from_env(guid)
        self.folder = folder
        self.progress = progress
        import httpx  # here, not at the top: see _request

        self._http = httpx.Client(
            headers={"Authorization": f"Key {self.client.key}"},
            timeout=RetrySettings.timeout,
            follow_redirects=True,
        )
        self._lock = threading.Lock()
        self._read = 0
        self._total = 0
        self.warnings: list[str] = []

    # -- state ----------------------------------------------------------------------------

    @property
    def _state_path(self) -> Path:
        return self.folder / "state.json"

    def _state(self) -> dict:
        try:
            return json.loads(self._state_path.read_text())
        except (OSError, ValueError):
            return {"newest_start_ns": None, "recent": [], "span_ids": [], "segments": 0}

    def files(self) -> list[Path]:
        return sorted(self.folder.glob("segment-*.jsonl.gz"))

    # -- syncing --------------------------------------------------------------------------

    def sync(self) -> SyncResult:
        """Download what is new since the last sync; the segment files to read."""
        self.folder.mkdir(parents=True, exist_ok=True)
        state = self._state()
        since = state["newest_start_ns"]
        started_ns = time.time_ns()
        lines = self._fetch(since, started_ns)
        known = set(state["span_ids"])
        absent = set(state.get("absent_parents", []))  # never recorded at all
        new_ids, parents = _ids(lines)
        recent = set(state["recent"])
        if since is not None and (parents - new_ids - known - absent):
            # A parent that started before the window (a long-lived wrapper span) is
            # missing: read everything again, and let it replace what was kept.
            lines = self._fetch(None, started_ns)
            new_ids, parents = _ids(lines)
            known, recent = set(), set()
            for old in self.files():
                old.unlink()
        state["absent_parents"] = sorted((absent | parents) - new_ids - known)
        fresh = [ln for ln in lines if _digest(ln) not in recent]
        result = SyncResult([], 0, list(self.warnings))
        if fresh:
            n = state["segments"] + 1
            tmp = self.folder / f".segment-{n:06d}.{os.getpid()}.tmp"
            with gzip.open(tmp, "wb", compresslevel=5) as fh:
                fh.write(b"".join(ln + b"\n" for ln in fresh))
            os.replace(tmp, self.folder / f"segment-{n:06d}.jsonl.gz")
            state["segments"] = n
            result.new_lines = len(fresh)
        newest = max([since or 0, *(_start(ln) for ln in lines)])
        state["newest_start_ns"] = newest or None
        # lines that a padded window can bring back, remembered to be kept once
        horizon = newest - PAD_FROM_NS - 10**9
        state["recent"] = sorted({_digest(ln) for ln in lines if _start(ln) >= horizon})
        state["span_ids"] = sorted(known | new_ids)
        tmp_state = self._state_path.with_suffix(f".{os.getpid()}.tmp")
        tmp_state.write_text(json.dumps(state))
        os.replace(tmp_state, self._state_path)
        result.files = self.files()
        return result

    def _fetch(self, since_ns: int | None, now_ns: int) -> list[bytes]:
        window = {"to": window_param(now_ns, PAD_TO_S)}
        if since_ns is not None:
            window["from"] = window_param(since_ns, -PAD_FROM_NS / 1e9)
        first = self._get(self.client.url("content", self.guid, "traces"), 0, window)
        if first is None:  # 404: an older server keeps traces per job
            return _unique(self._job_lines(since_ns))
        lines, total, version = first
        self._count(len(lines), total)
        offsets = range(len(lines), total, PAGE) if lines else range(0)
        with ThreadPoolExecutor(MAX_PAGES_IN_FLIGHT) as pool:
            pages = pool.map(
                lambda off: self._get(self.client.url("content", self.guid, "traces"), off, window),
                offsets,
            )
            for page in pages:
                if page is not None:
                    lines.extend(page[0])
                    self._count(len(page[0]), total)
        if version is None or version >= NEW_TRACE_STORE:
            lines.extend(self._job_lines(since_ns))  # old per-job files were not migrated
        return _unique(lines)

    def _job_lines(self, since_ns: int | None) -> list[bytes]:
        jobs = self._get_json(self.client.url("content", self.guid, "jobs"))
        keys = [j.get("key") for j in jobs if isinstance(j, dict) and j.get("key")]
        params = {}
        if since_ns is not None:
            params["since"] = window_param(since_ns, -PAD_FROM_NS / 1e9)

        def job(key: str) -> list[bytes]:
            url = self.client.url("content", self.guid, "jobs", str(key), "traces")
            out: list[bytes] = []
            offset = 0
            while True:
                page = self._get(url, offset, params)
                if page is None:  # a job without a trace file
                    return out
                lines, total, _v = page
                out.extend(lines)
                offset += len(lines)
                self._count(len(lines), 0)
                if not lines or offset >= total:
                    return out

        with ThreadPoolExecutor(MAX_JOBS_IN_FLIGHT) as pool:
            return [ln for lines in pool.map(job, keys) for ln in lines]

    def _count(self, n: int, total: int) -> None:
        with self._lock:
            self._read += n
            self._total = max(self._total, total, self._read)
            read, total = self._read, self._total
        if self.progress is not None:
            self.progress(read, total)

    # -- HTTP -----------------------------------------------------------------------------

    def _request(self, url: str, params: dict) -> httpx.Response | None:
        """A GET with retries on timeouts, 5xx and 429; None after the last failed try."""
        # httpx is imported when Connect is read, not with the command line: worker
        # processes import the command line when `trajectory-review` is the main script
        # (the fork server once for them, model/workers.MAIN_MODULE), and spent 0.05 s
        # of their start importing httpx for nothing.
        import httpx

        wait = RetrySettings.first_wait
        last = ""
        for attempt in range(RetrySettings.tries):
            try:
                resp = self._http.get(url, params=params)
            except httpx.HTTPError as exc:
                last = f"{type(exc).__name__}"
            else:
                if resp.status_code in (401, 403):
                    raise SourceError(
                        f"{PREFIX}{self.guid}: Connect refused the traces of content "
                        f"{self.guid} (HTTP {resp.status_code}): reading traces needs "
                        "collaborator (owner) access for the CONNECT_API_KEY user"
                    )
                if resp.status_code != 429 and resp.status_code < 500:
                    return resp
                last = f"HTTP {resp.status_code}"
            if attempt + 1 < RetrySettings.tries:
                time.sleep(wait)
                wait *= 2
        page = params.get("offset", 0)
        self.warnings.append(
            f"{PREFIX}{self.guid}: gave up on the page at offset {page} after "
            f"{RetrySettings.tries} tries ({last}); kept what was read"
        )
        return None

    def _get(
        self, url: str, offset: int, params: dict
    ) -> tuple[list[bytes], int, tuple[int, int] | None] | None:
        resp = self._request(url, {**params, "limit": PAGE, "offset": offset})
        if resp is None:
            return [], 0, None
        if resp.status_code == 404:
            return None
        if resp.status_code >= 400:
            raise SourceError(f"{PREFIX}{self.guid}: Connect answered HTTP {resp.status_code}")
        lines = [ln for ln in resp.content.split(b"\n") if ln.strip()]
        try:
            total = int(resp.headers.get("X-Total-Count", ""))
        except ValueError:
            total = offset + len(lines)
        return lines, total, server_version(resp.headers.get("Server"))

    def _get_json(self, url: str) -> list:
        resp = self._request(url, {})
        if resp is None or resp.status_code == 404:
            return []
        try:
            value = resp.json()
        except ValueError:
            return []
        return value if isinstance(value, list) else []

    def close(self) -> None:
        self._http.close()


# -- lines ------------------------------------------------------------------------------------


def _digest(line: bytes) -> str:
    return hashlib.md5(line, usedforsecurity=False).hexdigest()


def _unique(lines: Iterable[bytes]) -> list[bytes]:
    return list(dict.fromkeys(lines))


def _spans(line: bytes) -> list[dict]:
    try:
        env = orjson.loads(line)
    except orjson.JSONDecodeError:
        return []
    out = []
    for rs in env.get("resourceSpans") or [] if isinstance(env, dict) else []:
        for ss in (rs or {}).get("scopeSpans") or []:
            out.extend(s for s in (ss or {}).get("spans") or [] if isinstance(s, dict))
    return out


def _start(line: bytes) -> int:
    starts = []
    for s in _spans(line):
        try:
            starts.append(int(s.get("startTimeUnixNano") or 0))
        except (TypeError, ValueError):
            pass
    return max(starts, default=0)


def _ids(lines: Iterable[bytes]) -> tuple[set[str], set[str]]:
    """Span ids in these lines, and the parent ids they refer to."""
    ids, parents = set(), set()
    for line in lines:
        for s in _spans(line):
            if s.get("spanId"):
                ids.add(str(s["spanId"]))
            if s.get("parentSpanId"):
                parents.add(str(s["parentSpanId"]))
    return ids, parents


def cache_folder(root: Path, client: Client, guid: str) -> Path:
    server = hashlib.sha256(client.server.encode()).hexdigest()[:12]
    return root / "connect" / server / re.sub(r"[^0-9A-Za-z-]", "_", guid)


@dataclass(frozen=True)
class ConnectSource:
    """`connect:<content-guid>`: a content's traces, mirrored in the cache folder."""

    location: str

    @classmethod
    def open(cls, location: object) -> ConnectSource | None:
        return cls(str(location)) if is_connect(location) else None

    @property
    def guid(self) -> str:
        return self.location[len(PREFIX) :]

    @property
    def folder(self) -> Path:
        """Where the downloaded traces are kept (per process when the cache is off)."""
        root = settings.cache_dir()
        if root is None:
            root = Path(tempfile.gettempdir()) / f"trajectory-review-connect-{os.getpid()}"
        return cache_folder(root, Client.from_env(self.guid), self.guid)

    def sync(self, progress: Progress | None = None) -> list[str]:
        content = ContentTraces(self.guid, self.folder, progress=progress)
        try:
            return content.sync().warnings
        finally:
            content.close()

    def files(self, skipped: list[str]) -> list[Path]:
        segments = sorted(self.folder.glob("segment-*.jsonl.gz"))
        if not segments:
            raise SourceError(f"{self.location}: no traces read from Posit Connect yet")
        return segments
