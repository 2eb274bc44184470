"""The machine-readable twin of every page: `trajectory-review/export@1` (docs/spec.md §7)."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Iterator
from typing import Any, TextIO

from trajectory_review.model.reader import TraceReader
from trajectory_review.model.spans import iso_ns
from trajectory_review.model.trajectory import Conversation, Exchange, Warning
from trajectory_review.replay.documents import Ledger, ledger
from trajectory_review.replay.project import projected_markup, replay_exchange
from trajectory_review.reviews.log import ReviewEvent, ReviewState
from trajectory_review.rules.evidence import membership
from trajectory_review.rules.judged import judge_answer, judged_answers
from trajectory_review.rules.registry import RuleConfig
from trajectory_review.support.cells import csv_text

SCHEMA = "trajectory-review/export@1"


def exchange_dict(ex: Exchange, docs: Ledger | None = None) -> dict[str, Any]:
    rep = replay_exchange(ex)
    written = (docs or Ledger()).written.get(ex.index, [])
    return {
        "index": ex.index,
        "question": ex.question,
        "tools": [
            {"name": t.name, "arguments": t.arguments, "result": t.result} for t in ex.tools()
        ],
        "answer_raw": ex.answer_raw,
        "answer_projected": projected_markup(rep),
        "provenance_tag": ex.tag,
        "citation_decisions": list(ex.decisions),
        "rejected_citations": rep.rejected,
        "malformed_citations": rep.malformed,
        "chips": [c.to_dict() for c in rep.chips],
        "finish_reasons": list(ex.finish_reasons),
        "error": ex.error,
        # documents the model handed the user (added to export@1): what the chip opened,
        # as the ledger says the user had it: the title the chip showed, its version, and
        # whether commons saved it at all (replay/documents.py)
        "artifacts": [
            written[k].to_dict()
            if k < len(written)
            else {"id": a.id, "title": a.title, "body": a.body}
            for k, a in enumerate(rep.artifacts)
        ],  # fmt: skip
    }


def conversation_dict(conv: Conversation) -> dict[str, Any]:
    docs = ledger(conv)
    return {
        "id": conv.id,
        "last_active": iso_ns(conv.last_active_ns),
        "branches": len(conv.branches),
        "exchanges": [exchange_dict(ex, docs) for ex in conv.exchanges],
    }


def _ordered(reader: TraceReader) -> tuple[list[Conversation], int, list[Warning]]:
    convs: list[Conversation] = []
    dropped = 0
    warnings = list(reader.source_warnings())
    for _cid, conv, why in reader.iter_conversations():
        if conv is None:
            dropped += 1
            warnings.extend(why)
            continue
        convs.append(conv)
        warnings.extend(conv.warnings)
    convs.sort(key=lambda c: (-c.last_active_ns, c.id))
    return convs, dropped, warnings


def _stats(reader: TraceReader, conversations: int, dropped: int) -> dict[str, int]:
    s = reader.stats
    return {
        "files": s.files,
        "lines": s.lines,
        "bad_lines": s.bad_lines,
        "spans": s.spans,
        "conversations": conversations,
        "dropped_conversations": dropped,
    }


def export_document(reader: TraceReader) -> dict[str, Any]:
    convs, dropped, warnings = _ordered(reader)
    return {
        "schema": SCHEMA,
        "stats": _stats(reader, len(convs), dropped),
        "warnings": [w.to_dict() for w in warnings],
        "conversations": [conversation_dict(c) for c in convs],
    }


def write_jsonl(reader: TraceReader, out: TextIO) -> None:
    """export@1 as JSON lines: the schema, stats and warnings first, then a conversation a
    line, newest first. Conversations are written to a scratch file as they are replayed
    and copied out in order, so a large export never sits in memory (the first line needs
    counts only known at the end)."""
    dropped = 0
    warnings = list(reader.source_warnings())
    order: list[tuple[int, str, int, int]] = []
    with tempfile.TemporaryFile("w+b") as scratch:
        for _cid, conv, why in reader.iter_conversations():
            if conv is None:
                dropped += 1
                warnings.extend(why)
                continue
            warnings.extend(conv.warnings)
            line = (_json_line(conversation_dict(conv))).encode("utf-8")
            order.append((-conv.last_active_ns, conv.id, scratch.tell(), len(line)))
            scratch.write(line)
        head = {
            "schema": SCHEMA,
            "stats": _stats(reader, len(order), dropped),
            "warnings": [w.to_dict() for w in warnings],
        }
        out.write(_json_line(head))
        for _key, _id, offset, size in sorted(order):
            scratch.seek(offset)
            out.write(scratch.read(size).decode("utf-8"))


REVIEWED_SCHEMA = "trajectory-review/reviewed@1"


# Long on purpose: one reviewed@1 record, field by field in the schema's order.
def write_reviewed(
    reader: TraceReader,
    review: ReviewState,
    rules: RuleConfig,
    out: TextIO,
    only: set[tuple[str, int]] | None = None,
) -> int:
    """The reviewed answers as a dataset (reviewed@1): one line per answer that has review
    events, with what the reviewer saw and every verdict and note. Returns the count."""
    by_answer: dict[tuple[str, int], list[ReviewEvent]] = {}
    for e in review.events:
        if e.exchange is not None:
            by_answer.setdefault((e.conversation_id, e.exchange), []).append(e)
    sampled = membership(review)  # the sample an answer was drawn in, for unbiased figures
    if only is not None:  # e.g. the answers the app's current filters list
        by_answer = {k: v for k, v in by_answer.items() if k in only}
    rows = []
    for cid in sorted({c for c, _ in by_answer}):
        conv = reader.conversation(cid)
        if conv is None:
            continue
        for ex in conv.exchanges:
            events = by_answer.get((cid, ex.index))
            if not events:
                continue
            results = judge_answer(ex, rules).results
            flagged = review.flagged(cid, ex.index) is not None
            rows.append(
                (
                    -conv.last_active_ns,
                    cid,
                    ex.index,
                    {
                        "schema": REVIEWED_SCHEMA,
                        "conversation_id": cid,
                        "exchange": ex.index,
                        # added to reviewed@1: the sample it was drawn in, or null
                        "sample": (
                            {
                                "id": sampled[(cid, ex.index)][0],
                                "stratum": sampled[(cid, ex.index)][1],
                            }
                            if (cid, ex.index) in sampled
                            else None
                        ),  # fmt: skip
                        **{k: v for k, v in exchange_dict(ex).items() if k in _DATASET_FIELDS},
                        "rule_results": [r.to_dict() for r in results],
                        "review": {
                            "state": "flagged" if flagged else "reviewed",
                            # QA's queue: to do, done (a verdict on each failing rule),
                            # or looks right
                            "queue": review.answer_state(
                                (cid, ex.index), [r.rule for r in results if r.failed]
                            ),
                            "verdicts": [
                                {
                                    "rule": e.rule,
                                    "verdict": e.verdict,
                                    "author": e.author,
                                    "identity": e.identity,
                                    "time": e.ts,
                                    "note": e.text,
                                }
                                for e in events
                                if e.type == "verdict"
                            ],  # fmt: skip
                            "notes": [
                                {
                                    "author": e.author,
                                    "identity": e.identity,
                                    "time": e.ts,
                                    "text": e.text,
                                }
                                for e in events
                                if e.type == "note"
                            ],
                        },
                    },
                )
            )
    for *_key, row in sorted(rows, key=lambda r: r[:3]):
        out.write(_json_line(row))
    return len(rows)


_DATASET_FIELDS = ("question", "tools", "answer_raw", "answer_projected", "provenance_tag",
                   "citation_decisions")  # fmt: skip


def _json_line(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")) + "\n"


CSV_COLUMNS = [
    "conversation_id",
    "index",
    "last_active",
    "question",
    "provenance_tag",
    "rejected_citations",
    "malformed_citations",
    "flagged_rules",
    "review_status",
]


def export_csv(
    reader: TraceReader,
    rules: RuleConfig | None = None,
    review_status: Callable[[Conversation, Exchange], str] | None = None,
) -> str:
    """A row per answer; with `rules`, the rules each final answer fails."""
    convs, _dropped, _warnings = _ordered(reader)

    def rows() -> Iterator[list[Any]]:
        for conv in convs:
            for judged in judged_answers(conv, rules):
                ex, rep = judged.exchange, judged.replay
                yield [
                    conv.id,
                    ex.index,
                    iso_ns(conv.last_active_ns),
                    ex.question,
                    ex.tag or "",
                    rep.rejected,
                    rep.malformed,
                    ";".join(judged.failed),
                    review_status(conv, ex) if review_status else "",
                ]

    return csv_text(CSV_COLUMNS, rows())
