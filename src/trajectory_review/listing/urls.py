"""What a URL names: the list's filters, a conversation and one of its answers.

The one place a deep link is parsed and built: the page served for a request, the
address bar kept in step with the session, back/forward, and every link in lists,
transcripts and warnings. Conversation ids are data from a trace: an id holding `&` or `#`
written into a link unencoded opened another conversation in a new tab.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import date
from urllib.parse import parse_qs, urlencode

from trajectory_review.listing.filters import FLAG_KINDS, REVIEW_STATES, VIEWS, Filters
from trajectory_review.model.provenance import FILTER_KEYS
from trajectory_review.rules.registry import RULES

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


def _date(s: str | None) -> date | None:
    try:
        return date.fromisoformat(s) if s else None
    except ValueError:
        return None


def _flag(v: str) -> bool | None:
    return {"1": True, "0": False}.get(v)


# key -> (reads the value into Filters fields, or None when the value is not understood)
_FIELDS = {
    "view": lambda v: {"view": v} if v in VIEWS else None,
    "rejected": lambda v: None if _flag(v) is None else {"rejected": _flag(v)},
    "malformed": lambda v: None if _flag(v) is None else {"malformed": _flag(v)},
    "problem": lambda v: None if _flag(v) is None else {"problem": _flag(v)},
    "from": lambda v: {"date_from": _date(v)} if _date(v) else None,
    "to": lambda v: {"date_to": _date(v)} if _date(v) else None,
    "q": lambda v: {"q": v},
    "review": lambda v: {"review": v} if v in REVIEW_STATES else None,
    "rule": lambda v: {"rule": v} if v in RULES or v == "" else None,
    "model": lambda v: {"model": v} if v else None,
    "tool": lambda v: {"tool": v} if v else None,
    "flags": lambda v: {"flag_kind": v} if v in FLAG_KINDS else None,
    "done": lambda v: None if _flag(v) is None else {"show_done": _flag(v)},
}


def parse_link(query: str | dict[str, list[str]], review_ids: dict | None = None) -> Link:
    """A query string (or parse_qs's dict) as the state it names; never raises."""
    q = parse_qs(query.lstrip("?")) if isinstance(query, str) else query
    values: dict = {}
    tags: list[str] = []
    conversation = exchange = None
    ignored: list[str] = []
    for key, vals in q.items():
        for v in vals:
            if key == "tag" and v in FILTER_KEYS:
                tags.append(v)
            elif key == "conversation" and v:
                conversation = conversation or v
            elif key == "exchange" and parse_exchange(v) is not None:
                exchange = exchange or parse_exchange(v)
            elif key in _FIELDS and (got := _FIELDS[key](v)) is not None:
                values.update(got)
            else:
                ignored.append(f"{key}={v}"[:80])
    filters = Filters(tags=tuple(dict.fromkeys(tags)), review_ids=review_ids or {}, **values)
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
    if f.view != "conversations":
        params.append(("view", f.view))
    params.extend(("tag", t) for t in f.tags)
    for name in ("rejected", "malformed", "problem"):
        if getattr(f, name):
            params.append((name, "1"))
    if f.review != "any":
        params.append(("review", f.review))
    if f.rule:
        params.append(("rule", f.rule))
    if f.model:
        params.append(("model", f.model))
    if f.tool:
        params.append(("tool", f.tool))
    if f.view == "flagged" and f.flag_kind != "collapse":
        params.append(("flags", f.flag_kind))
    if f.view == "flagged" and f.show_done:
        params.append(("done", "1"))
    if f.q:
        params.append(("q", f.q))
    lo, hi = date_bounds
    if f.date_from and f.date_from != lo:
        params.append(("from", f.date_from.isoformat()))
    if f.date_to and f.date_to != hi:
        params.append(("to", f.date_to.isoformat()))
    return "?" + urlencode(params)


def conversation_href(conversation_id: str, exchange: int | None = None) -> str:
    return link_query(Filters(), conversation_id, exchange)


def same_state(a: Link, b: Link) -> bool:
    """Two links name the same state (the review ids are the log's, not the link's)."""
    return replace(a, ignored=()) == replace(b, ignored=())
