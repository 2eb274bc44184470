"""One row per answer: what the list, filters, search, chart and QA queue query.

Built once per index by replaying every conversation (the same replay the transcript
uses) and running the reply rules in report mode over each answer, then handed to DuckDB
as a pandas frame so lists are paged and filtered in SQL.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pandas as pd

from trajectory_review.listing.answer_rows import COLUMNS, answer_batch
from trajectory_review.model.workers import batches, run_batches
from trajectory_review.rules.registry import RuleConfig, load_rules

if TYPE_CHECKING:
    from trajectory_review.model.reader import TraceReader


@dataclass(frozen=True)
class Answers:
    frame: pd.DataFrame
    dropped: int  # conversations with no exchange
    warnings: list[tuple[str | None, str]]  # (conversation id, message)


def build_answers(
    reader: TraceReader,
    cfg: RuleConfig | None = None,
    progress: Callable[[int, int], None] | None = None,
    only: Sequence[str] | None = None,
    workers: int | None = None,
    judge: bool = True,
    prints: dict[str, str] | None = None,
) -> Answers:
    """All answers of all conversations (or only these), with what went wrong reading them.

    progress(done, total) is called every few hundred conversations. workers: processes
    to replay in (default: workers.default_workers()). judge=False: without the reply
    rules. prints: the conversations' fingerprints when the caller has them already.
    """
    cfg = cfg or load_rules()
    total = reader.stats.conversations if only is None else len(only)
    if prints is None:
        prints = reader.index.conversation_fingerprints()
    work = batches(reader.index.iter_chat_rows(only=only, packed=True), prints)
    rows: list[dict] = []
    dropped = done = 0
    warnings: list[tuple[str | None, str]] = []
    for batch_rows, batch_dropped, batch_warnings, count in run_batches(
        answer_batch, work, (cfg, judge), total, workers
    ):
        rows.extend(batch_rows)
        dropped += batch_dropped
        warnings.extend(batch_warnings)
        done += count
        if progress is not None:
            progress(done, total)
    return Answers(pd.DataFrame(rows, columns=COLUMNS), dropped, warnings)
