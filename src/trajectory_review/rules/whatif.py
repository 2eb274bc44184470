"""Rule what-if: a candidate reply-rules profile against the one in force, over every
recorded answer, before anyone enforces it.

Each answer is replayed once and judged twice (the replay is the expensive part and is
shared): per rule, what was flagged and withheld before and after, which answers gained
or lost a flag, and — against what reviewers already said — how many gained flags they
had called false positives, how many lost flags they had called correct, and the rule's
precision before and after over the flags that have a verdict (None, never 0, when no
flag is comparable). Answers are counted once however many of their rules changed. The
command line (`lint --rules NEW --compare OLD`) and the app's What if tab both read it
from here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from trajectory_review import settings
from trajectory_review.rules.evidence import standing
from trajectory_review.rules.judged import JudgedAnswer, conversations, judged_answers
from trajectory_review.rules.registry import RULES, RuleConfig, RuleResult, check
from trajectory_review.support.isolated import TimeLimit, WorkerFailed, run_isolated
from trajectory_review.support.workers import BATCH, Batch, batches

if TYPE_CHECKING:
    from trajectory_review.model.reader import TraceReader
    from trajectory_review.reviews.log import ReviewState

AnswerKey = tuple[str, int]
# (applicable, failed, blocks) of each rule, in RULES' order
Outcome = tuple[tuple[bool, bool, bool], ...]


@dataclass(frozen=True)
class Diff:
    """One rule of one answer decided differently by the candidate."""

    conversation_id: str
    exchange: int
    rule: str
    before: dict[str, Any]  # RuleResult.to_dict()
    after: dict[str, Any]
    evidence: tuple[str, ...]  # the words that triggered whichever side flagged

    @property
    def change(self) -> str:
        failed = (_failed(self.before), _failed(self.after))
        return {(False, True): "gained", (True, False): "lost"}.get(failed, "changed")


def _failed(r: dict[str, Any]) -> bool:
    return bool(r["applicable"] and not r["passed"])


@dataclass(frozen=True)
class RuleWhatIf:
    rule: str
    scanned: int
    not_applicable: tuple[int, int]  # before, after
    flagged: tuple[int, int]
    gained: int
    lost: int
    unchanged: int  # flagged before and after
    withhold: tuple[int, int]  # flags that would withhold the answer
    gained_false_positive: int  # gained flags reviewers had called false positive
    lost_correct: int  # lost flags reviewers had called correct
    precision: tuple[float | None, float | None]  # over flags with a verdict; None: none
    comparable: tuple[int, int]  # flags with a verdict, before and after


@dataclass(frozen=True)
class WhatIf:
    before: str  # the profiles, as named
    after: str
    answers: int  # answers scanned (each final answer once)
    changed_answers: int  # answers with any rule decided differently, each once
    withheld: tuple[int, int]  # answers the linter would withhold, each once
    newly_withheld: int
    no_longer_withheld: int
    rules: tuple[RuleWhatIf, ...]
    diffs: tuple[Diff, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": "trajectory-review/whatif@1",
            "before": self.before,
            "after": self.after,
            "answers": self.answers,
            "changed_answers": self.changed_answers,
            "withheld": {"before": self.withheld[0], "after": self.withheld[1]},
            "newly_withheld": self.newly_withheld,
            "no_longer_withheld": self.no_longer_withheld,
            "per_rule": {
                r.rule: {
                    "scanned": r.scanned,
                    "not_applicable": _pair(r.not_applicable),
                    "flagged": _pair(r.flagged),
                    "gained": r.gained,
                    "lost": r.lost,
                    "unchanged": r.unchanged,
                    "would_withhold": _pair(r.withhold),
                    "gained_false_positive": r.gained_false_positive,
                    "lost_correct": r.lost_correct,
                    "precision": _pair(r.precision),
                    "comparable": _pair(r.comparable),
                }
                for r in self.rules
            },
            "changes": [
                {
                    "conversation_id": d.conversation_id,
                    "exchange": d.exchange,
                    "rule": d.rule,
                    "change": d.change,
                    "before": d.before,
                    "after": d.after,
                    "evidence": list(d.evidence),
                }
                for d in self.diffs
            ],
        }


def _pair(values: tuple[Any, Any]) -> dict[str, Any]:
    return {"before": values[0], "after": values[1]}


@dataclass
class Judged:
    """A batch's answers as both profiles decide them (what a worker sends back)."""

    outcomes: list[tuple[AnswerKey, Outcome, Outcome]] = field(default_factory=list)
    diffs: list[Diff] = field(default_factory=list)


def _outcome(results: Iterable[RuleResult]) -> Outcome:
    return tuple((r.applicable, r.failed, r.failed and r.blocks_publish) for r in results)


def whatif_batch(batch: Batch, old: RuleConfig, new: RuleConfig) -> Judged:
    """One batch of conversations: each final answer replayed once, judged by both."""
    out = Judged()
    for cid, conv, _why, _print in conversations(batch):
        for answer in judged_answers(conv, None, final_only=True) if conv is not None else ():
            _judge_both(out, cid, answer, old, new)
    return out


def _judge_both(
    out: Judged, cid: str, answer: JudgedAnswer, old: RuleConfig, new: RuleConfig
) -> None:
    """One answer judged by both rule sets: its outcomes, and each flag that changed."""
    ex, sources = answer.exchange, list(answer.sources)
    before, after = check(answer.reply, sources, old), check(answer.reply, sources, new)
    out.outcomes.append(((cid, ex.index), _outcome(before), _outcome(after)))
    for b, a in zip(before, after, strict=True):
        # a flag gained or lost, or its gate moved; a rule that only became (not)
        # applicable where it passed is in the per-rule counts, not a change
        if (b.failed, b.failed and b.blocks_publish) != (a.failed, a.failed and a.blocks_publish):
            evidence = a.evidence if a.failed else b.evidence
            out.diffs.append(Diff(cid, ex.index, a.rule, b.to_dict(), a.to_dict(), evidence))


def whatif_workers() -> int:
    """The workers a what-if runs in at most: TRAJECTORY_WORKERS, else one per core (8 at
    most); fewer when there are fewer batches."""
    return settings.workers() or min(8, settings.usable_cores())


def what_if(
    reader: TraceReader,
    old: RuleConfig,
    new: RuleConfig,
    review: ReviewState | None = None,
    only: list[str] | None = None,
    progress: Callable[[int, int], None] | None = None,
    workers: int | None = None,
    seconds: float | None = None,
) -> WhatIf:
    """The candidate `new` against `old` over every recorded answer (or the conversations
    `only` names), scored against the reviewers' verdicts in `review`.

    Always in worker processes of its own, stopped after `seconds`
    (TRAJECTORY_WHATIF_SECONDS): a candidate is a reviewer's text, and however its
    patterns behave, the process that serves the other reviewers runs none of them.
    TimeLimit when the limit passes (nothing is returned, so nothing changes)."""
    total = reader.stats.conversations if only is None else len(only)
    work = batches(reader.index.iter_chat_rows(only=only), {})
    n = max(1, min(workers or whatif_workers(), -(-total // BATCH)))
    limit = seconds if seconds is not None else settings.whatif_seconds()
    outcomes: list[tuple[AnswerKey, Outcome, Outcome]] = []
    diffs: list[Diff] = []
    done = 0
    for part in run_isolated(whatif_batch, work, (old, new), workers=n, seconds=limit):
        outcomes.extend(part.outcomes)
        diffs.extend(part.diffs)
        done += 1
        if progress is not None:
            progress(min(done * BATCH, total), total)
    # each flag's verdict as it stands, as Rule quality counts it
    verdicts = standing(review) if review is not None else {}
    return _summarise(old.source, new.source, outcomes, diffs, verdicts)


def _summarise(
    before_name: str,
    after_name: str,
    outcomes: list[tuple[AnswerKey, Outcome, Outcome]],
    diffs: list[Diff],
    verdicts: dict[tuple[str, int, str], str],
) -> WhatIf:
    tallies = {r: _RuleTally() for r in RULES}
    withheld = [0, 0]
    newly = no_longer = 0
    for (cid, ex), before, after in outcomes:
        blocks = [any(o[2] for o in before), any(o[2] for o in after)]
        withheld[0] += blocks[0]
        withheld[1] += blocks[1]
        newly += blocks[1] and not blocks[0]
        no_longer += blocks[0] and not blocks[1]
        for rule, b, a in zip(RULES, before, after, strict=True):
            tallies[rule].add(b, a, verdicts.get((cid, ex, rule)))
    changed = {(d.conversation_id, d.exchange) for d in diffs}
    return WhatIf(
        before=before_name,
        after=after_name,
        answers=len(outcomes),
        changed_answers=len(changed),
        withheld=(withheld[0], withheld[1]),
        newly_withheld=newly,
        no_longer_withheld=no_longer,
        rules=tuple(t.result(rule) for rule, t in tallies.items()),
        diffs=tuple(sorted(diffs, key=lambda d: (d.conversation_id, d.exchange, d.rule))),
    )


@dataclass
class _RuleTally:
    scanned: int = 0
    na: list[int] = field(default_factory=lambda: [0, 0])
    flagged: list[int] = field(default_factory=lambda: [0, 0])
    withhold: list[int] = field(default_factory=lambda: [0, 0])
    gained: int = 0
    lost: int = 0
    unchanged: int = 0
    gained_fp: int = 0
    lost_correct: int = 0
    correct: list[int] = field(default_factory=lambda: [0, 0])
    judged: list[int] = field(default_factory=lambda: [0, 0])

    def add(self, b: tuple[bool, bool, bool], a: tuple[bool, bool, bool], v: str | None) -> None:
        self.scanned += 1
        for side, (applicable, failed, blocks) in enumerate((b, a)):
            self.na[side] += not applicable
            self.flagged[side] += failed
            self.withhold[side] += blocks
            if failed and v is not None:
                self.judged[side] += 1
                self.correct[side] += v == "correct"
        if a[1] and not b[1]:
            self.gained += 1
            self.gained_fp += v == "false_positive"
        elif b[1] and not a[1]:
            self.lost += 1
            self.lost_correct += v == "correct"
        elif a[1] and b[1]:
            self.unchanged += 1

    def result(self, rule: str) -> RuleWhatIf:
        precision = tuple(
            self.correct[s] / self.judged[s] if self.judged[s] else None for s in (0, 1)
        )
        return RuleWhatIf(
            rule=rule,
            scanned=self.scanned,
            not_applicable=(self.na[0], self.na[1]),
            flagged=(self.flagged[0], self.flagged[1]),
            gained=self.gained,
            lost=self.lost,
            unchanged=self.unchanged,
            withhold=(self.withhold[0], self.withhold[1]),
            gained_false_positive=self.gained_fp,
            lost_correct=self.lost_correct,
            precision=(precision[0], precision[1]),
            comparable=(self.judged[0], self.judged[1]),
        )


def format_whatif(w: WhatIf, changes: int = 50) -> str:
    """The report `lint --compare` prints: per rule, then the changed answers."""

    def arrow(pair: tuple[Any, Any], fmt: Callable[[Any], str] = str) -> str:
        return fmt(pair[0]) if pair[0] == pair[1] else f"{fmt(pair[0])} → {fmt(pair[1])}"

    def share(value: float | None) -> str:
        return "n/a" if value is None else f"{value:.0%}"

    lines = [
        f"What if: {w.after}",
        f"  against {w.before}, over {w.answers:,} answers",
        f"  {w.changed_answers:,} answer(s) decided differently · would withhold "
        f"{arrow(w.withheld)} ({w.newly_withheld:,} newly, {w.no_longer_withheld:,} no longer)",
        "",
        f"  {'rule':<30} {'n/a':>11} {'flagged':>11} {'gained':>7} {'lost':>5} "
        f"{'kept':>5} {'withhold':>11}  precision (with a verdict)",
    ]
    for r in w.rules:
        precision = (
            f"{share(r.precision[0])} ({r.comparable[0]}) → {share(r.precision[1])} "
            f"({r.comparable[1]})"
        )
        lines.append(
            f"  {r.rule:<30} {arrow(r.not_applicable):>11} {arrow(r.flagged):>11} "
            f"{_signed(r.gained, '+'):>7} {_signed(r.lost, '-'):>5} {r.unchanged:>5} "
            f"{arrow(r.withhold):>11}  {precision}"
        )
        if r.gained_false_positive or r.lost_correct:
            lines.append(
                f"  {'':<30} gained {r.gained_false_positive} reviewers called false positives;"
                f" lost {r.lost_correct} they called correct"
            )
    if w.diffs:
        lines += ["", f"Changed answers ({len(w.diffs):,} rule decisions):"]
        for d in w.diffs[:changes]:
            side = d.after if _failed(d.after) else d.before
            words = f" — {', '.join(repr(e) for e in d.evidence[:3])}" if d.evidence else ""
            lines.append(
                f"  {d.conversation_id} #{d.exchange}  {d.rule}: {_state(d.before)} → "
                f"{_state(d.after)}{words}"
            )
            if side.get("detail"):
                lines.append(f"      {side['detail'][:200]}")
        if len(w.diffs) > changes:
            lines.append(f"  … and {len(w.diffs) - changes:,} more (--json has them all)")
    return "\n".join(lines) + "\n"


def _signed(n: int, sign: str) -> str:
    return f"{sign}{n:,}" if n else "0"


def _state(r: dict[str, Any]) -> str:
    if not r["applicable"]:
        return "n/a"
    if r["passed"]:
        return "passed"
    return "flagged (would withhold)" if r["blocks_publish"] else "flagged"


def run_whatif(
    reader: TraceReader,
    new_path: str,
    old_path: str | None,
    review: ReviewState | None,
    as_json: bool,
    fail_on: str = "gate",
) -> int:
    """`lint --rules NEW --compare [OLD]`: the report, or whatif@1 JSON; exit 1 when the
    candidate withholds an answer the profile in force did not (`--fail-on gate`), or
    flags one (`metric`); 2 for a profile that cannot be read."""
    import json
    import sys

    from trajectory_review.rules.registry import RulesError, load_rules

    try:
        old, new = load_rules(old_path), load_rules(new_path)
    except RulesError as exc:
        print(f"trajectory-review: {exc}", file=sys.stderr)
        return 2
    try:
        w = what_if(reader, old, new, review)
    except TimeLimit as exc:
        print(
            f"trajectory-review: the comparison {exc} (TRAJECTORY_WHATIF_SECONDS); "
            "nothing was compared",
            file=sys.stderr,
        )
        return 2
    except WorkerFailed as exc:
        print(f"trajectory-review: the comparison failed: {exc}", file=sys.stderr)
        return 2
    if not w.answers:
        print("trajectory-review: no recorded answers to compare", file=sys.stderr)
        return 2
    if as_json:
        json.dump(w.to_dict(), sys.stdout, ensure_ascii=False, indent=1)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(format_whatif(w))
    if fail_on == "gate" and w.newly_withheld:
        return 1
    if fail_on == "metric" and any(r.gained for r in w.rules):
        return 1
    return 0
