"""Every filter is one entry of listing/filters.FILTERS, and an entry is all it takes: the
sidebar input, the link, the SQL and the chip come from it. This walks every entry, so a
new filter is tested here by its `example` alone."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from trajectory_review.app.labels import active_filters, option_labels
from trajectory_review.app.listing import listing_ui
from trajectory_review.listing.catalog import build_catalog
from trajectory_review.listing.filters import FILTERS, Filters
from trajectory_review.listing.queries import Catalog
from trajectory_review.listing.urls import link_query, parse_link
from trajectory_review.model.reader import TraceReader

SHIPPED = Path(__file__).resolve().parents[2] / "traces"
NOT_FILTERS = {"page", "review_ids", "done"}  # the list's page, and what the log supplies


def state(entry) -> Filters:
    view = "flagged" if entry.queue_only else "conversations"
    return Filters(**{"view": view, **entry.example})


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return build_catalog(TraceReader.open([str(SHIPPED)], cache=False))


def test_every_field_of_the_filters_is_an_entry_of_the_table():
    covered = set()
    for entry in FILTERS:
        covered |= set(entry.example)
    fields = {f.name for f in dataclasses.fields(Filters)} - NOT_FILTERS
    assert covered == fields
    assert len({e.name for e in FILTERS}) == len(FILTERS)


@pytest.mark.parametrize("entry", FILTERS, ids=lambda e: e.name)
def test_an_entry_round_trips_through_a_link(entry):
    f = state(entry)
    query = link_query(f)
    assert query != link_query(Filters(view=f.view)) or entry.name == "view"
    back = parse_link(query)
    assert back.ignored == ()
    for name, value in entry.example.items():
        assert getattr(back.filters, name) == value, query


@pytest.mark.parametrize("entry", FILTERS, ids=lambda e: e.name)
def test_an_entry_has_its_input_in_the_sidebar_holding_the_linked_state(entry):
    html = str(listing_ui("list", initial=state(entry)))
    assert f'id="list-{entry.name}"' in html


@pytest.mark.parametrize("entry", FILTERS, ids=lambda e: e.name)
def test_an_entry_filters_the_list_in_sql_and_names_itself_in_a_chip(entry, catalog):
    f = state(entry)
    page = catalog.page(f)  # valid SQL on the answers table, whatever it selects
    assert page.total <= catalog.page(Filters(view=f.view)).total or entry.name == "view"
    if entry.clears:  # a filter a reviewer clears is one the chips name
        assert active_filters(f) != []


@pytest.mark.parametrize("entry", [e for e in FILTERS if e.facet], ids=lambda e: e.name)
def test_an_entry_with_a_facet_has_its_values_counted_beside_it(entry, catalog):
    counts = catalog.facet_counts(state(entry))
    assert entry.facet is not None and entry.facet.key in counts
    if entry.input == "select":  # its options carry the counts
        options = option_labels(counts, catalog.select_values())[entry.name]
        counted = [o for v, o in options.items() if v and "(" in o]
        assert counted, options


@pytest.mark.parametrize("entry", [e for e in FILTERS if e.input == "select"], ids=lambda e: e.name)
def test_a_select_entry_offers_the_values_the_answers_hold(entry, catalog):
    values = catalog.select_values().get(entry.name)
    options = option_labels(None, catalog.select_values())[entry.name]
    if entry.choices:
        assert list(options) == list(entry.choices)
        return
    assert options[""] == entry.any_label
    assert list(options)[1:] == list(entry.known or values or [])
    assert len(options) > 1  # the shipped traces hold a value of each
