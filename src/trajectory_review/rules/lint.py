"""The linter (one draft, report or enforce) and the harness (many recorded replies): the
same rules, so the thing measured and the thing enforced never drift."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import msgspec

from trajectory_review.rules.registry import (
    RULES,
    RuleConfig,
    RuleResult,
    Source,
    check,
    load_rules,
)


class LintVerdict(msgspec.Struct, frozen=True, gc=False):
    publish: bool
    would_collapse: bool
    failed: tuple[str, ...]  # rules that are applicable and block publishing
    reasons: tuple[str, ...]
    results: tuple[RuleResult, ...]
    mode: str


def lint(
    reply: str, sources: Sequence[Source], cfg: RuleConfig | None = None, mode: str = "report"
) -> LintVerdict:
    """A verdict on one draft, never replacement text (the caller owns its handoff copy).
    Report mode changes nothing: it records what enforce mode would have withheld."""
    if mode not in ("report", "enforce"):
        raise ValueError(f"unknown lint mode: {mode}")
    results = tuple(check(reply, sources, cfg or load_rules()))
    broken = [r for r in results if r.applicable and r.blocks_publish]
    collapse = bool(broken)
    return LintVerdict(
        publish=True if mode == "report" else not collapse,
        would_collapse=collapse,
        failed=tuple(r.rule for r in broken),
        reasons=tuple(f"{r.rule}: {r.detail}" for r in broken),
        results=results,
        mode=mode,
    )


# -- harness ---------------------------------------------------------------------------------


@dataclass
class HarnessReport:
    """A harness run's tally. Built per batch of answers (`tally`, in the worker that
    judged them) and added up (`add`): the parent keeps the failing answers only, not
    every rule result of every answer (60,000 of them for 5,000 conversations, pickled
    back from the workers twice over with the report's copy)."""

    answers: int = 0
    per_rule: dict[str, dict[str, int]] = field(
        default_factory=lambda: {r: {"passed": 0, "total": 0} for r in RULES}
    )
    clean: int = 0
    withheld: int = 0  # answers enforce mode would have withheld (would_collapse)
    failing: list[tuple[str, list[RuleResult]]] = field(default_factory=list)

    def add(self, other: HarnessReport) -> None:
        self.answers += other.answers
        self.clean += other.clean
        self.withheld += other.withheld
        for rule, t in other.per_rule.items():
            mine = self.per_rule.setdefault(rule, {"passed": 0, "total": 0})
            mine["passed"] += t["passed"]
            mine["total"] += t["total"]
        self.failing.extend(other.failing)


def tally(cases: Iterable[tuple[str, Sequence[RuleResult]]]) -> HarnessReport:
    """The report of some answers (none is an empty tally, for a batch without any)."""
    report = HarnessReport()
    per_rule = report.per_rule
    for label, results in cases:
        report.answers += 1
        failed = []
        blocks = False
        for r in results:
            if r.applicable:
                per_rule[r.rule]["total"] += 1
                per_rule[r.rule]["passed"] += int(r.passed)
                blocks = blocks or r.blocks_publish
                if not r.passed:
                    failed.append(r)
        report.withheld += blocks
        if failed:
            report.failing.append((label, failed))
        else:
            report.clean += 1
    return report


def score(cases: Sequence[tuple[str, Sequence[RuleResult]]]) -> HarnessReport:
    if not cases:
        raise ValueError("no answers to score: an empty set is not a clean report")
    return tally(cases)


def format_report(report: HarnessReport) -> str:
    lines = [f"{report.clean}/{report.answers} answers clean", ""]
    for rule in RULES:
        t = report.per_rule[rule]
        status = "n/a " if t["total"] == 0 else ("ok  " if t["passed"] == t["total"] else "FAIL")
        lines.append(f"  {status} {rule}: {t['passed']}/{t['total']}")
    if report.failing:
        lines += ["", "Failing answers:"]
        for label, fs in report.failing:
            lines.append(f"  {label}")
            lines.extend(f"    - {r.rule}: {r.detail}" for r in fs)
    return "\n".join(lines) + "\n"
