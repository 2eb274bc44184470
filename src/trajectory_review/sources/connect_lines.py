"""A response's lines as they arrive (spooled to disk, a line over the cap dropped and
counted), what a line from Connect's traces API holds (its spans, checked at every level as the
index checks a file's), what a sync wrote of them (each line once, the span ids and the
parents they name, the newest start), and the saved state a sync starts from, checked
when read."""

from __future__ import annotations

import gzip
import hashlib
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any

import orjson

MB = 1024 * 1024

PAD_FROM_NS = 3600 * 10**9  # an hour before: parents start before their children
FUTURE_SLACK_NS = 86_400 * 10**9  # a start this far past now is a bad clock, not a window


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


def line_start(line: bytes) -> int:
    """The newest start of a line's spans (0 when none has one a clock can show)."""
    return max((s for sp in _spans(line) if (s := span_start(sp)) is not None), default=0)


def digest(line: bytes) -> str:
    return hashlib.md5(line, usedforsecurity=False).hexdigest()


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
        key = digest(line)
        start = max((s for sp in spans if (s := span_start(sp)) is not None), default=0)
        if start > self.now_ns + FUTURE_SLACK_NS:
            start = 0  # a clock far ahead: kept, never the window of the next sync
        self.starts.append((start, key))
        _ids_of(spans, self.ids, self.parents)
        self.newest = max(self.newest, start)
        if key in self.seen:
            return
        self.seen.add(key)
        gz.write(line + b"\n")
        self.written += 1

    @property
    def recent(self) -> set[str]:
        horizon = self.newest - PAD_FROM_NS - 10**9
        return {d for s, d in self.starts if s >= horizon}


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


def total_count(header: str | None, fallback: int) -> int:
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
        self._seen = {digest(ln) for ln in first.spool}
        first.spool.file.seek(0)

    def news(self, page: Page) -> bool:
        if page.failed:
            return True  # a failed page says nothing about the next
        digests = {digest(ln) for ln in page.spool}
        page.spool.file.seek(0)
        new = not digests <= self._seen
        self._seen |= digests
        return new or not digests
