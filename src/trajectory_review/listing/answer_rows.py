"""One catalog row per answer, from one replayed conversation: pure Python, no pandas or
DuckDB, so the worker processes that replay the corpus import only what they run."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, date, datetime
from typing import Any

from trajectory_review.model.provenance import tag_key
from trajectory_review.model.trajectory import Conversation, Exchange, Warning
from trajectory_review.rules.judged import conversations, judge_answer
from trajectory_review.rules.registry import RULES, RuleConfig
from trajectory_review.support.errors import one_line
from trajectory_review.support.workers import Batch

# The catalog's columns in row order, each with its kind: both engines' tables are made
# from this one list (dialect.Dialect.column_types), so the DuckDB catalog is not left to
# pandas' inference while ClickHouse's DDL says otherwise. A new column is one entry here
# and one key in answer_rows' row.
COLUMN_KINDS: dict[str, str] = {
    "conversation_id": "text", "exchange": "int", "n_exchanges": "int", "question": "text",
    "answer_text": "long text", "tag": "text", "rejected": "int", "malformed": "int",
    "problem": "int", "finish": "text", "conflict": "bool", "complete": "bool",
    "last_active_ns": "int", "answered_ns": "int", "day": "date", "branches": "int",
    "model": "text or null", "tools": "text", "warnings": "int", "failed_rules": "texts",
    "blocking_rules": "texts", "na_rules": "texts", "judged": "bool", "fingerprint": "text",
}  # fmt: skip
COLUMNS = list(COLUMN_KINDS)
RULE_COLUMNS = ["failed_rules", "blocking_rules", "na_rules"]


def answer_rows(
    conv: Conversation, cfg: RuleConfig, fingerprint: str = "", judge: bool = True
) -> Iterable[dict[str, Any]]:
    """The conversation's answers as catalog rows. judge=False leaves the reply rules out
    (the rule columns empty, `judged` false): the list can be served before the rules
    have run over every answer (Catalog.judge fills them in)."""
    # what every answer of the conversation shares, worked out once (a conversation of
    # 20,000 answers is one worker's whole first slice)
    n, branches, warnings = len(conv.exchanges), len(conv.branches), len(conv.warnings)
    days: dict[int, date] = {}
    for ex in conv.exchanges:
        judged = judge_answer(ex, cfg if judge else None)
        rep, results, complete = judged.replay, judged.results, ex.complete
        answered = ex.calls[-1].end_ns if ex.calls else conv.last_active_ns
        day = days.get(answered)
        if day is None:
            day = days[answered] = datetime.fromtimestamp(answered / 1e9, UTC).date()
        note = problem_note(ex)
        yield {
            "conversation_id": conv.id,
            "exchange": ex.index,
            "n_exchanges": n,
            "question": ex.question,
            "answer_text": judged.reply,
            "tag": tag_key(ex.tag),
            "rejected": rep.rejected,
            "malformed": rep.malformed,
            # the user got a cut-off or filtered answer, or the model call failed
            "problem": int(bool(note)),
            "finish": note,
            "conflict": ex.conflict,
            "complete": complete,
            "last_active_ns": conv.last_active_ns,
            "answered_ns": answered,
            "day": day,
            "branches": branches,
            "model": ex.calls[-1].model if ex.calls else None,
            "tools": ",".join(sorted({t.name or "" for t in ex.tools()})),
            "warnings": warnings,
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


BatchResult = tuple[list[dict[str, Any]], int, list[tuple[str | None, str]], int]


def answer_batch(batch: Batch, cfg: RuleConfig, judge: bool = True) -> BatchResult:
    rows: list[dict[str, Any]] = []
    dropped = 0
    warnings: list[tuple[str | None, str]] = []
    for cid, conv, why, fingerprint in conversations(batch):
        if conv is not None:
            try:
                rows.extend(list(answer_rows(conv, cfg, fingerprint, judge)))
            except Exception as exc:
                conv = None
                detail = one_line(exc)
                why.append(Warning(cid, f"dropped: its answers could not be replayed ({detail})"))
        if conv is None:
            dropped += 1
            warnings.extend((w.conversation_id, w.message) for w in why)
            continue
        warnings.extend((w.conversation_id, w.message) for w in conv.warnings)
    return rows, dropped, warnings, len(batch)
