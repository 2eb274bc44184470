"""One row per answer: what the list, filters, search, chart and QA queue query.

Built once per index by replaying every conversation (the same replay the transcript
uses) and running the reply rules in report mode over each answer, then handed to DuckDB
as a pandas frame so lists are paged and filtered in SQL.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ParamSpec

import pandas as pd

from trajectory_review.index.rows import message_bytes
from trajectory_review.listing.answer_rows import COLUMNS, Row, answer_batch
from trajectory_review.rules.registry import RuleConfig, load_rules
from trajectory_review.support.workers import batches, parallel, run_batches

if TYPE_CHECKING:
    from trajectory_review.model.reader import TraceReader

P = ParamSpec("P")


@dataclass(frozen=True)
class Answers:
    frame: pd.DataFrame
    dropped: int  # conversations with no exchange
    warnings: list[tuple[str | None, str]]  # (conversation id, message)

    @classmethod
    def collect(cls, parts: Iterable[AnswerPart]) -> Answers:
        rows: list[Row] = []
        dropped = 0
        warnings: list[tuple[str | None, str]] = []
        for part in parts:
            rows.extend(part.rows)
            dropped += part.dropped
            warnings.extend(part.warnings)
        return cls(pd.DataFrame(rows, columns=COLUMNS), dropped, warnings)


@dataclass(frozen=True)
class AnswerPart:
    """The answers of some conversations, as replay yields them (stream_answers)."""

    rows: list[Row]  # in COLUMNS' order
    dropped: int
    warnings: list[tuple[str | None, str]]
    conversations: int  # replayed in this part

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.rows, columns=COLUMNS)


def stream_answers(
    reader: TraceReader,
    cfg: RuleConfig | None = None,
    progress: Callable[[int, int], None] | None = None,
    only: Sequence[str] | None = None,
    workers: int | None = None,
    judge: bool = True,
    prints: dict[str, str] | None = None,
    every: int = 1,
    defer: list[str] | None = None,
) -> Iterator[AnswerPart]:
    """build_answers in parts of at least `every` conversations, in the index's order
    (newest first), each yielded as soon as it is replayed: a list can show the newest
    conversations while older ones are still being replayed. `defer`: a conversation too
    big for one worker is left out and named there (workers.batches)."""
    cfg = cfg or load_rules()
    total = reader.stats.conversations if only is None else len(only)
    if prints is None:
        prints = reader.index.conversation_fingerprints()
    # a conversation too big for one worker is cut into a slice per worker
    n = parallel(total, workers)
    work = batches(
        reader.index.iter_chat_rows(only=only), prints, weigh=message_bytes, slices=n, defer=defer
    )
    rows: list[Row] = []
    dropped = done = count = 0
    warnings: list[tuple[str | None, str]] = []
    for batch_rows, batch_dropped, batch_warnings, n in run_batches(
        answer_batch, work, (cfg, judge), total, workers
    ):
        rows.extend(batch_rows)
        dropped += batch_dropped
        warnings.extend(batch_warnings)
        done += n
        count += n
        if progress is not None:
            progress(done, total)
        if count >= every:
            yield AnswerPart(rows, dropped, warnings, count)
            rows, dropped, warnings, count = [], 0, [], 0
    if count:
        yield AnswerPart(rows, dropped, warnings, count)


# build_answers is stream_answers collected into one Answers: the same parameters, said
# once (two signatures kept in step by hand drift apart).
def _collected(stream: Callable[P, Iterator[AnswerPart]]) -> Callable[P, Answers]:
    def build(*args: P.args, **kwargs: P.kwargs) -> Answers:
        return Answers.collect(stream(*args, **kwargs))

    return build


build_answers = _collected(stream_answers)
build_answers.__doc__ = """All answers of all conversations (or only these), with what went wrong
reading them: stream_answers' parts, collected. progress(done, total) is called every few
hundred conversations. workers: processes to replay in (default:
workers.default_workers()). judge=False: without the reply rules. prints: the
conversations' fingerprints when the caller has them already."""
