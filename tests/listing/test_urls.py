"""What a URL names is parsed and built in one place, and survives the round trip."""

from __future__ import annotations

from datetime import date

from hypothesis import given, settings
from hypothesis import strategies as st

from trajectory_review.listing.filters import FLAG_KINDS, REVIEW_STATES, VIEWS, Filters
from trajectory_review.listing.urls import Link, link_query, parse_link, same_state
from trajectory_review.model.provenance import FILTER_KEYS
from trajectory_review.rules.registry import RULES

filters = st.builds(
    Filters,
    view=st.sampled_from(VIEWS),
    tags=st.lists(st.sampled_from(FILTER_KEYS), unique=True).map(tuple),
    rejected=st.booleans(),
    malformed=st.booleans(),
    problem=st.booleans(),
    date_from=st.one_of(st.none(), st.dates(date(2000, 1, 1), date(2100, 1, 1))),
    date_to=st.one_of(st.none(), st.dates(date(2000, 1, 1), date(2100, 1, 1))),
    q=st.text(max_size=30),
    review=st.sampled_from(REVIEW_STATES),
    rule=st.sampled_from(("", *RULES)),
    flag_kind=st.sampled_from(FLAG_KINDS),
    show_done=st.booleans(),
    model=st.sampled_from(("", "gpt-4.1", "claude sonnet & co")),
    tool=st.sampled_from(("", "run_sql", "call_measure")),
)


def normal(f: Filters) -> Filters:
    # what a link cannot say: the flag kind and the done toggle outside the QA queue
    if f.view == "flagged":
        return f
    return Filters(**{**f.__dict__, "flag_kind": "collapse", "show_done": False})


@settings(max_examples=300, deadline=None)
@given(
    filters,
    st.one_of(st.none(), st.text(min_size=1, max_size=30)),
    st.one_of(st.none(), st.integers(1, 10_000)),
)
def test_a_state_survives_the_round_trip_through_its_link(f, conversation, exchange):
    link = parse_link(link_query(f, conversation, exchange))
    expected = Link(normal(f), conversation, exchange if conversation else None)
    assert same_state(link, expected) and link.ignored == ()


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=120))
def test_any_query_string_parses_and_its_canonical_link_is_stable(query):
    once = parse_link(query)
    again = parse_link(link_query(once.filters, once.conversation, once.exchange))
    assert same_state(
        again,
        Link(normal(once.filters), once.conversation, once.exchange if once.conversation else None),
    )


def test_dates_at_the_corpus_bounds_are_left_out_of_the_link():
    lo, hi = date(2026, 1, 1), date(2026, 2, 1)
    f = Filters(date_from=lo, date_to=date(2026, 1, 15))
    assert link_query(f, date_bounds=(lo, hi)) == "?to=2026-01-15"
