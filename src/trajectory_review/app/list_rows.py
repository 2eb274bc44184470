"""The list as its filters select it: the counts beside the filters, the summary line,
one server-side page of rows and the pager. The filters themselves are app/listing.py's."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from htmltools import HTML, Tag, tags
from shiny import Inputs, Outputs, Session, module, reactive, render, ui

from trajectory_review.app.actions import sends
from trajectory_review.app.catalog_feed import CatalogFeed
from trajectory_review.app.labels import active_filters, count_labels, reading_note
from trajectory_review.app.navigation import Selection
from trajectory_review.app.rows import RowCache, row_html
from trajectory_review.listing.filters import Filters, Page
from trajectory_review.listing.queries import Catalog
from trajectory_review.listing.queue import progress
from trajectory_review.listing.urls import parse_exchange

if TYPE_CHECKING:  # its parent, app/listing.py, hands it over
    from trajectory_review.app.listing import ListView


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


def empty_list(f: Filters, reading: bool, judging: bool, none_at_all: bool = False) -> Tag:
    """What a page without rows says: why it is empty, or that it may not stay so.
    none_at_all: the traces hold no answer yet (no filter is to blame)."""
    if reading:
        text = "Conversations are still being read; the ones that match appear here as they are."
    elif none_at_all:
        text = "These traces hold no conversation yet; the list fills in when they do."
    elif judging and (f.view == "flagged" or f.rule):
        text = "The answers are being judged; they appear here as the reply rules find them."
    elif f.view == "flagged" and not f.show_done and f.done:
        text = "Every answer here is reviewed."
    else:
        text = "Nothing matches these filters."
    return tags.div(text, class_="tr-empty")


def pager(p: Page, page_to: str) -> Tag:
    """Prev and Next, each sending the page it opens to the `page_to` input."""

    def step(label: str, to: int, off: bool, direction: str) -> Tag:
        return tags.button(
            label,
            class_="btn btn-sm btn-outline-secondary tr-page",
            disabled=off or None,
            data_step=direction,
            **sends(page_to, to),
        )

    return tags.div(
        step("‹ Prev", p.page - 1, p.page <= 1, "-1"),
        tags.span(f"{p.page} / {p.pages}", class_="tr-page-no"),
        step("Next ›", p.page + 1, p.page >= p.pages, "1"),
        class_="tr-pager",
    )


# Long on purpose: a module server: the closure its outputs and effects share (each short).
@module.server
def rows_server(
    input: Inputs,
    output: Outputs,
    session: Session,
    catalog: Catalog,
    view: ListView,
    selected: Selection,
    rows_drawn: RowCache,
    now: CatalogFeed,
) -> None:
    """The counts, the summary and the page of rows for the filters app/listing.py reads,
    and the pager and the chips' "clear", which ask the filters for a page or a clear."""
    filters = view.filters

    @reactive.effect
    @reactive.event(input.page_to)
    def _page_to() -> None:
        n = parse_exchange(input.page_to())  # a positive number from the browser, or nothing
        if n is not None:
            view.go_to_page(n)

    @reactive.effect
    @reactive.event(input.clear_all)
    def _clear_all() -> None:
        view.clear()

    # The list's queries run off the event loop (DuckDB lets go of the GIL): with eight
    # reviewers on one server, one's new filter state or page kept every other session's
    # clicks waiting behind it (docs/performance-log.md, "list queries off the event loop").
    @reactive.calc
    async def current() -> Page:
        now.judged()
        return await asyncio.to_thread(catalog.page, filters())

    @reactive.effect
    async def _update_counts() -> None:
        now.judged()
        with reactive.isolate():
            partial = now.judging() is not None  # as of this generation
            growing = now.replaying() is not None
        counts = await asyncio.to_thread(catalog.facet_counts, filters())
        labels = count_labels(counts, catalog.select_values(), judging=partial, growing=growing)
        options = {session.ns(k): v for k, v in labels["options"].items()}
        await session.send_custom_message(
            "tr-counts", {"spans": labels["spans"], "options": options}
        )

    @render.ui
    async def summary() -> Tag:
        f = filters()
        p = await current()
        unit = "conversation" if f.view == "conversations" else "answer"
        # With no answer at all, no filter narrows anything: the date pickers of an empty
        # catalog hold the browser's today, which read back as a date filter in force.
        chips = active_filters(f, *catalog.date_bounds()) if catalog.total_answers else []
        note = judging_note(now.judging(), f, catalog.judge_error, now.replaying())
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
            chosen = (selected.conversation(), selected.exchange())
            partial = now.judging() is not None
            reading = now.replaying() is not None

        def row(r: Any) -> HTML:  # a row of the page's frame
            cid, ex = r["conversation_id"], int(r["exchange"])
            # everything the row shows: its values (in the conversations view the pill
            # and counts follow the filters) and its marks
            on = is_selected(cid, ex if f.view in ("answers", "flagged") else None, chosen)
            key = (
                f.view, f.picks_answers, tuple(str(v) for v in r.values), on,
                cid in flagged, cid in noted, (cid, ex) in f.done,
            )  # fmt: skip
            return rows_drawn.html(
                key, lambda: row_html(r, f.view, on, flagged, noted, f.picks_answers, f.done)
            )

        # one markup child for the page's rows, not fifty: htmltools checks each child
        # node against its protocols again when the output is drawn
        drawn = "".join(str(row(r)) for _, r in p.rows.iterrows())
        none = not catalog.total_answers
        body = HTML(drawn) if drawn else empty_list(f, reading, partial, none)
        return tags.div(
            tags.nav(body, class_="tr-rows", aria_label="Conversations"),
            pager(p, session.ns("page_to")),
        )


def is_selected(cid: str, ex: int | None, chosen: tuple[str | None, int | None]) -> bool:
    """A row is the selection: its conversation, and in the answer views (ex given) its
    answer, or any answer of it while none is chosen (as static/view.js marks rows)."""
    return cid == chosen[0] and (ex is None or chosen[1] is None or ex == chosen[1])
