"""The answer catalog beside the spans, for a ClickHouse source.

Three tables the app creates in the spans' database, shared by every app process on every
host (none holds a lock; rows are only ever added):
- `<table>_review_answers`: the catalog rows (summary.COLUMNS) of one replay of one
  conversation, tagged with the rules' fingerprint and the replay's generation;
- `<table>_review_replays`: one row per conversation per replay: its spans' fingerprint,
  whether it was dropped, its warnings;
- `<table>_review_marks`: after each catch-up, the high-water mark (the latest span start
  it saw) and how many conversations it replayed.
A reader takes, per conversation, the newest generation. Two processes catching up at
once both append a generation: the newer wins, and both say the same thing, since they
replayed the same spans with the same rules.

Catching up: conversations with a span at or after the last mark (less LATE_NS), and
any never replayed under these rules (a wider --since window), are fingerprinted in
ClickHouse; only those whose fingerprint changed are replayed and judged, here, by the
same build_answers as for files. A restart with nothing new replays nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd

from trajectory_review.index.clickhouse import ClickHouseIndex
from trajectory_review.listing.summary import COLUMNS, Answers, build_answers
from trajectory_review.model.reader import TraceReader
from trajectory_review.rules.registry import RuleConfig

# The Collector inserts a span when it ends and its batch is flushed: a span that started
# before the last mark (a turn outlives its model calls) can arrive after the catch-up
# that set it. Spans starting this long before the mark are looked at again.
LATE_NS = 3_600 * 10**9

ANSWERS_TABLE = """
CREATE TABLE IF NOT EXISTS {db}.`{table}_review_answers` (
    Rules String, Generation UInt64,
    conversation_id String, exchange Int64, n_exchanges Int64,
    question String, answer_text String CODEC(ZSTD(3)), tag String,
    rejected Int64, malformed Int64, problem Int64, finish String,
    conflict Bool, complete Bool, last_active_ns Int64, answered_ns Int64, day Date32,
    branches Int64, model Nullable(String), tools String, warnings Int64,
    failed_rules Array(String), blocking_rules Array(String), na_rules Array(String),
    judged Bool, fingerprint String
) ENGINE = MergeTree ORDER BY (Rules, conversation_id, Generation, exchange)
"""
REPLAYS_TABLE = """
CREATE TABLE IF NOT EXISTS {db}.`{table}_review_replays` (
    Rules String, ConversationId String, Generation UInt64,
    Fingerprint String, Dropped Bool, Warnings Array(String)
) ENGINE = MergeTree ORDER BY (Rules, ConversationId, Generation)
"""
MARKS_TABLE = """
CREATE TABLE IF NOT EXISTS {db}.`{table}_review_marks` (
    Rules String, Generation UInt64, Mark Int64, Replayed UInt64,
    Written DateTime64(3) DEFAULT now64(3)
) ENGINE = MergeTree ORDER BY (Rules, Generation)
"""


@dataclass(frozen=True)
class CatchUp:
    answers: Answers
    replayed: int  # conversations replayed and judged by this catch-up
    seconds: float


def ensure_tables(index: ClickHouseIndex) -> None:
    names = {"db": f"`{index.loc.database}`", "table": index.loc.table}
    for ddl in (ANSWERS_TABLE, REPLAYS_TABLE, MARKS_TABLE):
        index.command(ddl.format(**names))


def catch_up(
    reader: TraceReader,
    rules: RuleConfig,
    progress: Callable[[int, int], None] | None = None,
) -> CatchUp:
    """Bring the shared catalog up to date with the spans, then read this window's rows."""
    started = time.perf_counter()
    index: ClickHouseIndex = reader.index  # type: ignore[assignment]
    ensure_tables(index)
    fp = rules.fingerprint
    # The mark is read before the candidates: a span inserted meanwhile is after it, and
    # the next catch-up sees it.
    new_mark = index.latest_span_ns()
    mark = index.query(
        f"SELECT max(Mark), count() FROM {index.table('_review_marks')} WHERE Rules = {{r:String}}",
        {"r": fp},
    )[0]
    stored = dict(
        index.query(
            f"SELECT ConversationId, argMax(Fingerprint, Generation) "
            f"FROM {index.table('_review_replays')} WHERE Rules = {{r:String}} "
            "GROUP BY ConversationId",
            {"r": fp},
        )
    )
    in_window = set(index.conversation_ids())
    if mark[1]:
        candidates = set(index.changed_since(int(mark[0]) - LATE_NS))
        candidates |= in_window - set(stored)  # never replayed under these rules
    else:
        candidates = set(in_window)
    now = index.conversation_fingerprints(sorted(candidates)) if candidates else {}
    changed = [cid for cid in index.conversation_ids() if cid in candidates
               and stored.get(cid) != now.get(cid)]  # fmt: skip
    if changed:
        built = build_answers(reader, rules, progress, only=changed, prints=now)
        _write(index, fp, changed, now, built)
    index.command(
        f"INSERT INTO {index.table('_review_marks')} (Rules, Generation, Mark, Replayed) "
        f"VALUES ('{_quoted(fp)}', {time.time_ns()}, {max(new_mark, int(mark[0] or 0))}, "
        f"{len(changed)})"
    )
    answers = read(index, fp, in_window)
    return CatchUp(answers, len(changed), time.perf_counter() - started)


def _write(
    index: ClickHouseIndex, fp: str, changed: list[str], prints: dict[str, str], built: Answers
) -> None:
    generation = time.time_ns()
    frame = built.frame.copy()
    frame.insert(0, "Generation", generation)
    frame.insert(0, "Rules", fp)
    frame["model"] = frame["model"].astype(object).where(frame["model"].notna(), None)
    answered = set(frame["conversation_id"])
    warned: dict[str, list[str]] = {}
    for cid, message in built.warnings:
        if cid is not None:
            warned.setdefault(cid, []).append(message)
    replays = pd.DataFrame({
        "Rules": fp,
        "ConversationId": changed,
        "Generation": generation,
        "Fingerprint": [prints.get(cid, "") for cid in changed],
        "Dropped": [cid not in answered for cid in changed],
        "Warnings": [warned.get(cid, []) for cid in changed],
    })  # fmt: skip
    try:
        # answers first: a reader sees a generation only once its replay row exists
        if len(frame):
            index.client.insert_df(index.table("_review_answers"), frame)
        index.client.insert_df(index.table("_review_replays"), replays)
    except Exception as exc:  # noqa: BLE001 - one line naming where
        from trajectory_review.sources import SourceError
        from trajectory_review.sources.clickhouse import explain

        raise SourceError(f"{index.loc.shown}: catalog not written: {explain(exc)}") from None


def read(index: ClickHouseIndex, fp: str, in_window: set[str]) -> Answers:
    """The newest replay of every conversation in the window, as catalog rows."""
    latest = (
        f"SELECT ConversationId, max(Generation) FROM {index.table('_review_replays')} "
        "WHERE Rules = {r:String} GROUP BY ConversationId"
    )
    frame = index._frame(
        f"SELECT {', '.join(COLUMNS)} FROM {index.table('_review_answers')} "
        f"WHERE Rules = {{r:String}} AND (conversation_id, Generation) IN ({latest})",
        {"r": fp},
    )
    frame = frame[frame["conversation_id"].isin(in_window)].reset_index(drop=True)
    if len(frame):
        frame["day"] = pd.to_datetime(frame["day"]).dt.date
        for col in ("failed_rules", "blocking_rules", "na_rules"):
            frame[col] = frame[col].map(list)
    notes = index.query(
        "SELECT ConversationId, argMax(Dropped, Generation), argMax(Warnings, Generation) "
        f"FROM {index.table('_review_replays')} WHERE Rules = {{r:String}} "
        "GROUP BY ConversationId",
        {"r": fp},
    )
    dropped = 0
    warnings: list[tuple[str | None, str]] = []
    for cid, was_dropped, messages in notes:
        if cid not in in_window:
            continue
        dropped += int(bool(was_dropped))
        warnings.extend((cid, m) for m in messages)
    return Answers(frame[COLUMNS] if len(frame) else pd.DataFrame(columns=COLUMNS), dropped,
                   warnings)  # fmt: skip


def _quoted(text: str) -> str:
    return text.replace("\\", "\\\\").replace("'", "\\'")
