"""Review events: notes, flags and QA verdicts, in an append-only JSON-lines log.

Append-only because a review is evidence: nothing is edited or deleted, a later event
supersedes an earlier one (an unflag after a flag). Each append takes an exclusive file
lock and writes one whole line, so concurrent sessions and processes never interleave or
lose an event. A torn last line (a crash mid-write) is skipped when reading.

Long on purpose: the review log's one schema: every event type, checked when written and read.
"""

from __future__ import annotations

import fcntl
import getpass
import json
import os
import threading
import unicodedata
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

import orjson

from trajectory_review.support.cells import csv_text
from trajectory_review.support.errors import Said

# looks_right: QA marks an answer done without a verdict on its flags; reopen puts an
# answer back in the queue (what came before it no longer makes the answer done).
# sample: a random sample of answers drawn for QA, its members stored in the event (so
# every reviewer works the same sample, and a reload keeps it); spot: a reviewer's check
# of an answer no rule flagged (it looked right, or a rule should have flagged it).
EVENT_TYPES = ("note", "flag", "unflag", "verdict", "looks_right", "reopen", "sample", "spot")
VERDICTS = ("correct", "false_positive")
SPOT_VERDICTS = ("looks_right", "missed")
SAMPLE_KINDS = ("flagged", "unflagged")
MAX_SAMPLE = 10_000  # answers in one sample
# An answer's place in the QA queue (what `answer_state` returns).
TO_DO, DONE, LOOKS_RIGHT = "to do", "done", "looks right"
AnswerKey = tuple[str, int]  # (conversation id, exchange)
# How the author of an event is known: a login a trusted proxy vouched for (Posit
# Connect, Shiny Server), or a name the reviewer gave (typed, or the account running a
# local `serve`). The log keeps which, so a typed "ceo@example.com" never passes for a
# login.
AUTHENTICATED, DECLARED = "authenticated", "declared"
IDENTITIES = (AUTHENTICATED, DECLARED)
MAX_NAME = 80  # characters of a reviewer's name
# Unicode categories a name never keeps: controls, format characters (bidi overrides
# such as U+202E that reverse what follows on the page, zero-width joiners that make two
# names look alike), line and paragraph separators, private use and unassigned.
_HIDDEN = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})


@lru_cache(maxsize=4096)  # a team's few names, read back once per event
def _clean_text(text: str) -> str:
    kept = "".join(c for c in text if unicodedata.category(c) not in _HIDDEN)
    return " ".join(kept.split())[:MAX_NAME]


def clean_name(raw: object) -> str:
    """A reviewer's name as printable text: hidden characters removed, blanks collapsed,
    at most MAX_NAME characters ("" when nothing printable is left)."""
    return _clean_text(str(raw or "")[: MAX_NAME * 4])


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
    identity: str | None = None  # authenticated | declared; None in logs written before it
    settles: bool = False  # verdicts only: a lead's verdict that decides a disagreement
    sample: str | None = None  # sample events: its id
    members: tuple[tuple[str, int, str], ...] | None = None  # (conversation, answer, stratum)
    spec: dict[str, Any] | None = None  # sample events: kind, size, seed, stratify, list

    def to_json(self) -> str:
        d = asdict(self)
        for key in ("settles", "sample", "members", "spec"):  # written only where they mean
            if not d[key]:
                del d[key]
        return json.dumps(d, ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True)
class Reviewer:
    """Who acts in a session, and how that is known (AUTHENTICATED or DECLARED)."""

    name: str
    identity: str

    def event(
        self,
        type: str,
        conversation_id: str,
        exchange: int | None = None,
        text: str = "",
        rule: str | None = None,
        verdict: str | None = None,
    ) -> ReviewEvent:
        return ReviewEvent(
            type, conversation_id, self.name, exchange, text, rule, verdict,
            identity=self.identity,
        )  # fmt: skip


def may_settle(who: Reviewer | None, leads: frozenset[str]) -> bool:
    """Settling decides between reviewers, so it is a lead's: a login a trusted proxy
    signed in and TRAJECTORY_LEADS names (casefolded). A typed name never settles."""
    return who is not None and who.identity == AUTHENTICATED and who.name.casefold() in leads


@dataclass
class ReviewState:
    """Everything the log says, folded: latest flag per target, notes, latest verdicts."""

    events: list[ReviewEvent] = field(default_factory=list)
    skipped_lines: int = 0  # torn, not JSON, or not a valid event
    error: str | None = None  # the log could not be read at all (one line)

    def copy(self) -> ReviewState:
        return ReviewState(list(self.events), self.skipped_lines, self.error)

    def add_line(self, line: str) -> None:
        if not line.strip():
            return
        try:
            self.events.append(_event(orjson.loads(line)))
        except (ValueError, RecursionError):  # JSONDecodeError is a ValueError
            self.skipped_lines += 1

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

    def samples(self, kind: str | None = None) -> list[ReviewEvent]:
        """The samples drawn (of one kind), oldest first."""
        return [e for e in self.events if e.type == "sample" and (kind is None or
                (e.spec or {}).get("kind") == kind)]  # fmt: skip

    def sample(self, sample_id: str) -> ReviewEvent | None:
        return next((e for e in reversed(self.events) if e.type == "sample"
                     and e.sample == sample_id), None)  # fmt: skip

    def spot_checks(self) -> dict[AnswerKey, ReviewEvent]:
        """Each spot-checked answer's latest check."""
        return {
            (e.conversation_id, e.exchange): e
            for e in self.events
            if e.type == "spot" and e.exchange is not None
        }

    def ids_by_state(self) -> dict[str, frozenset[str]]:
        flagged = set()
        flags: dict[tuple[str, int | None], str] = {}
        noted, reviewed = set(), set()
        for e in self.events:
            if e.type == "sample":
                continue  # about many answers, not one conversation
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

    def judged(self) -> dict[AnswerKey, tuple[frozenset[str], bool]]:
        """Per answer QA has touched: the rules with a verdict and whether it was marked
        "looks right", both since the answer was last reopened."""
        out: dict[AnswerKey, tuple[frozenset[str], bool]] = {}
        for e in self.events:
            if e.exchange is None or e.type not in ("verdict", "looks_right", "reopen"):
                continue
            key = (e.conversation_id, e.exchange)
            rules, looks_right = out.get(key, (frozenset(), False))
            if e.type == "reopen":
                out[key] = (frozenset(), False)
            elif e.type == "looks_right":
                out[key] = (rules, True)
            elif e.rule:
                out[key] = (rules | {e.rule}, looks_right)
        return out

    def answer_state(self, key: AnswerKey, failing: Sequence[str]) -> str:
        """To do, done (a verdict on every rule the answer fails) or looks right."""
        rules, looks_right = self.judged().get(key, (frozenset(), False))
        return _state_of(rules, looks_right, failing)

    def done_answers(self, failing: Mapping[AnswerKey, Sequence[str]]) -> frozenset[AnswerKey]:
        """The answers of `failing` (answer -> the rules it fails) that QA has finished."""
        return frozenset(
            key
            for key, (rules, looks_right) in self.judged().items()
            if key in failing and _state_of(rules, looks_right, failing[key]) != TO_DO
        )

    def exchange_status(self, conversation_id: str, exchange: int) -> str:
        parts = []
        if self.flagged(conversation_id, exchange) or self.flagged(conversation_id):
            parts.append("flagged")
        if self.notes(conversation_id, exchange) or self.notes(conversation_id):
            parts.append("noted")
        if any(k[0] == conversation_id and k[1] == exchange for k in self.verdicts()):
            parts.append("verdict")
        return ";".join(parts)


def _state_of(rules: frozenset[str], looks_right: bool, failing: Sequence[str]) -> str:
    if looks_right:
        return LOOKS_RIGHT
    return DONE if failing and rules.issuperset(failing) else TO_DO


class ReviewLogError(Said):
    """The review log cannot be written (or read). The message is one line for a user."""


class StoreConfigError(Said, ValueError):
    """A review store that cannot even be named (an unknown scheme, a malformed URL):
    a configuration error, one line, nothing written anywhere."""


def checked_line(event: ReviewEvent) -> str:
    """The event's JSON line, exactly as it will read back; ValueError for an event no
    store may take."""
    if event.type not in EVENT_TYPES:
        raise ValueError(f"unknown review event type: {event.type}")
    if event.type == "verdict" and event.verdict not in VERDICTS:
        raise ValueError(f"unknown verdict: {event.verdict}")
    return _event(json.loads(event.to_json())).to_json()


def events_csv(state: ReviewState) -> str:
    """Every event as CSV (the review-events download): the same columns from any store."""
    cols = ["ts", "author", "identity", "type", "conversation_id", "exchange", "rule",
            "verdict", "settles", "sample", "text", "id"]  # fmt: skip
    rows = (
        ["" if d[c] is None or d[c] is False else d[c] for c in cols]
        for d in (asdict(e) for e in state.events)
    )
    return csv_text(cols, rows)


# What a review-log line may hold. Every field of every event is checked: one line with
# `"exchange": 1e999` (OverflowError) or a list for `rule` (TypeError) used to break every
# page that read the log.
MAX_EXCHANGE = 1_000_000
MAX_FIELD = 100_000  # characters in one text field


class ReviewLog:
    """The append-only log. Every write goes through `append` (one guarded path); reads
    are incremental (only bytes appended since the last read are parsed), so a session's
    poll costs what changed, not the size of the log."""

    kind = "file"

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        self.shown = str(self.path)
        self._lock = threading.Lock()
        # (inode, bytes parsed, signature when parsed, state)
        self._read: tuple[int, int, tuple[int, int], ReviewState] | None = None

    def append(self, event: ReviewEvent) -> ReviewEvent:
        """Write one event; ReviewLogError (one line) when the log cannot take it."""
        line = checked_line(event)  # as it reads back, or ValueError
        data = (line + "\n").encode("utf-8", "replace")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self._lock, open(self.path, "ab") as fh:
                fcntl.flock(fh, fcntl.LOCK_EX)
                try:
                    # A crash can leave a torn line without a newline: start on a fresh
                    # line so this event is not glued to it.
                    fh.seek(0, os.SEEK_END)
                    if fh.tell() > 0 and not self._ends_with_newline():
                        data = b"\n" + data
                    fh.write(data)
                    fh.flush()
                    os.fsync(fh.fileno())
                finally:
                    fcntl.flock(fh, fcntl.LOCK_UN)
        except OSError as exc:
            raise ReviewLogError(self._unusable(exc, "saved")) from None
        return event

    def _unusable(self, exc: OSError, what: str) -> str:
        reason = exc.strerror or type(exc).__name__
        return f"review log {self.path}: cannot be {what} ({reason})"

    def _ends_with_newline(self) -> bool:
        with open(self.path, "rb") as fh:
            fh.seek(-1, os.SEEK_END)
            return fh.read(1) == b"\n"

    def signature(self) -> tuple[int, int]:
        """Changes whenever any process appends: what sessions poll to stay current."""
        try:
            st = self.path.stat()
        except OSError:
            return (0, 0)
        return (st.st_size, st.st_mtime_ns)

    def writable_problem(self) -> str | None:
        """Why nothing can be saved (one line), or None when the log looks writable."""
        p = self.path
        if p.exists():
            if p.is_dir():
                return f"review log {p}: is a directory; notes and flags cannot be saved"
            if not os.access(p, os.W_OK):
                return f"review log {p}: read-only; notes and flags cannot be saved"
            return None
        parent = p.parent
        while not parent.exists() and parent != parent.parent:
            parent = parent.parent
        if not parent.is_dir():
            return f"review log {p}: {parent} is not a directory; notes and flags cannot be saved"
        if not os.access(parent, os.W_OK):
            return f"review log {p}: {parent} is read-only; notes and flags cannot be saved"
        return None

    def state(self) -> ReviewState:
        """Everything the log says. Never raises: an unreadable log is an empty state
        whose `error` says why, so pages keep working."""
        with self._lock:
            return self._state()

    def _state(self) -> ReviewState:
        try:
            st = self.path.stat()
            if not os.path.isfile(self.path):
                raise IsADirectoryError(21, "is a directory, not a file")
        except FileNotFoundError:
            return ReviewState()
        except OSError as exc:
            return ReviewState(error=self._unusable(exc, "read"))
        sig = (st.st_size, st.st_mtime_ns)
        cached = self._read
        if cached and cached[0] == st.st_ino and cached[2] == sig:
            return cached[3]
        if cached and cached[0] == st.st_ino and st.st_size >= cached[1]:
            offset, state = cached[1], cached[3].copy()
        else:  # first read, or the file was replaced or cut: read it whole
            offset, state = 0, ReviewState()
        try:
            with open(self.path, "rb") as fh:
                fcntl.flock(fh, fcntl.LOCK_SH)
                try:
                    fh.seek(offset)
                    raw = fh.read()
                finally:
                    fcntl.flock(fh, fcntl.LOCK_UN)
        except OSError as exc:
            return ReviewState(error=self._unusable(exc, "read"))
        # Only whole lines are parsed; a torn last line waits for its newline (or is
        # counted as skipped when it never gets one: see below).
        end = raw.rfind(b"\n") + 1
        body, tail = raw[:end], raw[end:]
        for line in body.decode("utf-8", errors="replace").splitlines():
            state.add_line(line)
        parsed_to = offset + end
        self._read = (st.st_ino, parsed_to, sig, state)
        if tail.strip():
            # a line without its newline: a crash mid-write, or a write in flight
            shown = state.copy()
            shown.add_line(tail.decode("utf-8", errors="replace"))
            return shown
        return state

    def to_csv(self) -> str:
        return events_csv(self.state())

    def all_events(self) -> list[ReviewEvent]:
        """Every event (a copy between stores reads the whole history)."""
        state = self.state()
        if state.error:
            raise ReviewLogError(state.error)
        return list(state.events)


def _text(d: dict[str, Any], key: str, required: bool = True) -> str:
    v = d.get(key)
    if type(v) is str and len(v) <= MAX_FIELD and (not required or v.strip()):
        return v
    if v is None and not required:
        return ""
    raise ValueError(f"bad {key}")


def _event(d: Any) -> ReviewEvent:
    """A log line as an event; ValueError for anything that is not a valid one."""
    if not isinstance(d, dict) or d.get("type") not in EVENT_TYPES:
        raise ValueError("not a review event")
    ex = d.get("exchange")
    if ex is not None and (
        isinstance(ex, bool) or not isinstance(ex, int) or not 1 <= ex <= MAX_EXCHANGE
    ):
        raise ValueError("bad exchange")
    rule = d.get("rule")
    verdict = d.get("verdict")
    if d["type"] == "verdict":
        rule = _text(d, "rule")
        if verdict not in VERDICTS:
            raise ValueError("bad verdict")
    elif d["type"] == "spot":
        if verdict not in SPOT_VERDICTS or ex is None:
            raise ValueError("bad spot check")
        rule = _text(d, "rule") if verdict == "missed" else None
    elif rule is not None or verdict is not None:
        raise ValueError("rule and verdict belong to verdicts and spot checks")
    settles = d.get("settles", False)
    if settles not in (True, False) or (settles and d["type"] != "verdict"):
        raise ValueError("bad settles")
    sample, members, spec = _sample_fields(d)
    identity = d.get("identity")
    if identity is not None and identity not in IDENTITIES:
        raise ValueError("bad identity")
    # shown as printable text whatever an older version or a hand edit wrote
    author = clean_name(_text(d, "author"))
    if not author:
        raise ValueError("bad author")
    return ReviewEvent(
        type=d["type"],
        conversation_id=_text(d, "conversation_id"),
        author=author,
        identity=identity,
        exchange=ex,
        text=_text(d, "text", required=False),
        rule=rule,
        verdict=verdict,
        ts=_text(d, "ts"),
        id=_text(d, "id"),
        settles=settles,
        sample=sample,
        members=members,
        spec=spec,
    )


def _sample_fields(
    d: dict[str, Any],
) -> tuple[str | None, tuple[Any, ...] | None, dict[str, Any] | None]:
    """A sample event's id, members and spec, checked; nothing on other events."""
    if d["type"] != "sample":
        if d.get("sample") is not None or d.get("members") is not None or d.get("spec") is not None:
            raise ValueError("sample fields belong to sample events")
        return None, None, None
    sample = _text(d, "sample")
    members = d.get("members")
    spec = d.get("spec")
    if not isinstance(members, list) or not 0 < len(members) <= MAX_SAMPLE:
        raise ValueError("bad sample members")
    out = []
    for m in members:
        if not (
            isinstance(m, list)
            and len(m) == 3
            and isinstance(m[0], str)
            and m[0]
            and isinstance(m[1], int)
            and not isinstance(m[1], bool)
            and 1 <= m[1] <= MAX_EXCHANGE
            and isinstance(m[2], str)
            and len(m[2]) <= 200
        ):
            raise ValueError("bad sample member")  # fmt: skip
        out.append((m[0], m[1], m[2]))
    if not isinstance(spec, dict) or spec.get("kind") not in SAMPLE_KINDS:
        raise ValueError("bad sample spec")
    clean = {k: spec[k] for k in ("kind", "size", "seed", "stratify", "query") if k in spec}
    if len(json.dumps(clean)) > MAX_FIELD:
        raise ValueError("bad sample spec")
    return sample, tuple(out), clean


def local_user() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no passwd entry in some containers
        return os.environ.get("USER") or "reviewer"
