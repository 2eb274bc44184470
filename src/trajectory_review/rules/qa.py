"""Reply rules over recorded answers: the lint CLI, the QA queue's inputs and the rule
quality figures. Reads through the same replay as the app; judges what the user saw."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from trajectory_review import settings
from trajectory_review.rules.judged import conversations, judged_answers
from trajectory_review.rules.lint import HarnessReport, format_report, tally
from trajectory_review.rules.registry import (
    RULES,
    RuleConfig,
    RulesError,
    load_rules,
)
from trajectory_review.support.cells import csv_text
from trajectory_review.support.workers import Batch, batches, run_batches

if TYPE_CHECKING:  # only named in signatures: a lint worker process imports neither
    from trajectory_review.model.reader import TraceReader
    from trajectory_review.reviews.log import ReviewState


def lint_batch(batch: Batch, cfg: RuleConfig) -> tuple[HarnessReport, bytes]:
    """A batch of conversations judged (run_batches): its tally, and its answers as they
    sit in the JSON report. Encoded here, in the worker: as dicts, the parent spent more
    time unpickling them than anything else it did while the workers judged."""
    cases: list[tuple[str, tuple[Any, ...]]] = []
    answers: list[dict[str, Any]] = []
    for _cid, conv, _why, _print in conversations(batch):
        if conv is None:
            continue
        for judged in judged_answers(conv, cfg, final_only=True):
            verdict, ex = judged.verdict, judged.exchange
            if verdict is None:  # never: a final answer, judged by cfg
                continue
            cases.append((f"{conv.id} #{ex.index}", verdict.results))
            answers.append(
                {
                    "conversation_id": conv.id,
                    "index": ex.index,
                    "would_collapse": verdict.would_collapse,
                    "results": [r.to_dict() for r in verdict.results],
                }
            )
    return tally(cases), b",\n".join(_indented(a, 4) for a in answers)


def _indented(value: object, depth: int) -> bytes:
    """A value as orjson's OPT_INDENT_2 writes it `depth` spaces in. Every line but the
    first is shifted: JSON text holds no newline outside the layout (strings escape it)."""
    try:
        data = orjson.dumps(value, option=orjson.OPT_INDENT_2)
    except (TypeError, orjson.JSONEncodeError):
        # a value orjson refuses (a huge integer, a lone surrogate): the standard library,
        # ASCII-escaped so the text is valid UTF-8 whatever it holds
        data = json.dumps(value, indent=2).encode()
    pad = b" " * depth
    return pad + data.replace(b"\n", b"\n" + pad) if depth else data


def run_lint(
    reader: TraceReader, rules_path: str | None, as_json: bool, fail_on: str = "never"
) -> int:
    """The harness report; exit 1 when an answer fails as `fail_on` says (CI gating)."""
    try:
        cfg = load_rules(rules_path)
    except RulesError as exc:
        print(f"trajectory-review: {exc}", file=sys.stderr)
        return 2
    report = HarnessReport()
    answers: list[bytes] = []  # each batch's, encoded (lint_batch)
    # every answer replayed and judged in worker processes when there are cores to spare,
    # results in the index's order (the report is the same whichever way it ran)
    work = batches(reader.index.iter_chat_rows(), {})
    for part, encoded in run_batches(lint_batch, work, (cfg,), reader.stats.conversations):
        report.add(part)
        if encoded:
            answers.append(encoded)
    if not report.answers:
        print("trajectory-review: no recorded answers to lint", file=sys.stderr)
        return 2
    if as_json:
        write_report(
            {"schema": "trajectory-review/lint@1", "mode": "report", "rules": cfg.source},
            answers,
            report.per_rule,
        )
    else:
        sys.stdout.write(format_report(report))
    if fail_on == "gate" and report.withheld:
        return 1
    if fail_on == "metric" and report.clean < report.answers:
        return 1
    return 0


# -- rule quality ------------------------------------------------------------------------------


@dataclass(frozen=True)
class RuleQuality:
    rule: str
    evaluated: int  # answers where the rule applied
    not_applicable: int
    flagged: int  # applicable failures
    blocking: int  # of those, the ones that would withhold the answer
    reviewed: int  # flags with a verdict
    false_positives: int
    unreviewed: int

    @property
    def fp_rate(self) -> float | None:
        """False positives / verdicts; None (not 0) when nobody has reviewed a flag."""
        return self.false_positives / self.reviewed if self.reviewed else None

    def rate_text(self) -> str:
        if self.fp_rate is None:
            return "no reviews yet"
        return f"{self.fp_rate:.0%} ({self.false_positives} of {self.reviewed})"


def rule_quality(rows: Iterable[dict[str, Any]], review: ReviewState) -> list[RuleQuality]:
    """rows: answers with `conversation_id`, `exchange`, `failed_rules`, `blocking_rules`,
    `na_rules` (lists of rule names), as the catalog stores them."""
    verdicts = review.verdicts()
    stats = {r: dict(evaluated=0, na=0, flagged=0, blocking=0, reviewed=0, fp=0) for r in RULES}
    for row in rows:
        failed = set(row["failed_rules"])
        for rule in RULES:
            s = stats[rule]
            if rule in row["na_rules"]:
                s["na"] += 1
                continue
            s["evaluated"] += 1
            if rule in failed:
                s["flagged"] += 1
                s["blocking"] += int(rule in row["blocking_rules"])
                v = verdicts.get((row["conversation_id"], int(row["exchange"]), rule))
                if v is not None:
                    s["reviewed"] += 1
                    s["fp"] += int(v.verdict == "false_positive")
    return [
        RuleQuality(
            rule,
            s["evaluated"],
            s["na"],
            s["flagged"],
            s["blocking"],
            s["reviewed"],
            s["fp"],
            s["flagged"] - s["reviewed"],
        )
        for rule, s in stats.items()
    ]


QUALITY_COLUMNS = [
    "rule",
    "evaluated",
    "not_applicable",
    "flagged",
    "would_block",
    "reviewed",
    "false_positives",
    "false_positive_rate",
    "unreviewed",
]


def quality_csv(quality: list[RuleQuality]) -> str:
    return csv_text(
        QUALITY_COLUMNS,
        (
            [
                q.rule,
                q.evaluated,
                q.not_applicable,
                q.flagged,
                q.blocking,
                q.reviewed,
                q.false_positives,
                "" if q.fp_rate is None else f"{q.fp_rate:.4f}",
                q.unreviewed,
            ]
            for q in quality
        ),
    )


def write_report(head: dict[str, Any], answers: list[bytes], per_rule: dict[str, Any]) -> None:
    """The lint@1 report on stdout, indented: `head`'s fields, the answers the workers
    encoded, joined as they came, and the per-rule totals. orjson, not json.dump: with
    an indent the standard library encodes in pure Python (docs/performance-log.md,
    "lint@1 encoding")."""
    out = sys.stdout.buffer
    sys.stdout.flush()
    out.write(_indented(head, 0)[:-2])  # without its closing "\n}"
    out.write(b',\n  "answers": [\n')
    out.write(b",\n".join(answers))
    out.write(b'\n  ],\n  "per_rule": ')
    out.write(_indented(per_rule, 2)[2:])  # the key is on the line already
    out.write(b"\n}\n")
    out.flush()


def default_rules_path() -> str | None:

    path = settings.rules_file()
    return str(Path(path)) if path else None
