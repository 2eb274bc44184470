"""The left sidebar: view tabs and filters with counts (the page of rows they select is
app/list_rows.py's)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import date
from typing import Any

from htmltools import Tag, TagList, tags
from shiny import Inputs, Outputs, Session, module, reactive, ui

from trajectory_review.app.catalog_feed import CatalogFeed
from trajectory_review.app.feed import Reviews
from trajectory_review.app.filter_inputs import (
    HEAD,
    TOP,
    Drawn,
    clear_inputs,
    filter_events,
    filter_input,
    filters_from_inputs,
    set_inputs,
)
from trajectory_review.app.labels import option_labels
from trajectory_review.app.list_rows import rows_server
from trajectory_review.app.navigation import Selection
from trajectory_review.app.rows import RowCache
from trajectory_review.listing.filters import FILTERS, FilterField, Filters
from trajectory_review.listing.queries import Catalog
from trajectory_review.listing.urls import parse_link


@module.ui
def listing_ui(
    lo: date | None = None,
    hi: date | None = None,
    initial: Filters | None = None,
    counts: dict[str, Any] | None = None,
    values: dict[str, list[str]] | None = None,  # Catalog.select_values
    growing: bool = False,
) -> TagList:
    """The sidebar, its inputs already holding the state a deep link asks for.

    Rendering the link's state into the page (rather than updating inputs after the
    socket opens) means nothing the server sends later can undo a reviewer's first click.
    growing: conversations are still read into the list; its counts are so far.
    """
    f = initial or Filters()
    c = counts or {}
    opts = option_labels(counts, values, growing=growing)

    drawn = Drawn(c, opts, (lo, hi), growing)

    def made(entry: FilterField) -> Tag:
        return filter_input(entry, f, drawn)

    return TagList(
        *[made(e) for e in FILTERS if e.input in TOP],
        ui.accordion(
            ui.accordion_panel(
                "Filters",
                *[made(e) for e in FILTERS if e.input not in TOP + HEAD],
                ui.input_action_link("clear", "Clear filters"),
            ),
            # folded: the list gets the height; the filters in force show as chips
            open=False,
            class_="tr-filters",
        ),
        tags.div(
            # before the summary, floated beside its first line: the list keeps its rows
            *[made(e) for e in FILTERS if e.input in HEAD],
            ui.output_ui("summary"),
            class_="tr-list-head",
        ),
        ui.output_ui("rows"),
    )


def inputs_filters(input: Inputs, page: int, reviews: Reviews) -> Filters:
    return filters_from_inputs(input, page, reviews.state().ids_by_state(), reviews.done())


@dataclass(frozen=True)
class ListView:
    """The list as the other modules use it: the filters in force (with the page), and
    a move to another page (the keys' `]` past a page's last row)."""

    filters: Callable[[], Filters]
    go_to_page: Callable[[int], None]
    clear: Callable[[], None]  # every filter that clears, back to its default


@module.server
def filters_server(
    input: Inputs,
    output: Outputs,
    session: Session,
    catalog: Catalog,
    reviews: Reviews,
    url_filters: reactive.Value[Any],
) -> ListView:
    """The list's filters and page: from a deep link, from back/forward and from the
    inputs; Clear and the pager's page."""
    page_no = reactive.value(1, name="page_no")
    pending_page: reactive.Value[tuple[Filters, int] | None]
    pending_page = reactive.value(None, name="pending_page")

    @reactive.effect
    @reactive.event(url_filters)
    def _apply_url() -> None:
        """Filters from a deep link or from back/forward (parsed query string).

        On the first load the page was rendered with the link's state already in its
        inputs, so only the list page is set here; back/forward moves the inputs.
        """
        q = dict(url_filters() or {})
        initial = bool(q.pop("_initial", None))
        link = parse_link(q)
        if link.conversation:
            lo_, hi_ = catalog.date_bounds()
            wanted = replace(
                link.filters,
                date_from=link.filters.date_from or lo_,
                date_to=link.filters.date_to or hi_,
            )
            page = catalog.page_of(wanted, link.conversation)
            if not initial:
                pending_page.set((wanted, page))
            page_no.set(page)
        if initial:
            return
        set_inputs(link.filters, catalog.date_bounds())

    @reactive.effect
    @reactive.event(*filter_events(input))
    def _reset_page() -> None:
        # After a deep link, open the page that holds its conversation, once the link's
        # filters have reached the inputs; any other filter change starts at page 1.
        pending, target = pending_page(), None
        if pending is not None:
            wanted, page = pending
            if inputs_filters(input, 1, reviews) == wanted:
                target = page
            pending_page.set(None)
        page_no.set(target or 1)

    def clear() -> None:
        with reactive.isolate():
            current = inputs_filters(input, page_no(), reviews)
        clear_inputs(current, catalog.date_bounds())

    @reactive.effect
    @reactive.event(input.clear)
    def _clear() -> None:
        clear()

    @reactive.calc
    def filters() -> Filters:
        return inputs_filters(input, page_no(), reviews)

    def go_to_page(n: int) -> None:
        page_no.set(max(1, n))

    return ListView(filters, go_to_page, clear)


def listing_server(
    id: str,
    catalog: Catalog,
    reviews: Reviews,
    selected: Selection,
    url_filters: reactive.Value[Any],
    rows_drawn: RowCache,
    feed: CatalogFeed,
) -> ListView:
    """The sidebar's two halves: the filters, and the list they select (app/list_rows.py),
    which reads its own inputs (the pager, the chips' "clear") and hands the filters what
    they ask for as values (ListView). One id: the page's links and the tests name the
    inputs as the sidebar always has (list-q, list-view)."""
    view = filters_server(id, catalog, reviews, url_filters)
    rows_server(id, catalog, view, selected, rows_drawn, feed)
    return view
