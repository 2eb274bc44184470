"""The machine-readable twin of every page: `trajectory-review/export@1` (spec/cli.md)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from trajectory_review.model.cells import csv_text
from trajectory_review.model.reader import TraceReader
from trajectory_review.model.trajectory import (
    Conversation,
    Exchange,
    Warning,
    iso_ns,  # noqa: F401 - export@1 times
)
from trajectory_review.replay.project import projected_markup, replay_exchange

SCHEMA = "trajectory-review/export@1"


def exchange_dict(ex: Exchange) -> dict[str, Any]:
    rep = replay_exchange(ex)
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
    }


def conversation_dict(conv: Conversation) -> dict[str, Any]:
    return {
        "id": conv.id,
        "last_active": iso_ns(conv.last_active_ns),
        "branches": len(conv.branches),
        "exchanges": [exchange_dict(ex) for ex in conv.exchanges],
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


def export_document(reader: TraceReader) -> dict[str, Any]:
    convs, dropped, warnings = _ordered(reader)
    s = reader.stats
    return {
        "schema": SCHEMA,
        "stats": {
            "files": s.files,
            "lines": s.lines,
            "bad_lines": s.bad_lines,
            "spans": s.spans,
            "conversations": len(convs),
            "dropped_conversations": dropped,
        },
        "warnings": [w.to_dict() for w in warnings],
        "conversations": [conversation_dict(c) for c in convs],
    }


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
    flagged_rules: Callable[[Conversation, Exchange], list[str]] | None = None,
    review_status: Callable[[Conversation, Exchange], str] | None = None,
) -> str:
    convs, _dropped, _warnings = _ordered(reader)

    def rows():  # noqa: ANN202
        for conv in convs:
            for ex in conv.exchanges:
                rep = replay_exchange(ex)
                yield [
                    conv.id,
                    ex.index,
                    iso_ns(conv.last_active_ns),
                    ex.question,
                    ex.tag or "",
                    rep.rejected,
                    rep.malformed,
                    ";".join(flagged_rules(conv, ex)) if flagged_rules else "",
                    review_status(conv, ex) if review_status else "",
                ]

    return csv_text(CSV_COLUMNS, rows())
