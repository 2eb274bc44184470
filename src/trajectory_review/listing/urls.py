"""What a URL names: the list's filters, a conversation and one of its answers.

The one place a deep link is parsed and built: the page served for a request, the
address bar kept in step with the session, back/forward, and every link in lists,
transcripts and warnings. Conversation ids are data from a trace: an id holding `&` or `#`
written into a link unencoded opened another conversation in a new tab.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import date
from typing import Any
from urllib.parse import parse_qs, urlencode

from trajectory_review.listing.filters import FILTERS, Filters

MAX_EXCHANGE = 1_000_000


@dataclass(frozen=True)
class Link:
    filters: Filters = field(default_factory=Filters)
    conversation: str | None = None
    exchange: int | None = None
    ignored: tuple[str, ...] = ()  # `key=value` the app did not understand (shown)


def parse_exchange(value: object) -> int | None:
    """An answer number, or None for anything that is not one.

    ASCII digits only: `"²".isdigit()` is true and `int("²")` raises, which once
    disconnected the session of anyone who opened `?exchange=²`."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        n = value
    elif isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 7:
        n = int(value)
    else:
        return None
    return n if 1 <= n <= MAX_EXCHANGE else None


# link key -> the filter that reads it, and how (listing/filters.FILTERS)
_READERS = {key: (entry, read) for entry in FILTERS for key, read in entry.from_link.items()}


def parse_link(query: str | dict[str, list[str]], review_ids: dict[str, Any] | None = None) -> Link:
    """A query string (or parse_qs's dict) as the state it names; never raises."""
    q = parse_qs(query.lstrip("?")) if isinstance(query, str) else query
    values: dict[str, Any] = {}
    conversation = exchange = None
    ignored: list[str] = []
    for key, vals in q.items():
        for v in vals:
            if key == "conversation" and v:
                conversation = conversation or v
            elif key == "exchange" and parse_exchange(v) is not None:
                exchange = exchange or parse_exchange(v)
            elif key in _READERS and (got := _READERS[key][1](v)) is not None:
                if _READERS[key][0].repeats:  # each value named adds to the field's tuple
                    for name, more in got.items():
                        values[name] = tuple(dict.fromkeys(values.get(name, ()) + more))
                else:
                    values.update(got)
            else:
                ignored.append(f"{key}={v}"[:80])
    filters = Filters(review_ids=review_ids or {}, **values)
    return Link(filters, conversation, exchange, tuple(ignored))


def link_query(
    filters: Filters,
    conversation: str | None = None,
    exchange: int | None = None,
    date_bounds: tuple[date | None, date | None] = (None, None),
) -> str:
    """The query string naming this state; defaults are left out (so are dates equal to
    the corpus' own bounds), in one fixed order."""
    f = filters
    params: list[tuple[str, str]] = []
    if conversation:
        params.append(("conversation", conversation))
    if conversation and exchange:
        params.append(("exchange", str(exchange)))
    lo, hi = date_bounds
    # dates equal to the corpus' own bounds are no filter: left out of the link
    f = replace(
        f,
        date_from=None if f.date_from == lo else f.date_from,
        date_to=None if f.date_to == hi else f.date_to,
    )
    for entry in FILTERS:
        if entry.queue_only and f.view != "flagged":
            continue
        params.extend(entry.to_link(f))
    return "?" + urlencode(params)


def conversation_href(conversation_id: str, exchange: int | None = None) -> str:
    return link_query(Filters(), conversation_id, exchange)


def same_state(a: Link, b: Link) -> bool:
    """Two links name the same state (the review ids are the log's, not the link's)."""
    return replace(a, ignored=()) == replace(b, ignored=())
