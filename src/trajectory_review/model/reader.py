"""The reader: index in, Conversations out. Knows nothing of the viewer or the CLI."""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from threading import Lock

from trajectory_review.index.base import Index
from trajectory_review.index.ingest import IndexStats
from trajectory_review.index.open_index import open_index
from trajectory_review.index.rows import resolved
from trajectory_review.model.matching import conversation_from_rows
from trajectory_review.model.trajectory import Conversation, Warning
from trajectory_review.sources.conventions import unread_note

BRANCH_SEP = "~"


def unreadable_file(name: str) -> str:
    return f"{name}: not readable (corrupt or truncated?), skipped"


def skipped_lines_report(stats: IndexStats) -> list[str]:
    """Every skipped line by file and line number, then how many more were not named."""
    if not stats.bad_lines:
        return []
    out = list(stats.bad_line_details)
    rest = stats.bad_lines - len(out)
    if rest > 0:
        out.append(
            f"{rest} {'more ' if out else ''}trace line(s) could not be read and were skipped"
        )
    return out


class TraceReader:
    def __init__(self, index: Index, cache_size: int = 256):
        self.index = index
        self._cache: OrderedDict[str, Conversation | None] = OrderedDict()
        self._cache_size = cache_size
        self._dropped: dict[str, list[Warning]] = {}
        self._lock = Lock()

    @classmethod
    def open(
        cls,
        sources: Sequence[str | os.PathLike[str]] | None = None,
        cache: bool = True,
        since: str | None = None,
    ) -> TraceReader:
        return cls(open_index(sources, cache=cache, since=since))

    @property
    def stats(self) -> IndexStats:
        return self.index.stats

    def source_warnings(self) -> list[Warning]:
        s = self.index.stats
        out = [Warning(None, w) for w in skipped_lines_report(s)]
        for name in s.bad_files:
            out.append(Warning(None, unreadable_file(name)))
        out.extend(Warning(None, w) for w in s.skipped_files)
        out.extend(Warning(None, w) for w in s.span_warnings)
        out.extend(Warning(None, unread_note(name, n)) for name, n in s.foreign_calls)
        if s.chat_spans_without_messages:
            out.append(
                Warning(
                    None,
                    f"{s.chat_spans_without_messages} chat span(s) carry no messages: "
                    "content capture was off when they were recorded. Record with "
                    "OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental and "
                    "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=span_only (or "
                    "span_and_event; chatlas and commons: true)",
                )
            )
        return out

    def why_dropped(self, conversation_id: str) -> list[str]:
        """Why a conversation that has chat spans shows nothing (empty when it shows)."""
        self._open(conversation_id)
        with self._lock:
            return [w.message for w in self._dropped.get(conversation_id, ())]

    def conversation(self, conversation_id: str) -> Conversation | None:
        """A conversation, or one of its abandoned branches (`id~n`)."""
        conv = self._open(conversation_id)
        if conv is not None or BRANCH_SEP not in conversation_id:
            return conv
        base = conversation_id.rsplit(BRANCH_SEP, 1)[0]
        parent = self._open(base)
        for branch in parent.branches if parent else ():
            if branch.id == conversation_id:
                return branch
        return None

    def _open(self, conversation_id: str) -> Conversation | None:
        with self._lock:
            if conversation_id in self._cache:
                self._cache.move_to_end(conversation_id)
                return self._cache[conversation_id]
        rows = self.index.chat_rows(conversation_id)
        dropped: list[Warning] = []
        conv = conversation_from_rows(conversation_id, rows, dropped)
        with self._lock:
            self._cache[conversation_id] = conv
            if dropped:
                self._dropped[conversation_id] = dropped
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return conv

    def iter_conversations(self) -> Iterator[tuple[str, Conversation | None, list[Warning]]]:
        """Every conversation, newest first; None (and why, when known) for one that
        cannot be shown."""
        for cid, streamed in self.index.iter_chat_rows():
            rows = resolved(cid, streamed)
            if not rows:
                continue  # spans with no model call of this conversation: none to show
            dropped: list[Warning] = []
            yield cid, conversation_from_rows(cid, rows, dropped), dropped
