"""Samples on the catalog's side: the answers of a list a sample may draw from (each with
its stratum), the link of the list it was drawn from, and how far a sample is (which of
its members QA has finished; the next one nobody has)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from trajectory_review.listing.filters import Filters
from trajectory_review.listing.queries import Catalog
from trajectory_review.listing.queue import failing_rules
from trajectory_review.listing.urls import link_query
from trajectory_review.reviews.log import AnswerKey, ReviewEvent, ReviewState


def sample_query(f: Filters) -> str:
    """The list a sample was drawn from, as the query string of its link."""
    return link_query(f, None, None, (None, None))[:2000]


def sample_candidates(
    catalog: Catalog, f: Filters, kind: str, stratify: str
) -> list[tuple[str, int, str]]:
    """The answers of the current list a sample is drawn from, each with its stratum: the
    flagged ones, or the judged final answers no rule flagged."""
    rows = catalog.matching_answers(replace(f, view="answers", show_done=True, done=frozenset()))
    judged = {
        (str(c), int(e))
        for c, e in catalog.rule_rows()[["conversation_id", "exchange"]].itertuples(index=False)
    }
    out = []
    for r in rows.itertuples(index=False):
        key = (str(r.conversation_id), int(r.exchange))
        failed = list(r.failed_rules)
        if key not in judged or bool(failed) != (kind == "flagged"):
            continue
        stratum = (failed[0] if failed else "none") if stratify == "rule" else (
            str(r.tag) if stratify == "tag" else "all"
        )  # fmt: skip
        out.append((key[0], key[1], stratum))
    return out


def sample_progress(s: ReviewEvent, state: ReviewState, catalog: Catalog) -> tuple[int, int]:
    members = [(c, e) for c, e, _ in s.members or ()]
    return sum(key in finished(s, state, catalog) for key in members), len(members)


def finished(s: ReviewEvent, state: ReviewState, catalog: Catalog) -> frozenset[AnswerKey]:
    members = [(c, e) for c, e, _ in s.members or ()]
    if (s.spec or {}).get("kind") == "unflagged":
        return frozenset(k for k in state.spot_checks() if k in set(members))
    return state.done_answers(failing_rules(catalog, members))


def next_member(
    s: ReviewEvent, state: ReviewState, catalog: Catalog, after: tuple[Any, ...] | None
) -> AnswerKey | None:
    """The next member nobody has finished, after `after` (round the end)."""
    members = [(c, e) for c, e, _ in s.members or ()]
    done = finished(s, state, catalog)
    start = members.index(after) + 1 if after in members else 0
    for key in members[start:] + members[:start]:
        if key not in done and key != after:
            return key
    return None
