"""The QA queue: the answers the linter would have withheld (or that fail a metric rule),
which of them QA has finished, how far along the queue is, and what comes next.

Done is decided by the review log (reviews/log.py); this module asks the catalog which
rules each answer fails and where the answers stand in the queue's order.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from trajectory_review.listing.filters import Filters, answer_keys
from trajectory_review.listing.queries import Catalog

AnswerKey = tuple[str, int]


@dataclass(frozen=True)
class Progress:
    done: int  # answers in the queue (these filters) QA has finished
    total: int  # answers in the queue, done or not


def failing_rules(catalog: Catalog, keys: Iterable[AnswerKey]) -> dict[AnswerKey, tuple[str, ...]]:
    """The rules each of these answers fails (what a verdict must cover for it to be done)."""
    wanted = answer_keys(keys)
    if not wanted:
        return {}
    d = catalog.dialect
    rows = catalog.rows(
        f"SELECT conversation_id, exchange, failed_rules FROM answers "
        f"WHERE {d.has('?', d.answer_key())}",
        [wanted],
    )
    return {(str(c), int(e)): tuple(rules or ()) for c, e, rules in rows}


def progress(catalog: Catalog, f: Filters) -> Progress:
    """ "k of N reviewed" for the queue under these filters (done answers counted whether
    they are listed or not)."""
    d = catalog.dialect
    where, params = catalog.where(replace(f, show_done=True))
    total, done = catalog.first(
        f"SELECT count(*), {d.count_if(d.has('?', d.answer_key()))} FROM answers WHERE {where}",
        [answer_keys(f.done), *params],
    )
    return Progress(int(done), int(total))


def next_undone(catalog: Catalog, f: Filters, after: AnswerKey | None) -> AnswerKey | None:
    """The first answer after `after`, in the queue's order, that QA has not finished;
    past the end it starts again from the top. None when every answer is done."""
    where, params = catalog.where(replace(f, show_done=True))
    keys = [
        (str(c), int(e))
        for c, e in catalog.rows(
            f"SELECT conversation_id, exchange FROM answers WHERE {where} "
            f"ORDER BY answered_ns DESC, conversation_id, exchange",
            params,
        )
    ]
    start = keys.index(after) + 1 if after in keys else 0
    for key in keys[start:] + keys[:start]:
        if key not in f.done and key != after:
            return key
    return None
