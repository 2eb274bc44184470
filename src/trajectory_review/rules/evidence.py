"""How sure QA can be about a rule: estimates with intervals, and where reviewers agree.

- `wilson`: the 95% Wilson score interval of a share, which stays inside [0, 1] and
  means something at small n (the normal approximation gives 0 ± 0 for 0 of 5).
- `cohen_kappa`: agreement between two raters beyond what chance gives.
- `agreement`: per rule, over the flags two or more reviewers judged (each reviewer's
  latest verdict counts once): the share where they agree and Cohen's kappa over the
  first two of each flag.
- `disagreements`: the flags whose reviewers disagree, until a settle in force decides
  them (`settles_in_force`: one rule for every reader of settles).
- A reviewer is a name and how it is known (`reviewer_key`).
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from trajectory_review.reviews.log import AUTHENTICATED, DECLARED, ReviewEvent, ReviewState

Z95 = 1.959963984540054
FlagKey = tuple[str, int, str]  # conversation, exchange, rule


@dataclass(frozen=True)
class Estimate:
    """k of n, as a share with its 95% Wilson interval (all None when n is 0)."""

    k: int
    n: int

    @property
    def share(self) -> float | None:
        return self.k / self.n if self.n else None

    @property
    def interval(self) -> tuple[float, float] | None:
        return wilson(self.k, self.n)

    def text(self) -> str:
        if not self.n:
            return "no data yet"
        lo, hi = self.interval or (0.0, 0.0)
        return f"{self.k / self.n:.0%} [{lo:.0%}–{hi:.0%}] (n={self.n})"


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float] | None:
    """The Wilson score interval of k successes in n trials (None when n is 0)."""
    if n <= 0:
        return None
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def cohen_kappa(pairs: Sequence[tuple[str, str]]) -> float | None:
    """Cohen's kappa of two raters' labels on the same items (None when undefined: no
    items, or both raters used one and the same label throughout)."""
    n = len(pairs)
    if not n:
        return None
    observed = sum(a == b for a, b in pairs) / n
    labels = {x for pair in pairs for x in pair}
    expected = sum(
        (sum(a == lab for a, _ in pairs) / n) * (sum(b == lab for _, b in pairs) / n)
        for lab in labels
    )
    if expected >= 1.0:
        return None
    return (observed - expected) / (1 - expected)


ReviewerKey = tuple[str, str]  # name, how it is known (authenticated | declared)


def reviewer_key(e: ReviewEvent) -> ReviewerKey:
    """Who gave an event: a typed "alice" is not the "alice" a proxy signed in (events
    written before identities were recorded count as declared)."""
    return (e.author, e.identity or DECLARED)


def reviewers_verdicts(review: ReviewState) -> dict[FlagKey, list[ReviewEvent]]:
    """Per flag, each reviewer's latest verdict, in the order the reviewers first gave
    one (a settling verdict is not a reviewer's opinion, and is left out here)."""
    firsts: dict[FlagKey, dict[ReviewerKey, int]] = {}
    latest: dict[FlagKey, dict[ReviewerKey, ReviewEvent]] = {}
    for n, e in enumerate(review.events):
        if e.type != "verdict" or not e.rule or e.exchange is None or e.settles:
            continue
        key = (e.conversation_id, e.exchange, e.rule)
        firsts.setdefault(key, {}).setdefault(reviewer_key(e), n)
        latest.setdefault(key, {})[reviewer_key(e)] = e
    return {
        key: [by[a] for a in sorted(by, key=firsts[key].__getitem__)] for key, by in latest.items()
    }


def settles_in_force(review: ReviewState) -> dict[FlagKey, ReviewEvent]:
    """Each flag's settling verdict that decides it now, by the one rule every reader
    uses: the latest settle given by a signed-in login (a typed name never settles) who
    is not one of the flag's reviewers, and given after every reviewer's latest verdict
    (a reviewer who changes their mind reopens the question). "After" is the store's
    order, not the clock: two events of one millisecond carry the same time."""
    per_reviewer = reviewers_verdicts(review)
    last_verdict: dict[FlagKey, int] = {}
    out: dict[FlagKey, tuple[int, ReviewEvent]] = {}
    for n, e in enumerate(review.events):
        if e.type != "verdict" or not e.rule or e.exchange is None:
            continue
        key = (e.conversation_id, e.exchange, e.rule)
        if not e.settles:
            last_verdict[key] = n
            continue
        parties = {reviewer_key(v) for v in per_reviewer.get(key, [])}
        if e.identity == AUTHENTICATED and reviewer_key(e) not in parties:
            out[key] = (n, e)
    return {key: e for key, (n, e) in out.items() if n > last_verdict.get(key, -1)}


def standing(review: ReviewState) -> dict[FlagKey, str]:
    """Each judged flag's verdict as it stands: the settle in force, else the latest
    reviewer's verdict."""
    decided = settles_in_force(review)
    return {
        key: (decided.get(key) or max(events, key=lambda e: e.ts)).verdict or ""
        for key, events in reviewers_verdicts(review).items()
    }


@dataclass(frozen=True)
class Agreement:
    rule: str
    flags: int  # judged by two reviewers or more
    agreeing: int
    kappa: float | None

    @property
    def share(self) -> Estimate:
        return Estimate(self.agreeing, self.flags)


def agreement(review: ReviewState, rules: Iterable[str]) -> dict[str, Agreement]:
    pairs: dict[str, list[tuple[str, str]]] = {r: [] for r in rules}
    agreeing: dict[str, int] = {r: 0 for r in pairs}
    for (_cid, _ex, rule), events in reviewers_verdicts(review).items():
        if rule not in pairs or len(events) < 2:
            continue
        pairs[rule].append((events[0].verdict or "", events[1].verdict or ""))
        agreeing[rule] += len({e.verdict for e in events}) == 1
    return {r: Agreement(r, len(pairs[r]), agreeing[r], cohen_kappa(pairs[r])) for r in pairs}


@dataclass(frozen=True)
class Disagreement:
    key: FlagKey
    verdicts: tuple[ReviewEvent, ...]  # each reviewer's latest


def disagreements(review: ReviewState) -> list[Disagreement]:
    """Flags whose reviewers' latest verdicts differ and that no settle in force decides,
    newest first."""
    decided = settles_in_force(review)
    out = [
        Disagreement(key, tuple(events))
        for key, events in reviewers_verdicts(review).items()
        if len({e.verdict for e in events}) > 1 and key not in decided
    ]
    return sorted(out, key=lambda d: max(e.ts for e in d.verdicts), reverse=True)


# -- samples -----------------------------------------------------------------------------------

AnswerKey = tuple[str, int]


def draw(
    candidates: Sequence[tuple[str, int, str]], size: int, seed: int
) -> list[tuple[str, int, str]]:
    """A random sample of `size` answers (conversation, answer, stratum), the same for the
    same candidates and seed: each stratum gets its share of the sample (largest
    remainder, at least one from every stratum that has answers, while there is room),
    drawn at random within it."""
    size = max(0, min(size, len(candidates)))
    strata: dict[str, list[tuple[str, int, str]]] = {}
    for c in sorted(candidates):
        strata.setdefault(c[2], []).append(c)
    total = len(candidates)
    exact = {s: size * len(m) / total for s, m in strata.items()} if total else {}
    quota = {s: int(q) for s, q in exact.items()}
    for s in sorted(strata, key=lambda s: (quota[s] > 0, -(exact[s] - quota[s]), s)):
        if sum(quota.values()) >= size:
            break
        quota[s] += 1  # the empty strata first, then the largest remainders
    rnd = random.Random(seed)
    out: list[tuple[str, int, str]] = []
    for s in sorted(strata):
        out.extend(rnd.sample(strata[s], min(quota[s], len(strata[s]))))
    return sorted(out)


@dataclass(frozen=True)
class RuleEvidence:
    rule: str
    sampled_precision: Estimate  # flags of sampled answers judged correct / judged
    miss_rate: Estimate  # spot-checked unflagged answers this rule should have flagged
    by_choice: Estimate  # false positives among verdicts on flags opened by choice
    agreement: Agreement


def rule_evidence(
    review: ReviewState, rules: Sequence[str], failing: Mapping[AnswerKey, Sequence[str]]
) -> dict[str, RuleEvidence]:
    """Per rule, what the samples say (with their intervals) apart from the verdicts
    given on flags opened by choice, which stay out of the estimates (they are not a
    random draw), and where reviewers agree."""
    flagged_members = {(c, e) for s in review.samples("flagged") for c, e, _ in s.members or ()}
    unflagged_members = {(c, e) for s in review.samples("unflagged") for c, e, _ in s.members or ()}
    sampled = {r: [0, 0] for r in rules}  # correct, judged
    chosen = {r: [0, 0] for r in rules}  # false positives, judged
    for key, verdict in standing(review).items():
        cid, ex, rule = key
        if rule not in sampled or rule not in failing.get((cid, ex), ()):
            continue
        if (cid, ex) in flagged_members:
            sampled[rule][0] += verdict == "correct"
            sampled[rule][1] += 1
        else:
            chosen[rule][0] += verdict == "false_positive"
            chosen[rule][1] += 1
    checks = {k: e for k, e in review.spot_checks().items() if k in unflagged_members}
    agree = agreement(review, rules)
    return {
        r: RuleEvidence(
            r,
            Estimate(sampled[r][0], sampled[r][1]),
            Estimate(
                sum(e.verdict == "missed" and e.rule == r for e in checks.values()), len(checks)
            ),  # fmt: skip
            Estimate(chosen[r][0], chosen[r][1]),
            agree[r],
        )
        for r in rules
    }


def membership(review: ReviewState) -> dict[AnswerKey, tuple[str, str]]:
    """Answer -> (sample id, stratum) of the latest sample it is in (reviewed@1)."""
    out: dict[AnswerKey, tuple[str, str]] = {}
    for s in review.samples():
        for c, e, stratum in s.members or ():
            out[(c, e)] = (s.sample or "", stratum)
    return out
