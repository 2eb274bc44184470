"""A stand-in for Posit Connect's traces API, served on 127.0.0.1 for the tests.

It implements the documented behaviour the `connect:` source relies on, quirks included
(checked against Connect's API reference and commons' client, posit-dev/commons
R/connect.R): `Authorization: Key <key>`; `GET /__api__/v1/content/{guid}/traces` with
`limit`/`offset` paging, the total in `X-Total-Count`, rows newest first by span start,
`from`/`to` on span start over [from, to) and only in `%Y-%m-%dT%H:%M:%SZ` (any other
format is ignored, silently); `/jobs` and `/jobs/{key}/traces?since=` for the per-job
store; 404 on the content endpoint for servers older than 2026.07; the version in the
`Server` header; 401 for a wrong key, 403 for content the key's user does not own; and,
on request, pages that fail with 503 a number of times before they answer.

Hostile or broken servers, on request (`Hostile`): a total header that lies, pages that
ignore `offset` and never end, a body sent one byte at a time, a gzip bomb, and lines
stored as given (any JSON, or none).
"""

from __future__ import annotations

import functools
import gzip
import json
import re
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

_STAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")


def _bound(value: str | None) -> int | None:
    """A from/to/since bound in ns, or None when Connect would ignore it."""
    if not value or not _STAMP.match(value):
        return None
    return int(datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()) * (
        10**9
    )


@functools.cache
def _start(line: str) -> int:
    # remembered: every request filters and sorts the whole store by it; a line of any
    # other shape (the hostile ones) sorts as the oldest
    try:
        env = json.loads(line)
        return max(
            int(s["startTimeUnixNano"])
            for rs in env["resourceSpans"]
            for ss in rs["scopeSpans"]
            for s in ss["spans"]
        )
    except (ValueError, TypeError, KeyError, AttributeError):
        return 0


@dataclass
class Hostile:
    """How a hostile or broken server departs from Connect (all off by default)."""

    total: str | None = None  # X-Total-Count sent whatever the store holds
    ignore_offset: bool = False  # every page is the first one
    drip_seconds: float | None = None  # the body one byte at a time, this far apart
    gzip_bomb: int | None = None  # a gzip body of this many zero bytes, unpacked


@dataclass
class Content:
    lines: list[str] = field(default_factory=list)  # the content endpoint's store
    jobs: dict[str, list[str]] = field(default_factory=dict)  # per-job stores
    forbidden: bool = False


class ConnectStandIn:
    def __init__(self, key: str = "test-key", version: str = "2026.08.0") -> None:
        self.key = key
        self.version = version  # "2026.05.1": no content endpoint (404), per-job only
        self.contents: dict[str, Content] = defaultdict(Content)
        self.requests: list[tuple[str, dict[str, list[str]]]] = []
        self.flaky: dict[tuple[str, int], int] = {}  # (path, offset) -> failures left
        self.always_failing: set[tuple[str, int]] = set()
        self.hostile = Hostile()
        self._lock = threading.Lock()
        standin = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                standin._get(self)

            def do_POST(self) -> None:
                standin._post(self)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()

    @property
    def new_store(self) -> bool:
        major, minor = (int(x) for x in self.version.split(".")[:2])
        return (major, minor) >= (2026, 7)

    def add(self, guid: str, lines: list[str], job: str | None = None) -> None:
        with self._lock:
            c = self.contents[guid]
            (c.jobs.setdefault(job, []) if job else c.lines).extend(lines)

    # -- HTTP -----------------------------------------------------------------------------

    def _send(self, h: BaseHTTPRequestHandler, status: int, body: bytes, **headers: str) -> None:
        h.send_response(status)
        h.send_header("Server", f"Posit Connect v{self.version}")
        for k, v in headers.items():
            h.send_header(k.replace("_", "-"), v)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)

    def _get(self, h: BaseHTTPRequestHandler) -> None:
        url = urlparse(h.path)
        q = parse_qs(url.query)
        with self._lock:
            self.requests.append((url.path, q))
        if h.headers.get("Authorization") != f"Key {self.key}":
            return self._send(h, 401, b'{"error":"unauthorized"}')
        m = re.fullmatch(r"/__api__/v1/content/([^/]+)/(traces|jobs)(?:/([^/]+)/traces)?", url.path)
        if not m:
            return self._send(h, 404, b"{}")
        guid, what, job = m.groups()
        content = self.contents.get(guid)
        if content is None:
            return self._send(h, 404, b'{"error":"no such content"}')
        if content.forbidden:
            return self._send(h, 403, b'{"error":"forbidden"}')
        offset = int((q.get("offset") or ["0"])[0])
        key = (url.path, offset)
        with self._lock:
            if key in self.always_failing or self.flaky.get(key, 0) > 0:
                if key in self.flaky:
                    self.flaky[key] -= 1
                return self._send(h, 503, b"busy")
        if what == "jobs" and job is None:
            if not content.jobs:
                return self._send(h, 200, b"[]", Content_Type="application/json")
            body = json.dumps([{"key": k, "id": str(i)} for i, k in enumerate(content.jobs)])
            return self._send(h, 200, body.encode(), Content_Type="application/json")
        if job is None and not self.new_store:
            return self._send(h, 404, b'{"error":"not found"}')
        lines = list(content.jobs.get(job, []) if job else content.lines)
        lo = _bound(((q.get("since") if job else q.get("from")) or [None])[0])
        hi = None if job else _bound((q.get("to") or [None])[0])
        lines = [
            ln
            for ln in lines
            if (lo is None or _start(ln) >= lo) and (hi is None or _start(ln) < hi)
        ]
        lines.sort(key=_start, reverse=True)  # newest first by span start
        limit = int((q.get("limit") or ["1000"])[0])
        bad = self.hostile
        start = 0 if bad.ignore_offset else offset
        page = lines[start : start + limit]
        body = "".join(ln + "\n" for ln in page).encode()
        total = bad.total if bad.total is not None else str(len(lines))
        if bad.gzip_bomb is not None:
            body = gzip.compress(b"0" * bad.gzip_bomb, compresslevel=9)
            return self._send(
                h, 200, body, Content_Type="application/x-ndjson", Content_Encoding="gzip",
                X_Total_Count=total,
            )  # fmt: skip
        if bad.drip_seconds is not None:
            return self._drip(h, body, bad.drip_seconds, total)
        return self._send(h, 200, body, Content_Type="application/x-ndjson", X_Total_Count=total)

    def _drip(self, h: BaseHTTPRequestHandler, body: bytes, pause: float, total: str) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "application/x-ndjson")
        h.send_header("X-Total-Count", total)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        try:
            for i in range(len(body)):
                h.wfile.write(body[i : i + 1])
                h.wfile.flush()
                time.sleep(pause)
        except OSError:
            pass  # the reader gave up and closed the connection

    def _post(self, h: BaseHTTPRequestHandler) -> None:
        # not part of Connect: how a test hands the stand-in a new trace over HTTP
        m = re.fullmatch(r"/__test__/content/([^/]+)/traces", urlparse(h.path).path)
        if not m:
            return self._send(h, 404, b"{}")
        body = h.rfile.read(int(h.headers["Content-Length"])).decode()
        self.add(m.group(1), [ln for ln in body.splitlines() if ln.strip()])
        return self._send(h, 204, b"")
