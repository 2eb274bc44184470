"""One catalog row per answer, from one replayed conversation: pure Python, no pandas or
DuckDB, so the worker processes that replay the corpus import only what they run."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache
from typing import Any

from trajectory_review.model.provenance import tag_key
from trajectory_review.model.trajectory import Conversation, Exchange, Warning
from trajectory_review.rules.judged import conversations, judge_answer
from trajectory_review.rules.registry import RULES, RuleConfig, RuleResult
from trajectory_review.support.errors import one_line
from trajectory_review.support.workers import WHOLE, Batch, Slice, slice_of

# The catalog's columns in row order, each with its kind: both engines' tables are made
# from this one list (dialect.Dialect.column_types), so the DuckDB catalog is not left to
# pandas' inference while ClickHouse's DDL says otherwise. A new column is one entry here
# and one item, at the same place, in answer_rows' row.
COLUMN_KINDS: dict[str, str] = {
    "conversation_id": "text", "exchange": "int", "n_exchanges": "int", "question": "text",
    "answer_text": "long text", "tag": "text", "rejected": "int", "malformed": "int",
    "problem": "int", "finish": "text", "conflict": "bool", "complete": "bool",
    "last_active_ns": "int", "answered_ns": "int", "day": "date", "branches": "int",
    "model": "text or null", "tools": "text", "warnings": "int", "failed_rules": "texts",
    "blocking_rules": "texts", "na_rules": "texts", "judged": "bool", "fingerprint": "text",
}  # fmt: skip
COLUMNS = list(COLUMN_KINDS)
Row = tuple[Any, ...]  # one answer's values, in COLUMNS' order
RULE_COLUMNS = ["failed_rules", "blocking_rules", "na_rules"]


def answer_rows(
    conv: Conversation,
    cfg: RuleConfig,
    fingerprint: str = "",
    judge: bool = True,
    part: Slice = WHOLE,
) -> Iterable[Row]:
    """The conversation's answers as catalog rows, in COLUMNS' order (`part`: only a
    slice of them, see workers.batches). judge=False leaves the reply rules out (the rule
    columns empty, `judged` false): the list can be served before the rules have run over
    every answer (Catalog.judge fills them in)."""
    # what every answer of the conversation shares, worked out once (a conversation of
    # 20,000 answers is one worker's whole first slice)
    n, branches, warnings = len(conv.exchanges), len(conv.branches), len(conv.warnings)
    exchanges = conv.exchanges if part == WHOLE else conv.exchanges[slice_of(n, part)]
    for ex in exchanges:
        judged = judge_answer(ex, cfg if judge else None)
        rep, results, complete = judged.replay, judged.results, ex.complete
        last = ex.calls[-1] if ex.calls else None
        answered = last.end_ns if last is not None else conv.last_active_ns
        day = _day(answered)
        note = problem_note(ex)
        failed, blocking, na = _rule_columns(results) if results else ([], [], [])
        # A tuple in COLUMNS' order, not a dict: every row is pickled back from a worker
        # and made into a frame, and as dicts those were most of what the parent process
        # did (docs/performance-log.md, "catalog rows as tuples")
        yield (
            conv.id,  # conversation_id
            ex.index,  # exchange
            n,  # n_exchanges
            ex.question,  # question
            judged.reply,  # answer_text
            tag_key(ex.tag),  # tag
            rep.rejected,  # rejected
            rep.malformed,  # malformed
            # the user got a cut-off or filtered answer, or the model call failed
            int(bool(note)),  # problem
            note,  # finish
            ex.conflict,  # conflict
            complete,  # complete
            conv.last_active_ns,  # last_active_ns
            answered,  # answered_ns
            day,  # day
            branches,  # branches
            last.model if last is not None else None,  # model
            ",".join(sorted(ex.tool_names())),  # tools
            warnings,  # warnings
            # the reply rules in report mode: what the linter would have done
            failed,  # failed_rules
            blocking,  # blocking_rules
            na if results or not judge else list(RULES),  # na_rules
            judge,  # judged
            fingerprint,  # fingerprint, of the conversation: unchanged rows are reused
        )


NS_PER_DAY = 86_400 * 10**9
# Within this of midnight, a day is worked out on its own: the float the date is taken
# from (as it always was) may round across midnight there, where the day number does not.
NEAR_MIDNIGHT_NS = 10**6


def _day(ns: int) -> date:
    """The UTC day of a time, kept by day number (each answer has a time of its own, so
    kept by time it was worked out again for every answer)."""
    number, into = divmod(ns, NS_PER_DAY)
    if into < NEAR_MIDNIGHT_NS or into > NS_PER_DAY - NEAR_MIDNIGHT_NS:
        return datetime.fromtimestamp(ns / 1e9, UTC).date()
    return _day_number(number)


@lru_cache(maxsize=4096)
def _day_number(number: int) -> date:
    return EPOCH + timedelta(days=number)


EPOCH = date(1970, 1, 1)


def _rule_columns(results: Sequence[RuleResult]) -> tuple[list[str], list[str], list[str]]:
    """The rules an answer fails, those of them that would withhold it, and those that
    could not judge it (one pass over its results)."""
    failed, blocking, na = [], [], []
    for r in results:
        if not r.applicable:
            na.append(r.rule)
        elif not r.passed:
            failed.append(r.rule)
            if r.blocks_publish:
                blocking.append(r.rule)
    return failed, blocking, na


def problem_note(ex: Exchange) -> str:
    """What went wrong with the model call, in a few words ("" when nothing did)."""
    bits = []
    if ex.cut_off:
        bits.append("stopped: " + ", ".join(ex.finish_reasons))
    error = ex.error  # worked out from the calls each time it is asked
    if error is not None:
        bits.append("failed: " + (error.get("type") or error.get("message") or "error"))
    return "; ".join(bits)


BatchResult = tuple[list[Row], int, list[tuple[str | None, str]], int]


def answer_batch(batch: Batch, cfg: RuleConfig, judge: bool = True) -> BatchResult:
    rows: list[Row] = []
    dropped = 0
    warnings: list[tuple[str | None, str]] = []
    counted = 0
    for (*_, part), (cid, conv, why, fingerprint) in zip(batch, conversations(batch), strict=True):
        # a conversation handed out in slices is counted, and its warnings said, by its
        # first slice; a later one only adds its answers (or says why it could not)
        first = part[0] == 0
        counted += first
        if conv is not None:
            try:
                rows.extend(list(answer_rows(conv, cfg, fingerprint, judge, part)))
            except Exception as exc:
                conv = None
                detail = one_line(exc)
                why.append(Warning(cid, f"dropped: its answers could not be replayed ({detail})"))
                if not first:
                    warnings.append((cid, why[-1].message))
        if conv is None:
            if first:
                dropped += 1
                warnings.extend((w.conversation_id, w.message) for w in why)
            continue
        if first:
            warnings.extend((w.conversation_id, w.message) for w in conv.warnings)
    return rows, dropped, warnings, counted
