"""Connect's traces API over HTTP: where a `connect:` location points (the content GUID),
the server and key, and the pages of one content's traces, each response streamed to
disk under caps on the bytes received and decompressed and a deadline, retried with
backoff, paged as far as the pages say (docs/connect.md)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import orjson

from trajectory_review import settings
from trajectory_review.sources.base import SourceError
from trajectory_review.sources.connect_lines import (
    MB,
    PAD_FROM_NS,
    LineSpool,
    Page,
    PageFailed,
    PageNews,
    PageRefused,
    failed_page,
    total_count,
)
from trajectory_review.sources.locations import CONNECT_PREFIX, is_connect

if TYPE_CHECKING:
    import asyncio

    import httpx

# asyncio (and ssl with it) is imported by the coroutines that use it, as httpx is: this
# module is imported by every command through the sources' registry, and at the top it
# delayed the start of every index build, on files too (docs/performance-log.md,
# "asyncio after the build starts").

PAGE = 1000
PAD_TO_S = 1
MAX_JOBS_IN_FLIGHT = 20
MAX_PAGES_IN_FLIGHT = 4
NEW_TRACE_STORE = (2026, 7)  # traces moved to the content endpoint in this version
_VERSION = re.compile(r"Posit Connect v(\d+)\.(\d+)(?:\.(\d+))?")
# A content GUID, alone or inside the content's URL as Connect's dashboard shows it
# (…/connect/#/apps/<guid>/…, …/content/<guid>/): fixed widths, linear on any input.
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_URL_GUID = re.compile(r"/(?:apps|content)/([0-9a-fA-F-]{36})(?:[/?#]|$)")


def content_guid(location: str) -> str:
    """The content GUID a `connect:` location names: a UUID, or a content URL holding
    one. Anything else is refused (it would reach request paths and file names)."""
    rest = location[len(CONNECT_PREFIX) :].strip() if is_connect(location) else location.strip()
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
                f"{CONNECT_PREFIX}{guid}: set {' and '.join(missing)} "
                "to read traces from Posit Connect"
            )
        server = server.rstrip("/")
        if server.endswith("/__api__"):
            server = server[: -len("/__api__")]
        return cls(server.rstrip("/"), key)

    def url(self, *parts: str) -> str:
        return "/".join([self.server, "__api__", "v1", *parts])


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


class TracesAPI:
    """One content's traces as Connect's API pages them, read under every cap: the
    content endpoint, the per-job files of an older server, a few requests in flight.
    What went wrong on the way is in `warnings`, one line each."""

    def __init__(
        self, guid: str, client: Client, progress: Callable[[int, int], None] | None = None
    ) -> None:
        self.guid = guid
        self.client = client
        self.progress = progress
        self.warnings: list[str] = []
        self._read = 0
        self._total = 0

    async def fetch(self, since_ns: int | None, now_ns: int) -> list[Page]:
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
            pages = [first, *await self._more_pages(http, url, window, first)]
            if first.version is None or first.version >= NEW_TRACE_STORE:
                pages += await self._job_pages(http, since_ns)  # old per-job files
            return pages

    async def _more_pages(
        self, http: httpx.AsyncClient, url: str, window: dict[str, Any], first: Page
    ) -> list[Page]:
        """The pages after the first, a few in flight, each issued as one arrives: paging
        ends at an empty page, a short one, one with nothing new, the total the server
        gave, or the hard maximum, whichever comes first (a total of 10^12 once queued
        every page up front; a server whose pages never end was read forever)."""
        import asyncio

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
                f"{CONNECT_PREFIX}{self.guid}: stopped after {Limits.pages():,} pages "
                f"(TRAJECTORY_CONNECT_MAX_PAGES); the server said {first.total:,} spans"
            )
        return pages

    async def _job_pages(self, http: httpx.AsyncClient, since_ns: int | None) -> list[Page]:
        import asyncio

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

    async def _get(
        self, http: httpx.AsyncClient, url: str, offset: int, params: dict[str, Any]
    ) -> Page | None:
        """One page, retried on timeouts, dropped connections, 5xx and 429 with backoff;
        None for a 404. A page that still fails, or one over a cap, is an empty page and
        a warning: what was read is kept."""
        import asyncio

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
                self.warnings.append(f"{CONNECT_PREFIX}{self.guid}: page at offset {offset}: {exc}")
                return failed_page(offset)
            if attempt + 1 < RetrySettings.tries:
                await asyncio.sleep(wait)
                wait *= 2
        self.warnings.append(
            f"{CONNECT_PREFIX}{self.guid}: gave up on the page at offset {offset} after "
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
                total = total_count(resp.headers.get("X-Total-Count"), offset + spool.lines)
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
                f"{CONNECT_PREFIX}{self.guid}: Connect refused the traces of content "
                f"{self.guid} (HTTP {code}): reading traces needs "
                "collaborator (owner) access for the CONNECT_API_KEY user"
            )
        if code == 429 or code >= 500:
            raise PageFailed(f"HTTP {code}")
        if code >= 400 and code != 404:
            raise SourceError(f"{CONNECT_PREFIX}{self.guid}: Connect answered HTTP {code}")

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
