"""What an index is to the rest of the program: the protocol TraceReader and the catalogs
read through, answered by the DuckDB index of files (store.TraceIndex) and by a
ClickHouse table read in place (clickhouse.ClickHouseIndex)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from trajectory_review.index.ingest import IndexStats
    from trajectory_review.index.rows import ChatRow, StreamedRows


class Index(Protocol):
    stats: IndexStats
    # the key of the on-disk catalog cache; None where the catalog lives beside the
    # spans (ClickHouse), shared by every process that reads them
    cache_key: str | None
    # which catalog lists it (listing/catalog.ENGINES): "duckdb" for trace files read
    # into this process, "clickhouse" for spans read in place
    engine: str

    @property
    def origin(self) -> str:
        """Where the spans are, for the header and messages."""
        ...

    def close(self) -> None: ...

    def conversation_ids(self) -> list[str]:
        """Every conversation, newest first."""
        ...

    def conversation_fingerprints(self) -> dict[str, str]:
        """Conversation id -> a digest of every row its replay reads."""
        ...

    def chat_rows(self, conversation_id: str) -> list[ChatRow]: ...

    def time_span(self) -> tuple[int | None, int | None]:
        """The first and last activity of any conversation (ns), None when there is none."""
        ...

    def iter_chat_rows(
        self, batch: int = ..., only: Sequence[str] | None = None
    ) -> Iterator[tuple[str, StreamedRows]]:
        """Every conversation's chat rows (or only these), newest first, streamed: rows,
        or spans its replay resolves (rows.resolved takes either)."""
        ...
