"""Review events: notes, flags and QA verdicts, in an append-only JSON-lines log.

Append-only because a review is evidence: nothing is edited or deleted, a later event
supersedes an earlier one (an unflag after a flag). Each append takes an exclusive file
lock and writes one whole line, so concurrent sessions and processes never interleave or
lose an event. A torn last line (a crash mid-write) is skipped when reading.
"""

from __future__ import annotations

import fcntl
import getpass
import json
import os
import threading
import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

EVENT_TYPES = ("note", "flag", "unflag", "verdict")
VERDICTS = ("correct", "false_positive")


@dataclass(frozen=True)
class ReviewEvent:
    type: str
    conversation_id: str
    author: str
    exchange: int | None = None  # None: the whole conversation
    text: str = ""
    rule: str | None = None  # verdicts only
    verdict: str | None = None  # verdicts only: correct | false_positive
    ts: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="milliseconds"))
    id: str = field(default_factory=lambda: uuid.uuid4().hex)

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False, separators=(",", ":"))


@dataclass
class ReviewState:
    """Everything the log says, folded: latest flag per target, notes, latest verdicts."""

    events: list[ReviewEvent] = field(default_factory=list)
    skipped_lines: int = 0

    def notes(self, conversation_id: str, exchange: int | None = None) -> list[ReviewEvent]:
        return [
            e
            for e in self.events
            if e.type == "note" and e.conversation_id == conversation_id and e.exchange == exchange
        ]

    def flagged(self, conversation_id: str, exchange: int | None = None) -> ReviewEvent | None:
        last = None
        for e in self.events:
            if (
                e.conversation_id == conversation_id
                and e.exchange == exchange
                and e.type in ("flag", "unflag")
            ):
                last = e
        return last if last is not None and last.type == "flag" else None

    def verdicts(self) -> dict[tuple[str, int | None, str], ReviewEvent]:
        out: dict[tuple[str, int | None, str], ReviewEvent] = {}
        for e in self.events:
            if e.type == "verdict" and e.rule:
                out[(e.conversation_id, e.exchange, e.rule)] = e
        return out

    def ids_by_state(self) -> dict[str, frozenset[str]]:
        flagged = set()
        flags: dict[tuple[str, int | None], str] = {}
        noted, reviewed = set(), set()
        for e in self.events:
            reviewed.add(e.conversation_id)
            if e.type == "note":
                noted.add(e.conversation_id)
            if e.type in ("flag", "unflag"):
                flags[(e.conversation_id, e.exchange)] = e.type
        flagged = {cid for (cid, _ex), t in flags.items() if t == "flag"}
        return {
            "flagged": frozenset(flagged),
            "noted": frozenset(noted),
            "reviewed": frozenset(reviewed),
        }

    def exchange_status(self, conversation_id: str, exchange: int) -> str:
        parts = []
        if self.flagged(conversation_id, exchange) or self.flagged(conversation_id):
            parts.append("flagged")
        if self.notes(conversation_id, exchange) or self.notes(conversation_id):
            parts.append("noted")
        if any(k[0] == conversation_id and k[1] == exchange for k in self.verdicts()):
            parts.append("verdict")
        return ";".join(parts)


class ReviewLog:
    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        self._lock = threading.Lock()
        self._cache: tuple[tuple[int, int], ReviewState] | None = None

    def append(self, event: ReviewEvent) -> ReviewEvent:
        if event.type not in EVENT_TYPES:
            raise ValueError(f"unknown review event type: {event.type}")
        if event.type == "verdict" and event.verdict not in VERDICTS:
            raise ValueError(f"unknown verdict: {event.verdict}")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data = (event.to_json() + "\n").encode("utf-8")
        with self._lock, open(self.path, "ab") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                # A crash can leave a torn line without a newline: start on a fresh line
                # so this event is not glued to it.
                fh.seek(0, os.SEEK_END)
                if fh.tell() > 0 and not self._ends_with_newline():
                    data = b"\n" + data
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)
        return event

    def _ends_with_newline(self) -> bool:
        with open(self.path, "rb") as fh:
            fh.seek(-1, os.SEEK_END)
            return fh.read(1) == b"\n"

    def signature(self) -> tuple[int, int]:
        """Changes whenever any process appends: what sessions poll to stay current."""
        try:
            st = self.path.stat()
        except FileNotFoundError:
            return (0, 0)
        return (st.st_size, st.st_mtime_ns)

    def state(self) -> ReviewState:
        try:
            st = self.path.stat()
        except FileNotFoundError:
            return ReviewState()
        key = (st.st_size, st.st_mtime_ns)
        if self._cache and self._cache[0] == key:
            return self._cache[1]
        state = ReviewState()
        with open(self.path, "rb") as fh:
            fcntl.flock(fh, fcntl.LOCK_SH)
            try:
                raw = fh.read()
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)
        for line in raw.decode("utf-8", errors="replace").splitlines():
            if not line.strip():
                continue
            try:
                state.events.append(_event(json.loads(line)))
            except (json.JSONDecodeError, TypeError, KeyError, ValueError):
                state.skipped_lines += 1
        self._cache = (key, state)
        return state

    def to_csv(self) -> str:
        import csv
        import io

        buf = io.StringIO()
        cols = [
            "ts",
            "author",
            "type",
            "conversation_id",
            "exchange",
            "rule",
            "verdict",
            "text",
            "id",
        ]
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(cols)
        for e in self.state().events:
            d = asdict(e)
            w.writerow(["" if d[c] is None else d[c] for c in cols])
        return buf.getvalue()


def _event(d: Any) -> ReviewEvent:
    if not isinstance(d, dict) or d.get("type") not in EVENT_TYPES:
        raise ValueError("not a review event")
    ex = d.get("exchange")
    return ReviewEvent(
        type=d["type"],
        conversation_id=str(d["conversation_id"]),
        author=str(d["author"]),
        exchange=int(ex) if ex is not None else None,
        text=str(d.get("text") or ""),
        rule=d.get("rule"),
        verdict=d.get("verdict"),
        ts=str(d["ts"]),
        id=str(d["id"]),
    )


def default_review_log(sources: Sequence[str] | None = None) -> Path:
    env = os.environ.get("TRAJECTORY_REVIEW_LOG")
    if env:
        return Path(env)
    from .sources import default_sources

    first = Path((list(sources) if sources else default_sources())[0])
    # Beside the traces, not inside them: a .jsonl inside would be read as a trace file.
    return first.parent / f"{first.name.rstrip('/') or 'traces'}.reviews.jsonl"


def local_user() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no passwd entry in some containers
        return os.environ.get("USER") or "reviewer"
