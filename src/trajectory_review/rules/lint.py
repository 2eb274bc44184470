"""The linter (one draft, report or enforce) and the harness (many recorded replies): the
same rules, so the thing measured and the thing enforced never drift."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from trajectory_review.rules.registry import (
    RULES,
    RuleConfig,
    RuleResult,
    Source,
    check,
    load_rules,
)


@dataclass(frozen=True)
class LintVerdict:
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
    cases: list[tuple[str, list[RuleResult]]]
    per_rule: dict[str, dict[str, int]] = field(default_factory=dict)
    clean: int = 0


def score(cases: Sequence[tuple[str, Sequence[RuleResult]]]) -> HarnessReport:
    if not cases:
        raise ValueError("no answers to score: an empty set is not a clean report")
    per_rule = {r: {"passed": 0, "total": 0} for r in RULES}
    clean = 0
    for _label, results in cases:
        for r in results:
            if r.applicable:
                per_rule[r.rule]["total"] += 1
                per_rule[r.rule]["passed"] += int(r.passed)
        clean += int(not any(r.failed for r in results))
    return HarnessReport([(label, list(res)) for label, res in cases], per_rule, clean)


def format_report(report: HarnessReport) -> str:
    lines = [f"{report.clean}/{len(report.cases)} answers clean", ""]
    for rule in RULES:
        t = report.per_rule[rule]
        status = "n/a " if t["total"] == 0 else ("ok  " if t["passed"] == t["total"] else "FAIL")
        lines.append(f"  {status} {rule}: {t['passed']}/{t['total']}")
    failing = [(label, [r for r in res if r.failed]) for label, res in report.cases]
    failing = [(label, fs) for label, fs in failing if fs]
    if failing:
        lines += ["", "Failing answers:"]
        for label, fs in failing:
            lines.append(f"  {label}")
            lines.extend(f"    - {r.rule}: {r.detail}" for r in fs)
    return "\n".join(lines) + "\n"
