"""The reader: index in, Conversations out. Knows nothing of the viewer or the CLI."""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from threading import Lock

from .store import ChatRow, TraceIndex
from .trajectory import Conversation, Warning, build_conversation

BRANCH_SEP = "~"


def unreadable_file(name: str) -> str:
    return f"{name}: not readable (corrupt or truncated?), skipped"


def conversation_from_rows(conversation_id: str, rows: Sequence[ChatRow]) -> Conversation | None:
    """A conversation from its index rows (None without any)."""
    if not rows:
        return None
    rows = list({(r.trace_id, r.span_id): r for r in rows}.values())  # one copy each
    turns = {(r.turn.trace_id, r.turn.span_id): r.turn for r in rows if r.turn}
    return build_conversation(conversation_id, rows, list(turns.values()))


class TraceReader:
    def __init__(self, index: TraceIndex, cache_size: int = 256):
        self.index = index
        self._cache: OrderedDict[str, Conversation | None] = OrderedDict()
        self._cache_size = cache_size
        self._lock = Lock()

    @classmethod
    def open(
        cls, sources: Sequence[str | os.PathLike[str]] | None = None, cache: bool = True
    ) -> TraceReader:
        return cls(TraceIndex.build(sources, cache=cache))

    @property
    def stats(self):  # noqa: ANN201 - IndexStats
        return self.index.stats

    def source_warnings(self) -> list[Warning]:
        s = self.index.stats
        out = []
        if s.bad_lines:
            out.append(Warning(None, f"{s.bad_lines} trace line(s) are not JSON and were skipped"))
        for name in s.bad_files:
            out.append(Warning(None, unreadable_file(name)))
        if s.chat_spans_without_messages:
            out.append(
                Warning(
                    None,
                    f"{s.chat_spans_without_messages} chat span(s) carry no "
                    "messages: content capture was off when they were recorded "
                    "(OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT)",
                )
            )
        return out

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
        conv = self._build(conversation_id, rows)
        with self._lock:
            self._cache[conversation_id] = conv
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return conv

    def _build(self, conversation_id: str, rows: Sequence[ChatRow]) -> Conversation | None:
        return conversation_from_rows(conversation_id, rows)

    def iter_conversations(self) -> Iterator[tuple[str, Conversation | None]]:
        """Every conversation, newest first; None for one that has no exchange."""
        for cid, rows in self.index.iter_chat_rows():
            yield cid, self._build(cid, rows)
