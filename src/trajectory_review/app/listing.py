"""The left sidebar: view tabs, filters with counts, and one server-side page of rows."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import date

from htmltools import HTML, Tag, TagList, tags
from shiny import module, reactive, render, ui

from trajectory_review.app.actions import sends
from trajectory_review.app.feed import Reviews
from trajectory_review.app.filter_inputs import (
    HEAD,
    TOP,
    clear_inputs,
    filter_events,
    filter_input,
    filters_from_inputs,
    set_inputs,
)
from trajectory_review.app.labels import (
    active_filters,
    count_labels,
    option_labels,
    reading_note,
)
from trajectory_review.app.rows import RowCache, row_html
from trajectory_review.app.watch import watch
from trajectory_review.listing.catalog import Catalog
from trajectory_review.listing.filters import FILTERS, FilterField, Filters, Page
from trajectory_review.listing.queue import progress
from trajectory_review.listing.urls import parse_exchange, parse_link


@module.ui
def listing_ui(
    lo: date | None = None,
    hi: date | None = None,
    initial: Filters | None = None,
    counts: dict | None = None,
    models: list[str] | None = None,
    tools: list[str] | None = None,
    growing: bool = False,
) -> TagList:
    """The sidebar, its inputs already holding the state a deep link asks for.

    Rendering the link's state into the page (rather than updating inputs after the
    socket opens) means nothing the server sends later can undo a reviewer's first click.
    growing: conversations are still read into the list; its counts are so far.
    """
    f = initial or Filters()
    c = counts or {}
    opts = option_labels(counts, models, tools, growing=growing)

    def made(entry: FilterField) -> Tag:
        return filter_input(entry, f, c, opts, (lo, hi), growing)

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


def judging_note(
    fraction: float | None, f: Filters, error: str | None = None, replaying: float | None = None
) -> Tag | None:
    """While conversations are still replayed into the list, no list and no count is
    final; while the reply rules run over the answers, a list that depends on them (the
    QA queue, a rule filter) is not. Either way it says so, and how far it is."""
    if replaying is not None:
        return reading_note(
            replaying, "The list fills in as they are read; its counts are counts so far."
        )
    if fraction is None or not (f.view == "flagged" or f.rule):
        return None
    text = (
        f"The reply rules could not run over every answer ({error}): this list is partial."
        if error
        else f"Judging answers with the reply rules: {fraction:.0%}. This list fills in as "
        "they are judged."
    )
    return tags.div(text, class_="tr-judging", role="status")


def queue_progress(catalog: Catalog, f: Filters) -> Tag:
    """ "k of N reviewed" for the QA queue under the current filters."""
    p = progress(catalog, f)
    share = p.done / p.total if p.total else 1.0
    return tags.div(
        tags.span(f"{p.done:,} of {p.total:,} reviewed"),
        tags.progress(value=str(p.done), max=str(max(p.total, 1)), class_="tr-queue-bar"),
        class_="tr-queue-progress",
        title=f"{share:.0%} of the answers in this queue have been reviewed",
    )


def inputs_filters(input, page: int, reviews: Reviews) -> Filters:
    return filters_from_inputs(input, page, reviews.state().ids_by_state(), reviews.done())


@module.server
def listing_server(
    input,
    output,
    session,
    catalog: Catalog,
    reviews: Reviews,
    selected: reactive.Value,
    url_filters: reactive.Value,
    rows_drawn: RowCache,
) -> reactive.Calc:
    """The list's state (page, filters from the link and the inputs) and its outputs.
    A module server is the closure its outputs and effects share: long as a whole,
    each output in it short. Returns the current filters."""
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

    @reactive.effect
    @reactive.event(input.clear, input.clear_all)
    def _clear() -> None:
        with reactive.isolate():
            current = inputs_filters(input, page_no(), reviews)
        clear_inputs(current, catalog.date_bounds())

    @reactive.effect
    @reactive.event(input.page_to)
    def _page_to() -> None:
        n = parse_exchange(input.page_to())  # a positive number from the browser, or nothing
        if n is not None:
            page_no.set(n)

    @reactive.calc
    def filters() -> Filters:
        return inputs_filters(input, page_no(), reviews)

    # The reply rules may still be running over the answers (Catalog.judge, after the
    # list is served): the list is drawn again once they are in, and says how far they
    # are meanwhile wherever it depends on them.
    # One poll of both, set in one effect: the count and the note saying it is not final
    # change in the same flush (two polls once showed the old count without the note).
    # The same for conversations still being replayed into the list (Catalog.fill).
    def state() -> tuple[int, float | None, float | None]:
        return (catalog.judged_generation, catalog.judging, catalog.replaying)

    @watch(state, 1.0)
    def judge_state() -> tuple[int, float | None, float | None]:
        return state()

    judged = reactive.value(catalog.judged_generation, name="judged")
    judging = reactive.value(catalog.judging, name="judging")
    replaying = reactive.value(catalog.replaying, name="replaying")

    @reactive.effect
    def _judge_state() -> None:
        generation, fraction, reading = judge_state()
        with reactive.isolate():
            if generation != judged.get():
                judged.set(generation)
            if fraction != judging.get():
                judging.set(fraction)
            if reading != replaying.get():
                replaying.set(reading)

    # The list's queries run off the event loop (DuckDB lets go of the GIL): with eight
    # reviewers on one server, one's new filter state or page kept every other session's
    # clicks waiting behind it (docs/performance-log.md, "list queries off the event loop").
    @reactive.calc
    async def current() -> Page:
        judged()
        return await asyncio.to_thread(catalog.page, filters())

    @reactive.effect
    async def _update_counts() -> None:
        judged()
        with reactive.isolate():
            partial = judging() is not None  # as of this generation
            growing = replaying() is not None
        counts = await asyncio.to_thread(catalog.facet_counts, filters())
        payload = count_labels(
            counts,
            catalog.models(),
            catalog.tool_names(),
            judging=partial,
            growing=growing,
        )
        await session.send_custom_message(
            "tr-counts",
            {
                "spans": payload["spans"],
                "options": {session.ns(k): v for k, v in payload["options"].items()},
            },
        )

    @render.ui
    async def summary() -> Tag:
        f = filters()
        p = await current()
        unit = "conversation" if f.view == "conversations" else "answer"
        lo, hi = catalog.date_bounds()
        chips = active_filters(f, lo, hi)
        note = judging_note(judging(), f, catalog.judge_error, replaying())
        # while the rules run, a list that depends on them has no final count to show
        so_far = " so far" if note is not None else ""
        return tags.div(
            f"{p.total:,} {unit}{'' if p.total == 1 else 's'}{so_far}",
            tags.span(f" · page {p.page} of {p.pages}"),
            note,
            queue_progress(catalog, f) if f.view == "flagged" and note is None else None,
            tags.div(
                *[tags.span(c, class_="tr-chip-filter") for c in chips],
                ui.input_action_link("clear_all", "clear"),
                class_="tr-active-filters",
            )
            if chips
            else None,
            class_="tr-list-summary",
            aria_live="polite",
        )

    @render.ui
    async def rows() -> Tag:
        f = filters()
        p = await current()
        ids = f.review_ids
        flagged, noted = ids.get("flagged", frozenset()), ids.get("noted", frozenset())
        # Opening a conversation must not redraw the list (a page query and fifty rows
        # per click, for every reviewer): the row is marked in the browser (app.js,
        # markRows) and here only when the list is drawn anyway.
        with reactive.isolate():
            chosen = selected()
            partial = judging() is not None
            reading = replaying() is not None

        def row(r) -> HTML:
            cid, ex = r["conversation_id"], int(r["exchange"])
            # everything the row shows: its values (in the conversations view the pill
            # and counts follow the filters) and its marks
            key = (
                f.view, f.picks_answers, tuple(str(v) for v in r.values), cid == chosen,
                cid in flagged, cid in noted, (cid, ex) in f.done,
            )  # fmt: skip
            return rows_drawn.html(
                key, lambda: row_html(r, f.view, chosen, flagged, noted, f.picks_answers, f.done)
            )

        # one markup child for the page's rows, not fifty: htmltools checks each child
        # node against its protocols again when the output is drawn
        drawn = [row(r) for _, r in p.rows.iterrows()]
        body: list[Tag | HTML] = [HTML("".join(map(str, drawn)))] if drawn else []
        if not body and reading:
            body = [tags.div("Conversations are still being read; the ones that match "
                             "appear here as they are.", class_="tr-empty")]  # fmt: skip
        elif not body and partial and (f.view == "flagged" or f.rule):
            body = [tags.div("The answers are being judged; they appear here as the reply "
                             "rules find them.", class_="tr-empty")]  # fmt: skip
        elif not body and f.view == "flagged" and not f.show_done and f.done:
            body = [tags.div("Every answer here is reviewed.", class_="tr-empty")]
        elif not body:
            body = [tags.div("Nothing matches these filters.", class_="tr-empty")]
        page_to = session.ns("page_to")
        pager = tags.div(
            tags.button(
                "‹ Prev",
                class_="btn btn-sm btn-outline-secondary tr-page",
                disabled=p.page <= 1 or None,
                data_step="-1",
                **sends(page_to, p.page - 1),
            ),
            tags.span(f"{p.page} / {p.pages}", class_="tr-page-no"),
            tags.button(
                "Next ›",
                class_="btn btn-sm btn-outline-secondary tr-page",
                disabled=p.page >= p.pages or None,
                data_step="1",
                **sends(page_to, p.page + 1),
            ),
            class_="tr-pager",
        )
        return tags.div(tags.nav(*body, class_="tr-rows", aria_label="Conversations"), pager)

    return filters
