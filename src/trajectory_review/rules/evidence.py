"""How sure QA can be about a rule: estimates with intervals, and where reviewers agree.

- `wilson`: the 95% Wilson score interval of a share, which stays inside [0, 1] and
  means something at small n (the normal approximation gives 0 ± 0 for 0 of 5).
- `cohen_kappa`: agreement between two raters beyond what chance gives.
- `agreement`: per rule, over the flags two or more reviewers judged (each reviewer's
  latest verdict counts once): the share where they agree and Cohen's kappa over the
  first two of each flag.
- `disagreements`: the flags whose reviewers disagree, until a settling verdict (given
  after them, `settles`) decides them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from trajectory_review.reviews.log import ReviewEvent, ReviewState

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


def reviewers_verdicts(review: ReviewState) -> dict[FlagKey, list[ReviewEvent]]:
    """Per flag, each reviewer's latest verdict, in the order the reviewers first gave
    one (a settling verdict is not a reviewer's opinion, and is left out here)."""
    firsts: dict[FlagKey, dict[str, int]] = {}
    latest: dict[FlagKey, dict[str, ReviewEvent]] = {}
    for n, e in enumerate(review.events):
        if e.type != "verdict" or not e.rule or e.exchange is None or e.settles:
            continue
        key = (e.conversation_id, e.exchange, e.rule)
        firsts.setdefault(key, {}).setdefault(e.author, n)
        latest.setdefault(key, {})[e.author] = e
    return {
        key: [by[a] for a in sorted(by, key=firsts[key].__getitem__)]
        for key, by in latest.items()
    }


def settled(review: ReviewState) -> dict[FlagKey, ReviewEvent]:
    """The latest settling verdict of each flag."""
    out: dict[FlagKey, ReviewEvent] = {}
    for e in review.events:
        if e.type == "verdict" and e.settles and e.rule and e.exchange is not None:
            out[(e.conversation_id, e.exchange, e.rule)] = e
    return out


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
    return {
        r: Agreement(r, len(pairs[r]), agreeing[r], cohen_kappa(pairs[r])) for r in pairs
    }


@dataclass(frozen=True)
class Disagreement:
    key: FlagKey
    verdicts: tuple[ReviewEvent, ...]  # each reviewer's latest


def disagreements(review: ReviewState) -> list[Disagreement]:
    """Flags whose reviewers' latest verdicts differ, not settled since the last of them,
    newest first."""
    settles = settled(review)
    out = []
    for key, events in reviewers_verdicts(review).items():
        if len({e.verdict for e in events}) < 2:
            continue
        decided = settles.get(key)
        if decided is not None and decided.ts >= max(e.ts for e in events):
            continue
        out.append(Disagreement(key, tuple(events)))
    return sorted(out, key=lambda d: max(e.ts for e in d.verdicts), reverse=True)
