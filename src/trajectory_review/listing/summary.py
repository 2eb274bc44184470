"""One row per answer: what the list, filters, search, chart and QA queue query.

Built once per index by replaying every conversation (the same replay the transcript
uses) and running the reply rules in report mode over each answer, then handed to DuckDB
as a pandas frame so lists are paged and filtered in SQL.
"""

from __future__ import annotations

import multiprocessing
import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime

import pandas as pd

from trajectory_review import settings
from trajectory_review.model.provenance import tag_key
from trajectory_review.model.reader import TraceReader, conversation_from_rows
from trajectory_review.model.trajectory import Conversation, Exchange, Warning
from trajectory_review.replay.project import projected_text, replay_exchange
from trajectory_review.rules.qa import lint_exchange
from trajectory_review.rules.registry import RULES, RuleConfig, load_rules

COLUMNS = [
    "conversation_id", "exchange", "n_exchanges", "question", "answer_text", "tag",
    "rejected", "malformed", "problem", "finish", "conflict", "complete", "last_active_ns",
    "answered_ns", "day",
    "branches", "model", "tools", "warnings", "failed_rules", "blocking_rules", "na_rules",
    "judged", "fingerprint",
]  # fmt: skip
RULE_COLUMNS = ["failed_rules", "blocking_rules", "na_rules"]


def answer_rows(
    conv: Conversation, cfg: RuleConfig, fingerprint: str = "", judge: bool = True
) -> Iterable[dict]:
    """The conversation's answers as catalog rows. judge=False leaves the reply rules out
    (the rule columns empty, `judged` false): the list can be served before the rules
    have run over every answer (Catalog.judge fills them in)."""
    for ex in conv.exchanges:
        rep = replay_exchange(ex)
        # Only a final answer is judged: an exchange cut off at a tool call has none.
        results = lint_exchange(ex, cfg, rep).results if ex.complete and judge else ()
        answered = ex.calls[-1].end_ns if ex.calls else conv.last_active_ns
        yield {
            "conversation_id": conv.id,
            "exchange": ex.index,
            "n_exchanges": len(conv.exchanges),
            "question": ex.question,
            "answer_text": projected_text(rep),
            "tag": tag_key(ex.tag),
            "rejected": rep.rejected,
            "malformed": rep.malformed,
            # the user got a cut-off or filtered answer, or the model call failed
            "problem": int(ex.cut_off or ex.error is not None),
            "finish": problem_note(ex),
            "conflict": ex.conflict,
            "complete": ex.complete,
            "last_active_ns": conv.last_active_ns,
            "answered_ns": answered,
            "day": datetime.fromtimestamp(answered / 1e9, UTC).date(),
            "branches": len(conv.branches),
            "model": ex.calls[-1].model if ex.calls else None,
            "tools": ",".join(sorted({t.name or "" for t in ex.tools()})),
            "warnings": len(conv.warnings),
            # the reply rules in report mode: what the linter would have done
            "failed_rules": [r.rule for r in results if r.failed],
            "blocking_rules": [r.rule for r in results if r.failed and r.blocks_publish],
            "na_rules": [r.rule for r in results if not r.applicable]
            if results or not judge
            else list(RULES),
            "judged": judge,
            "fingerprint": fingerprint,  # of the conversation: unchanged rows are reused
        }


def problem_note(ex: Exchange) -> str:
    """What went wrong with the model call, in a few words ("" when nothing did)."""
    bits = []
    if ex.cut_off:
        bits.append("stopped: " + ", ".join(ex.finish_reasons))
    if ex.error is not None:
        bits.append("failed: " + (ex.error.get("type") or ex.error.get("message") or "error"))
    return "; ".join(bits)


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
    to replay in (default: default_workers()). judge=False: without the reply rules.
    prints: the conversations' fingerprints when the caller has them already.
    """
    cfg = cfg or load_rules()
    total = reader.stats.conversations if only is None else len(only)
    if prints is None:
        prints = reader.index.conversation_fingerprints()
    n = workers if workers is not None else default_workers()
    stream = reader.index.iter_chat_rows(only=only)
    batches = _batches(stream, prints, BATCH)
    if n > 1 and total >= PARALLEL_MIN:
        results = _in_processes(batches, cfg, n, judge)
    else:
        results = (_answer_batch(b, cfg, judge) for b in batches)
    rows: list[dict] = []
    dropped = done = 0
    warnings: list[tuple[str | None, str]] = []
    for batch_rows, batch_dropped, batch_warnings, count in results:
        rows.extend(batch_rows)
        dropped += batch_dropped
        warnings.extend(batch_warnings)
        done += count
        if progress is not None:
            progress(done, total)
    return Answers(pd.DataFrame(rows, columns=COLUMNS), dropped, warnings)


# Replaying is pure Python and independent per conversation: on a machine with cores to
# spare it runs in worker processes, fed batches streamed from the index in order.
BATCH = 250
PARALLEL_MIN = 5_000  # below this, starting the workers costs more than it saves

Batch = list[tuple[str, list, str]]  # (conversation id, chat rows, fingerprint)
BatchResult = tuple[list[dict], int, list[tuple[str | None, str]], int]


# Worker processes are started with spawn, which imports the parent's main script in each
# worker: safe only when that script guards itself with `if __name__ == "__main__"`. The
# CLI does and says so (cli.main sets this); under another host (Posit Connect's runner,
# a notebook) replay stays in-process unless TRAJECTORY_WORKERS asks for workers.
PARALLEL_SAFE = False


def default_workers() -> int:
    """TRAJECTORY_WORKERS, else (under the CLI) the CPUs this process may use, at most 8."""
    n = settings.workers()
    if n is not None:
        return n
    if not PARALLEL_SAFE:
        return 1
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cpus = os.cpu_count() or 1
    return min(8, cpus)


def _batches(
    stream: Iterable[tuple[str, list]], prints: dict[str, str], size: int
) -> Iterator[Batch]:
    batch: Batch = []
    for cid, chat_rows in stream:
        batch.append((cid, chat_rows, prints.get(cid, "")))
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def _answer_batch(batch: Batch, cfg: RuleConfig, judge: bool = True) -> BatchResult:
    rows: list[dict] = []
    dropped = 0
    warnings: list[tuple[str | None, str]] = []
    for cid, chat_rows, fingerprint in batch:
        why: list = []
        conv = conversation_from_rows(cid, chat_rows, why)
        if conv is not None:
            try:
                rows.extend(list(answer_rows(conv, cfg, fingerprint, judge)))
            except Exception as exc:  # noqa: BLE001 - one conversation, never the whole list
                conv = None
                detail = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
                why.append(Warning(cid, f"dropped: its answers could not be replayed ({detail})"))
        if conv is None:
            dropped += 1
            warnings.extend((w.conversation_id, w.message) for w in why)
            continue
        warnings.extend((w.conversation_id, w.message) for w in conv.warnings)
    return rows, dropped, warnings, len(batch)


def _in_processes(
    batches: Iterable[Batch], cfg: RuleConfig, n: int, judge: bool = True
) -> Iterator[BatchResult]:
    """Results in the order of the batches, at most 2n batches in flight."""
    # spawn, not fork: the parent holds DuckDB's threads, which a fork would copy mid-flight
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=n, mp_context=ctx) as pool:
        pending: deque = deque()
        for batch in batches:
            pending.append(pool.submit(_answer_batch, batch, cfg, judge))
            if len(pending) >= 2 * n:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
