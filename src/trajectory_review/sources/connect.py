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

Long on purpose: Connect's API, its paging and every cap against a hostile server, in one client.
"""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import json
import os
import re
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

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
MAX_NAMED = 20  # skipped lines named one by one in a sync's warning (the rest counted)
FUTURE_SLACK_NS = 86_400 * 10**9  # a start this far past now is a bad clock, not a window
MB = 1024 * 1024
_VERSION = re.compile(r"Posit Connect v(\d+)\.(\d+)(?:\.(\d+))?")
# A content GUID, alone or inside the content's URL as Connect's dashboard shows it
# (…/connect/#/apps/<guid>/…, …/content/<guid>/): fixed widths, linear on any input.
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_URL_GUID = re.compile(r"/(?:apps|content)/([0-9a-fA-F-]{36})(?:[/?#]|$)")


def is_connect(source: object) -> bool:
    return isinstance(source, str) and source.startswith(PREFIX)


def content_guid(location: str) -> str:
    """The content GUID a `connect:` location names: a UUID, or a content URL holding
    one. Anything else is refused (it would reach request paths and file names)."""
    rest = location[len(PREFIX) :].strip() if is_connect(location) else location.strip()
    if _UUID.fullmatch(rest):
        return rest.lower()
    if rest.lower().startswith(("http://", "https://")) and len(rest) <= 2048:
        m = _URL_GUID.search(rest)
        if m and _UUID.fullmatch(m.group(1)):
            return m.group(1).lower()
    raise SourceError(
        f"{location[:120]!r}: not a Connect content GUID (connect:<guid>, the GUID like "
        "0f3c2a1e-5b7d-4c9e-8a6f-1d2b3c4d5e6f, or the content's URL from Connect)"
    )


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
    connect_timeout = 10.0


class Limits:
    """What one response may cost (README, Security); read when a sync starts."""

    @staticmethod
    def received() -> int:
        return settings.connect_max_response_mb() * MB

    @staticmethod
    def decompressed() -> int:
        return settings.connect_max_decompressed_mb() * MB

    @staticmethod
    def pages() -> int:
        return settings.connect_max_pages()

    @staticmethod
    def deadline() -> float:
        return settings.connect_deadline_seconds()


def window_param(ns: int, pad_seconds: float) -> str:
    """A bound as Connect parses it (anything else is ignored without a word); a time
    outside what a clock can show is clamped, never an error."""
    seconds = min(max(ns / 1e9 + pad_seconds, 0.0), 253_402_300_799.0)  # year 9999
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def server_version(header: str | None) -> tuple[int, int] | None:
    m = _VERSION.search((header or "")[:200])
    return (int(m.group(1)), int(m.group(2))) if m else None


# -- one response, streamed --------------------------------------------------------------------


class PageFailed(Exception):
    """A response that is retried (a timeout, a dropped connection, 5xx, 429)."""


class PageRefused(Exception):
    """A response that is not retried: over a cap. Its message is one line."""


class LineSpool:
    """A response's lines, written to a spooled temporary file as they arrive (memory
    holds at most one line and a chunk); a line over the line cap is dropped and counted."""

    def __init__(self, max_line: int) -> None:
        self.max_line = max_line
        self.file: IO[bytes] = tempfile.SpooledTemporaryFile(max_size=16 * MB)
        self._partial = bytearray()
        self._dropping = False
        self.too_long = 0
        self.lines = 0

    def feed(self, chunk: bytes) -> None:
        start = 0
        while True:
            nl = chunk.find(b"\n", start)
            piece = chunk[start:] if nl < 0 else chunk[start:nl]
            if not self._dropping:
                if len(self._partial) + len(piece) > self.max_line:
                    self._dropping, self._partial = True, bytearray()
                    self.too_long += 1
                else:
                    self._partial += piece
            if nl < 0:
                return
            self._end_line()
            start = nl + 1

    def _end_line(self) -> None:
        if not self._dropping and self._partial.strip():
            self.file.write(bytes(self._partial) + b"\n")
            self.lines += 1
        self._partial = bytearray()
        self._dropping = False

    def finish(self) -> None:
        self._end_line()
        self.file.seek(0)

    def __iter__(self) -> Iterator[bytes]:
        for raw in self.file:
            yield raw.rstrip(b"\n")

    def close(self) -> None:
        self.file.close()


@dataclass
class Page:
    offset: int
    spool: LineSpool
    total: int
    version: tuple[int, int] | None
    failed: bool = False  # given up on (or over a cap): empty, and says nothing of the next


# -- lines ------------------------------------------------------------------------------------


def envelope_spans(line: bytes) -> list[dict[str, Any]] | str:
    """The spans of one OTLP/JSON line, or why it is not one (as the index would skip
    it). Every level is checked: a `resourceSpans` that is a string, an item that is a
    number or `spans` that is an object once ended every sync with a TypeError."""
    try:
        env = orjson.loads(line)
    except orjson.JSONDecodeError:
        return "not JSON"
    if not isinstance(env, dict) or not isinstance(env.get("resourceSpans"), list):
        return "not an OTLP envelope (no resourceSpans list)"
    out: list[dict[str, Any]] = []
    for rs in env["resourceSpans"]:
        if not isinstance(rs, dict) or not isinstance(rs.get("scopeSpans", []), list):
            return "not an OTLP envelope (a resourceSpans item is not an object)"
        for ss in rs.get("scopeSpans") or []:
            if not isinstance(ss, dict) or not isinstance(ss.get("spans", []), list):
                return "not an OTLP envelope (a scopeSpans item is not an object)"
            out.extend(s for s in ss.get("spans") or [] if isinstance(s, dict))
    return out


def _spans(line: bytes) -> list[dict[str, Any]]:
    got = envelope_spans(line)
    return got if isinstance(got, list) else []


def span_start(span: dict[str, Any]) -> int | None:
    """A span's start in ns, when it is one a clock can show (an int64 past 1970)."""
    raw = span.get("startTimeUnixNano")
    if isinstance(raw, bool):
        return None
    if isinstance(raw, str) and raw.isascii() and raw.isdigit() and len(raw) <= 19:
        value = int(raw)
    elif isinstance(raw, int):
        value = raw
    else:
        return None
    return value if 0 < value < 2**63 else None


def _start(line: bytes) -> int:
    return max((s for sp in _spans(line) if (s := span_start(sp)) is not None), default=0)


def _digest(line: bytes) -> str:
    return hashlib.md5(line, usedforsecurity=False).hexdigest()


def _unique(lines: Iterable[bytes]) -> list[bytes]:
    return list(dict.fromkeys(lines))


def _ids(lines: Iterable[bytes]) -> tuple[set[str], set[str]]:
    """Span ids in these lines, and the parent ids they refer to."""
    ids: set[str] = set()
    parents: set[str] = set()
    for line in lines:
        _ids_of(_spans(line), ids, parents)
    return ids, parents


def _ids_of(spans: list[dict[str, Any]], ids: set[str], parents: set[str]) -> None:
    for s in spans:
        if isinstance(s.get("spanId"), str) and s["spanId"]:
            ids.add(s["spanId"])
        if isinstance(s.get("parentSpanId"), str) and s["parentSpanId"]:
            parents.add(s["parentSpanId"])


# -- the saved state -----------------------------------------------------------------------------


def _strings(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def checked_state(raw: Any, now_ns: int) -> tuple[dict[str, Any], bool]:
    """The state a sync starts from, and whether it had to be reset. A value that cannot
    be used (a start past any clock, a list that is not one) resets what depends on it:
    a start of 1e26 ns once failed every later sync until the cache was deleted."""
    fresh: dict[str, Any] = {"newest_start_ns": None, "recent": [], "span_ids": [],
                             "absent_parents": [], "segments": 0}  # fmt: skip
    if not isinstance(raw, dict):
        return fresh, raw is not None
    newest = raw.get("newest_start_ns")
    segments = raw.get("segments")
    ok_newest = newest is None or (
        isinstance(newest, int)
        and not isinstance(newest, bool)
        and 0 < newest <= now_ns + FUTURE_SLACK_NS
    )
    ok_segments = isinstance(segments, int) and not isinstance(segments, bool) and segments >= 0
    state = {
        "newest_start_ns": newest if ok_newest else None,
        "recent": _strings(raw.get("recent")),
        "span_ids": _strings(raw.get("span_ids")),
        "absent_parents": _strings(raw.get("absent_parents")),
        "segments": segments if ok_segments else 0,
    }
    return state, not (ok_newest and ok_segments)


# -- the private cache -----------------------------------------------------------------------------


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
        self.client = client or Client.from_env(guid)
        self.folder = folder
        self.progress = progress
        self._read = 0
        self._total = 0
        self.warnings: list[str] = []
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
                f"{PREFIX}{self.guid}: the cache's sync state could not be used; "
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
                f"{PREFIX}{self.guid}: {self._skipped_count:,} line(s) skipped: {named}"
                + (f" (and {more:,} more)" if more > 0 else "")
            )
        result.warnings = list(self.warnings)
        result.files = self.files()
        return result

    def _download(self, since: int | None, now_ns: int, recent: set[str], tmp: Path) -> Written:
        """Every line since `since` into `tmp` (gzip), each once; what it held."""
        out = Written(now_ns, recent)
        with private_file(tmp) as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=5) as gz:
            for page in asyncio.run(self._fetch(since, now_ns, out)):
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

    async def _fetch(self, since_ns: int | None, now_ns: int, out: Written) -> list[Page]:
        import httpx  # here, not at the top: see _request

        window = {"to": window_param(now_ns, PAD_TO_S)}
        if since_ns is not None:
            window["from"] = window_param(since_ns, -PAD_FROM_NS / 1e9)
        deadline = Limits.deadline()
        timeout = httpx.Timeout(deadline, connect=min(RetrySettings.connect_timeout, deadline))
        async with httpx.AsyncClient(
            headers={"Authorization": f"Key {self.client.key}"},
            timeout=timeout,
            follow_redirects=True,
        ) as http:
            url = self.client.url("content", self.guid, "traces")
            first = await self._get(http, url, 0, window)
            if first is None:  # 404: an older server keeps traces per job
                return await self._job_pages(http, since_ns)
            pages = [first, *await self._more_pages(http, url, window, first, out)]
            if first.version is None or first.version >= NEW_TRACE_STORE:
                pages += await self._job_pages(http, since_ns)  # old per-job files
            return pages

    async def _more_pages(
        self, http: httpx.AsyncClient, url: str, window: dict[str, Any], first: Page, out: Written
    ) -> list[Page]:
        """The pages after the first, a few in flight, each issued as one arrives: paging
        ends at an empty page, a short one, one with nothing new, the total the server
        gave, or the hard maximum, whichever comes first (a total of 10^12 once queued
        every page up front; a server whose pages never end was read forever)."""
        self._count(first.spool.lines, first.total)
        if first.spool.lines == 0:
            return []
        limit = min(first.total, Limits.pages() * PAGE)
        pages: list[Page] = []
        offset, ended = first.spool.lines, first.spool.lines < PAGE
        seen = PageNews(first)
        running: dict[asyncio.Task[Page | None], int] = {}
        while True:
            while not ended and offset < limit and len(running) < MAX_PAGES_IN_FLIGHT:
                running[asyncio.create_task(self._get(http, url, offset, window))] = offset
                offset += PAGE
            if not running:
                break
            done, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                running.pop(task)
                page = task.result()
                if page is None:
                    ended = True
                    continue
                pages.append(page)
                self._count(page.spool.lines, first.total)
                short = page.spool.lines < PAGE and not page.failed
                if short or not seen.news(page):
                    ended = True
        if offset >= Limits.pages() * PAGE and first.total > offset:
            self.warnings.append(
                f"{PREFIX}{self.guid}: stopped after {Limits.pages():,} pages "
                f"(TRAJECTORY_CONNECT_MAX_PAGES); the server said {first.total:,} spans"
            )
        return pages

    async def _job_pages(self, http: httpx.AsyncClient, since_ns: int | None) -> list[Page]:
        jobs = await self._get_json(http, self.client.url("content", self.guid, "jobs"))
        # a job key goes into a request path: plain names only
        keys = [str(j["key"]) for j in jobs if isinstance(j, dict) and "key" in j]
        keys = [k for k in keys if re.fullmatch(r"[A-Za-z0-9_-]{1,128}", k)]
        params = {}
        if since_ns is not None:
            params["since"] = window_param(since_ns, -PAD_FROM_NS / 1e9)
        gate = asyncio.Semaphore(MAX_JOBS_IN_FLIGHT)

        async def job(key: str) -> list[Page]:
            url = self.client.url("content", self.guid, "jobs", key, "traces")
            out: list[Page] = []
            offset = 0
            news: PageNews | None = None
            async with gate:
                for _ in range(Limits.pages()):
                    page = await self._get(http, url, offset, params)
                    if page is None:  # a job without a trace file
                        return out
                    out.append(page)
                    offset += page.spool.lines
                    self._count(page.spool.lines, 0)
                    news = news or PageNews(page)
                    if (
                        not page.spool.lines
                        or offset >= page.total
                        or (len(out) > 1 and not news.news(page))
                    ):
                        return out
            return out

        results = await asyncio.gather(*(job(k) for k in keys))
        return [p for pages in results for p in pages]

    def _count(self, n: int, total: int) -> None:
        self._read += n
        self._total = max(self._total, min(total, Limits.pages() * PAGE), self._read)
        if self.progress is not None:
            self.progress(self._read, self._total)

    # -- HTTP -----------------------------------------------------------------------------

    async def _get(
        self, http: httpx.AsyncClient, url: str, offset: int, params: dict[str, Any]
    ) -> Page | None:
        """One page, retried on timeouts, dropped connections, 5xx and 429 with backoff;
        None for a 404. A page that still fails, or one over a cap, is an empty page and
        a warning: what was read is kept."""
        wait = RetrySettings.first_wait
        last = ""
        query = {**params, "limit": PAGE, "offset": offset}
        for attempt in range(RetrySettings.tries):
            try:
                return await asyncio.wait_for(
                    self._get_once(http, url, offset, query), Limits.deadline()
                )
            except TimeoutError:
                last = f"no whole answer within {Limits.deadline():g} s"
            except PageFailed as exc:
                last = str(exc)
            except PageRefused as exc:
                self.warnings.append(f"{PREFIX}{self.guid}: page at offset {offset}: {exc}")
                return failed_page(offset)
            if attempt + 1 < RetrySettings.tries:
                await asyncio.sleep(wait)
                wait *= 2
        self.warnings.append(
            f"{PREFIX}{self.guid}: gave up on the page at offset {offset} after "
            f"{RetrySettings.tries} tries ({last}); kept what was read"
        )
        return failed_page(offset)

    async def _get_once(
        self, http: httpx.AsyncClient, url: str, offset: int, query: dict[str, Any]
    ) -> Page | None:
        import httpx

        spool = LineSpool(settings.max_line_bytes())
        try:
            async with http.stream("GET", url, params=query) as resp:
                self._check_status(resp)
                if resp.status_code == 404:
                    spool.close()
                    return None
                received, decompressed = Limits.received(), Limits.decompressed()
                got = 0
                async for chunk in resp.aiter_bytes():
                    got += len(chunk)
                    if resp.num_bytes_downloaded > received:
                        raise PageRefused(
                            f"over {received // MB} MB (TRAJECTORY_CONNECT_MAX_RESPONSE_MB)"
                        )
                    if got > decompressed:
                        raise PageRefused(
                            f"over {decompressed // MB} MB decompressed "
                            "(TRAJECTORY_CONNECT_MAX_DECOMPRESSED_MB)"
                        )
                    spool.feed(chunk)
                spool.finish()
                total = _total(resp.headers.get("X-Total-Count"), offset + spool.lines)
                return Page(offset, spool, total, server_version(resp.headers.get("Server")))
        except httpx.HTTPError as exc:
            spool.close()
            raise PageFailed(type(exc).__name__) from None
        except BaseException:
            spool.close()
            raise

    def _check_status(self, resp: httpx.Response) -> None:
        code = resp.status_code
        if code in (401, 403):
            raise SourceError(
                f"{PREFIX}{self.guid}: Connect refused the traces of content "
                f"{self.guid} (HTTP {code}): reading traces needs "
                "collaborator (owner) access for the CONNECT_API_KEY user"
            )
        if code == 429 or code >= 500:
            raise PageFailed(f"HTTP {code}")
        if code >= 400 and code != 404:
            raise SourceError(f"{PREFIX}{self.guid}: Connect answered HTTP {code}")

    async def _get_json(self, http: httpx.AsyncClient, url: str) -> list[Any]:
        page = await self._get(http, url, 0, {})
        if page is None:
            return []
        try:
            page.spool.file.seek(0)
            body = page.spool.file.read()
            value = orjson.loads(body) if body.strip() else []
        except (orjson.JSONDecodeError, OSError):
            value = []
        finally:
            page.spool.close()
        return value if isinstance(value, list) else []


def _total(header: str | None, fallback: int) -> int:
    text = (header or "").strip()
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 18 else fallback


def failed_page(offset: int) -> Page:
    spool = LineSpool(1)
    spool.finish()
    return Page(offset, spool, 0, None, failed=True)


class PageNews:
    """Whether a page brought any line this sync had not seen: a server that ignores
    `offset` answers every page alike, and paging would never end."""

    def __init__(self, first: Page) -> None:
        self._seen = {_digest(ln) for ln in first.spool}
        first.spool.file.seek(0)

    def news(self, page: Page) -> bool:
        if page.failed:
            return True  # a failed page says nothing about the next
        digests = {_digest(ln) for ln in page.spool}
        page.spool.file.seek(0)
        new = not digests <= self._seen
        self._seen |= digests
        return new or not digests


class Written:
    """What a download wrote: lines kept once, span ids, parents, the newest start."""

    def __init__(self, now_ns: int, recent: set[str]) -> None:
        self.now_ns = now_ns
        self.seen = set(recent)  # written by an earlier sync inside the padded window
        self.ids: set[str] = set()
        self.parents: set[str] = set()
        self.newest = 0
        self.written = 0
        self.starts: list[tuple[int, str]] = []  # (start, digest), for the next `recent`

    def take(self, line: bytes, spans: list[dict[str, Any]], gz: gzip.GzipFile) -> None:
        digest = _digest(line)
        start = max((s for sp in spans if (s := span_start(sp)) is not None), default=0)
        if start > self.now_ns + FUTURE_SLACK_NS:
            start = 0  # a clock far ahead: kept, never the window of the next sync
        self.starts.append((start, digest))
        _ids_of(spans, self.ids, self.parents)
        self.newest = max(self.newest, start)
        if digest in self.seen:
            return
        self.seen.add(digest)
        gz.write(line + b"\n")
        self.written += 1

    @property
    def recent(self) -> set[str]:
        horizon = self.newest - PAD_FROM_NS - 10**9
        return {d for s, d in self.starts if s >= horizon}


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
            if not _PROCESS_DIR:  # a private, unpredictable folder, not /tmp/<pid>
                _PROCESS_DIR.append(Path(tempfile.mkdtemp(prefix="trajectory-review-connect-")))
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
            raise SourceError(f"{PREFIX}{self.guid}: no traces read from Posit Connect yet")
        return segments
