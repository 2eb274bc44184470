"""The one citation scanner, used live (verify) and in replay (recorded decisions).

The scanner copies model text through unchanged, except for the reserved markup:
`<commons-citation>` blocks become server-authored asides or nothing, model-written
`<shiny-aside>` elements are dropped with their bodies, artifact documents
(`<artifact …>` / `<commons-artifact …>`, today's commons) become artifact segments the
page shows as a chip, and stray closing tags vanish.
It is incremental and chunk-invariant: partial reserved tags are held back between
chunks, so the output never depends on how the stream was cut.

Why a rejected citation renders nothing: an unverified quote that looked like a source
would borrow the trust of the verified ones. The user never saw it, so neither does the
reviewer's transcript (the review-audit aside counts it instead).

Long on purpose: the one scanner, live and in replay, with the artifact rules.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, Protocol

import msgspec

OPEN_CITATION = "<commons-citation>"
CLOSE_CITATION = "</commons-citation>"
OPEN_ASIDE = "<shiny-aside"  # followed by whitespace, "/" or ">" to count
CLOSE_ASIDE = "</shiny-aside>"
MAX_BODY = 16_384
KINDS = ("prose", "definition", "schema")
MIN_QUOTE = 10
# An artifact: `<artifact` or `<commons-artifact` at the start of a line, then blanks or
# `>` (`<commons-artifact-link` is another element), quoted attributes on that one line
# (an `id` that is a lowercase slug, a `title` defaulting to it), the body, then the
# close tag of the same name. Anything else of the kind is swallowed whole: a header
# broken across lines or unquoted, a missing or unslugged id, a header or a body past
# its cap, an element never closed. The live chat never showed an artifact's body as
# answer text (it stored the document and showed a chip in its place).
ARTIFACT_OPENS = {"<artifact": "</artifact>", "<commons-artifact": "</commons-artifact>"}
MAX_ARTIFACT_HEADER = 1_024
MAX_ARTIFACT_BODY = 200_000
_SLUG = re.compile(r"[a-z0-9][a-z0-9_-]{0,127}")
_ATTRIBUTE = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_:.-]*)\s*=\s*(?:\"([^\"]*)\"|'([^']*)')")

# Literals whose prefix at the end of the buffer must be held back for the next chunk.
# The aside and artifact openers need one more character to know whether they are tags.
_HOLD = (
    OPEN_CITATION, CLOSE_CITATION, CLOSE_ASIDE, OPEN_ASIDE + " ",
    *(o + " " for o in ARTIFACT_OPENS), *ARTIFACT_OPENS.values(),
)  # fmt: skip
_LONGEST = max(len(h) for h in _HOLD)
_HOLD_PREFIXES = frozenset(lit[:i] for lit in _HOLD for i in range(len(lit)))
_IN_BODY = re.compile(
    r"</commons-citation>|<commons-citation>|</shiny-aside>|<shiny-aside[\s/>]"
    r"|</(?:commons-)?artifact>|<(?:commons-)?artifact[\s>]",
    re.I,
)
_TEXT_STOP = re.compile(r"<")
_LT_RUN = re.compile(r"<+")
_CLOSE = {
    close: re.compile(re.escape(close), re.I)
    for close in (CLOSE_ASIDE, CLOSE_CITATION, *ARTIFACT_OPENS.values())
}


class TextSegment(msgspec.Struct, frozen=True, gc=False):
    text: str


class AsideSegment(msgspec.Struct, frozen=True, gc=False):
    """A server-authored citation aside. reason and quote are model text."""

    label: str
    kind: str
    reason: str
    quote: str


class ArtifactSegment(msgspec.Struct, frozen=True, gc=False):
    """A document the model handed the user. id, title and body are model text."""

    id: str
    title: str
    body: str


Segment = TextSegment | AsideSegment | ArtifactSegment


class ParsedCitation(msgspec.Struct, frozen=True, gc=False):
    quote: str
    reason: str


class Resolution(msgspec.Struct, frozen=True, gc=False):
    decision: dict[str, Any] | None  # what was decided (live) or consumed (replay)
    aside: AsideSegment | None


class Resolver(Protocol):
    def resolve(self, citation: ParsedCitation | None) -> Resolution:
        """citation is None for a malformed body."""
        ...


# -- parsing and normalising ------------------------------------------------------------


_QUOTE_RUN = re.compile(r"(?:^>[^\n]*(?:\n|\Z))+", re.M)


def parse_body(body: str) -> ParsedCitation | None:
    """One contiguous run of `>` lines is the quote; every other line is the reason."""
    found = _QUOTE_RUN.finditer(body)
    m = next(found, None)
    if m is None or next(found, None) is not None:  # no run, or more than one
        return None
    run = m.group(0)
    lines = run[:-1].split("\n") if run.endswith("\n") else run.split("\n")
    quote = "\n".join(line[2:] if line.startswith("> ") else line[1:] for line in lines)
    reason = (body[: m.start()] + body[m.end() :]).strip(TRIM)
    return ParsedCitation(quote=quote, reason=reason)


# What commons trims (R's trimws): spaces, tabs and line ends, nothing else, so the
# aside's text is byte for byte what the live chat streamed.
TRIM = " \t\r\n"


_NORMALISE = str.maketrans(
    {
        "*": None,
        "_": None,
        "`": None,
        "\u2018": "'",
        "\u2019": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u2013": "-",
        "\u2014": "-",
    }
)


def normalise_quote(text: str) -> str:
    # str.split() splits on runs of Unicode whitespace and drops the ends: collapse + trim
    if text.isascii():  # the table's other characters are not ASCII: three removals do
        if "*" in text or "_" in text or "`" in text:
            text = text.replace("*", "").replace("_", "").replace("`", "")
        return " ".join(text.split())
    return " ".join(text.translate(_NORMALISE).split())


# -- the scanner -------------------------------------------------------------------------

_TEXT, _CITATION, _DROP_ASIDE, _DROP_CITATION, _ART_HEAD, _ART_BODY, _DROP_ART = range(7)


class CitationScanner:
    """feed(chunk) -> segments ready now; finish() -> the tail. See module docstring."""

    def __init__(self, resolver: Resolver):
        self._resolver = resolver
        self._buf = ""
        self._mode = _TEXT
        self._body: list[str] = []
        self._body_len = 0
        self._line_start = True  # is _buf[0] at column 0 of the raw input?
        self._text: list[str] = []
        self._ready: list[Segment] = []
        self.decisions: list[dict[str, Any] | None] = []
        self._finished = False
        self._art_close = ""  # the close tag of the artifact open now
        self._art_head: list[str] = []
        self._art_head_len = 0
        self._art_quote = ""  # the quote the header is inside, if any
        self._art_meta: tuple[str, str] | None = None  # (id, title)

    def feed(self, chunk: str) -> list[Segment]:
        if self._finished:
            raise RuntimeError("scanner already finished")
        self._buf += chunk
        self._process(final=False)
        return self._take()

    def finish(self) -> list[Segment]:
        if not self._finished:
            self._process(final=True)
            # Whatever element is still open is incomplete model markup: never shown.
            self._buf = ""
            self._body = []
            self._mode = _TEXT
            self._finished = True
        return self._take()

    # -- internals ---------------------------------------------------------------------

    def _take(self) -> list[Segment]:
        self._flush_text()
        out, self._ready = self._ready, []
        return out

    def _flush_text(self) -> None:
        if self._text:
            self._ready.append(TextSegment("".join(self._text)))
            self._text = []

    def _emit_text(self, s: str) -> None:
        # Text around an aside is kept exactly, whitespace included: dropping the blank
        # line before an aside glued it to a closing code fence (the rest of the answer
        # rendered as code) or to a table row (the pill vanished). posit-dev/commons#127.
        if s:
            self._text.append(s)

    def _consumed(self, raw: str) -> None:
        if raw:
            self._line_start = raw[-1] == "\n"

    # Long on purpose: the scanner's state machine as one loop (split, each branch would
    # pass its state around).
    def _process(self, final: bool) -> None:
        buf = self._buf
        pos = 0
        n = len(buf)
        while pos < n:
            if self._mode == _TEXT:
                m = _TEXT_STOP.search(buf, pos)
                if m is None:
                    self._emit_text(buf[pos:])
                    self._consumed(buf[pos:])
                    pos = n
                    break
                i = m.start()
                if i > pos:
                    self._emit_text(buf[pos:i])
                    self._consumed(buf[pos:i])
                    pos = i
                run = _LT_RUN.match(buf, pos)
                if run is not None and run.end() - pos > 1:
                    # Every reserved tag opens with "<" then a letter or "/": of a run of
                    # "<", only the last can open one. The rest are text, taken at once:
                    # one at a time, a reply made of "<" was the scanner's slowest input
                    # per KB (docs/performance-log.md, "Twice as fast on the hot path").
                    self._emit_text(buf[pos : run.end() - 1])
                    self._line_start = False
                    pos = run.end() - 1
                head = buf[pos : pos + _LONGEST].lower()
                if head.startswith(CLOSE_CITATION) or head.startswith(CLOSE_ASIDE):
                    length = len(CLOSE_CITATION if head.startswith(CLOSE_CITATION) else CLOSE_ASIDE)
                    self._consumed(buf[pos : pos + length])
                    pos += length
                elif head.startswith(OPEN_ASIDE) and len(head) > len(OPEN_ASIDE):
                    if head[len(OPEN_ASIDE)] in " \t\r\n\f\v/>":
                        self._mode = _DROP_ASIDE
                        self._consumed(buf[pos : pos + len(OPEN_ASIDE)])
                        pos += len(OPEN_ASIDE)
                    else:
                        self._literal_lt()
                        pos += 1
                elif head.startswith(OPEN_CITATION) and self._line_start:
                    self._mode = _CITATION
                    self._body, self._body_len = [], 0
                    self._consumed(OPEN_CITATION)
                    pos += len(OPEN_CITATION)
                elif (close := _closing_artifact(head)) is not None:
                    self._consumed(close)  # a stray close tag: dropped
                    pos += len(close)
                elif (opener := _opening_artifact(head)) is not None and self._line_start:
                    self._mode = _ART_HEAD
                    self._art_close = ARTIFACT_OPENS[opener]
                    self._art_head, self._art_head_len, self._art_quote = [], 0, ""
                    self._consumed(opener)
                    pos += len(opener)
                elif not final and _could_become_tag(head) and pos + len(head) == n:
                    break  # hold back: the next chunk decides
                else:
                    self._literal_lt()
                    pos += 1
            elif self._mode == _ART_HEAD:
                pos = self._artifact_header(buf, pos)
            elif self._mode == _ART_BODY:
                found = _CLOSE[self._art_close].search(buf, pos)
                if found is None:
                    keep = n if final else max(pos, n - (len(self._art_close) - 1))
                    self._add_body(buf[pos:keep])
                    pos = keep
                    if self._body_len > MAX_ARTIFACT_BODY:
                        self._mode, self._body, self._body_len = _DROP_ART, [], 0
                        continue
                    break
                self._add_body(buf[pos : found.start()])
                self._consumed(found.group(0))
                pos = found.end()
                if self._body_len <= MAX_ARTIFACT_BODY and self._art_meta is not None:
                    self._flush_text()
                    self._ready.append(ArtifactSegment(*self._art_meta, "".join(self._body)))
                self._mode, self._body, self._body_len = _TEXT, [], 0
            elif self._mode == _CITATION:
                m = _IN_BODY.search(buf, pos)
                if m is None:
                    keep = pos if final else _hold_from(buf, pos)
                    if keep > pos:
                        self._add_body(buf[pos:keep])
                    if final:
                        pos = n
                    else:
                        pos = keep
                    if self._body_len > MAX_BODY:
                        self._mode = _DROP_CITATION
                        continue
                    break
                self._add_body(buf[pos : m.start()])
                self._consumed(m.group(0))
                pos = m.end()
                if m.group(0).lower() == CLOSE_CITATION and self._body_len <= MAX_BODY:
                    self._close_citation("".join(self._body))
                    self._mode = _TEXT
                elif m.group(0).lower() == CLOSE_CITATION:
                    self._mode = _TEXT  # over-long body: discarded, no decision
                else:
                    self._mode = _DROP_CITATION  # nested reserved tag: abandon
                self._body, self._body_len = [], 0
            else:
                close = {_DROP_ASIDE: CLOSE_ASIDE, _DROP_CITATION: CLOSE_CITATION}.get(
                    self._mode, self._art_close
                )
                found = _CLOSE[close].search(buf, pos)
                j = found.start() if found else -1
                if j < 0:
                    keep = n if final else max(pos, n - (len(close) - 1))
                    self._consumed(buf[pos:keep])
                    pos = keep
                    break
                self._consumed(buf[pos : j + len(close)])
                pos = j + len(close)
                self._mode = _TEXT
        self._buf = buf[pos:]

    def _artifact_header(self, buf: str, pos: int) -> int:
        """Read an artifact's open tag up to its `>` (outside quotes), on its line and
        within its cap; the header read, the body follows. Returns where it stopped."""
        n = len(buf)
        i = pos
        while i < n:
            ch = buf[i]
            if ch == "\n" or self._art_head_len + (i - pos) >= MAX_ARTIFACT_HEADER:
                break  # broken across lines, or past the cap: malformed
            if self._art_quote:
                if ch == self._art_quote:
                    self._art_quote = ""
            elif ch in "\"'":
                self._art_quote = ch
            elif ch == ">":
                header = "".join(self._art_head) + buf[pos:i]
                self._consumed(buf[pos : i + 1])
                self._art_meta = artifact_header(header)
                self._mode = _ART_BODY if self._art_meta is not None else _DROP_ART
                self._body, self._body_len = [], 0
                return i + 1
            i += 1
        else:  # the chunk ended inside the header: the next one goes on
            self._art_head.append(buf[pos:i])
            self._art_head_len += i - pos
            self._consumed(buf[pos:i])
            return i
        self._consumed(buf[pos:i])
        self._mode = _DROP_ART
        return i

    def _literal_lt(self) -> None:
        self._emit_text("<")
        self._line_start = False

    def _add_body(self, s: str) -> None:
        if s:
            self._body.append(s)
            self._body_len += len(s)
            self._consumed(s)

    def _close_citation(self, body: str) -> None:
        resolution = self._resolver.resolve(parse_body(body))
        self.decisions.append(resolution.decision)
        if resolution.aside is not None:
            self._flush_text()
            self._ready.append(resolution.aside)


def _could_become_tag(head: str) -> bool:
    """`head` is a proper prefix of a reserved literal: held back until more text says.
    A set lookup, not a pass over the literals: a run of `<` asks once per character."""
    return head in _HOLD_PREFIXES


def _closing_artifact(head: str) -> str | None:
    return next((c for c in ARTIFACT_OPENS.values() if head.startswith(c)), None)


def _opening_artifact(head: str) -> str | None:
    """The artifact opener `head` starts with, when the character after it is known and
    ends the name (blanks or `>`)."""
    for opener in ARTIFACT_OPENS:
        if head.startswith(opener) and len(head) > len(opener):
            return opener if head[len(opener)] in " \t\r\f\v>" else None
    return None


def artifact_header(header: str) -> tuple[str, str] | None:
    """(id, title) of an artifact's attributes (what follows the element's name up to
    its `>`), or None when they are malformed: an attribute unquoted, no id, an id that
    is not a lowercase slug."""
    attrs: dict[str, str] = {}
    pos = 0
    rest = header.rstrip(" \t\r\f\v")
    while pos < len(rest):
        m = _ATTRIBUTE.match(rest, pos)
        if m is None:
            return None
        attrs.setdefault(m.group(1).lower(), m.group(2) if m.group(2) is not None else m.group(3))
        pos = m.end()
    art_id = attrs.get("id")
    if art_id is None or not _SLUG.fullmatch(art_id):
        return None
    return art_id, attrs.get("title") or art_id


def _hold_from(buf: str, pos: int) -> int:
    """Where a possible partial reserved tag starts at the end of buf (len(buf) if none)."""
    start = max(pos, len(buf) - _LONGEST + 1)
    k = buf.find("<", start)
    while k >= 0:
        if _could_become_tag(buf[k:].lower()):
            return k
        k = buf.find("<", k + 1)
    return len(buf)


# -- whole-text helpers and markup -------------------------------------------------------


class ScanResult(msgspec.Struct, frozen=True, gc=False):
    segments: tuple[Segment, ...]
    decisions: tuple[dict[str, Any] | None, ...]


def merge_segments(segments: Iterable[Segment]) -> tuple[Segment, ...]:
    out: list[Segment] = []
    for seg in segments:
        if isinstance(seg, TextSegment):
            if not seg.text:
                continue
            if out and isinstance(out[-1], TextSegment):
                out[-1] = TextSegment(out[-1].text + seg.text)
                continue
        out.append(seg)
    return tuple(out)


def scan(text: str, resolver: Resolver, chunks: Iterable[str] | None = None) -> ScanResult:
    if chunks is None and "<" not in text:
        # No reserved markup can start without "<": the text passes through unchanged.
        return ScanResult((TextSegment(text),) if text else (), ())
    scanner = CitationScanner(resolver)
    segs: list[Segment] = []
    for chunk in chunks if chunks is not None else [text]:
        segs.extend(scanner.feed(chunk))
    segs.extend(scanner.finish())
    return ScanResult(merge_segments(segs), tuple(scanner.decisions))
