"""The header's warnings: bad lines, unreadable files, conflicting records, dropped
conversations, an unusable review log; each with a link to its conversation."""

from __future__ import annotations

from htmltools import Tag, tags
from shiny import Inputs, Outputs, Session, module, reactive, render, ui

from trajectory_review.app.catalog_feed import CatalogFeed
from trajectory_review.app.data import AppData
from trajectory_review.listing.urls import conversation_href


def all_warnings(data: AppData) -> list[tuple[str | None, str]]:
    """(conversation id or None, one line) for everything that went wrong reading."""
    out: list[tuple[str | None, str]] = [(None, w) for w in data.source_warnings]
    catalog, reader = data.catalog, data.reader
    if catalog is None or reader is None:  # nothing was read: the page says why instead
        return out
    out[:0] = [(w.conversation_id, w.message) for w in reader.source_warnings()]
    if catalog.dropped:
        out.append((None, f"{catalog.dropped} conversation(s) have no exchange and were dropped"))
    out.extend((cid, msg) for cid, msg in catalog.warnings)
    state = data.reviews.state()
    if state.error:
        out.append((None, state.error))
    if state.skipped_lines:
        out.append(
            (
                None,
                f"review log {data.reviews.shown}: {state.skipped_lines} line(s) are "
                "not valid review events and were skipped",
            )
        )
    return out


@module.ui
def warnings_ui() -> Tag:
    return ui.output_ui("button", inline=True)


@module.server
def warnings_server(
    input: Inputs, output: Outputs, session: Session, data: AppData, feed: CatalogFeed
) -> None:
    # Conversations read in after the list is served (Catalog.fill) bring their warnings:
    # the count follows, and says it is a count so far until every conversation is in.
    @render.ui
    def button() -> Tag:
        feed.judged()
        n = len(all_warnings(data))
        so_far = " so far" if feed.replaying() is not None else ""
        return ui.input_action_button(
            "show",
            f"⚠ {n} warning{'s' if n != 1 else ''}{so_far}",
            class_="btn btn-sm tr-warn-btn" + (" has-warnings" if n else ""),
            title="Bad lines, conflicting records, unreadable attributes, dropped conversations",
        )

    @reactive.effect
    @reactive.event(input.show)
    def _modal() -> None:
        items = []
        for cid, msg in all_warnings(data):
            link = (
                tags.a(
                    cid, href=conversation_href(cid), class_="tr-nav-link", data_conversation=cid
                )
                if cid
                else tags.span("traces")
            )
            items.append(tags.li(link, " — ", msg))
        ui.modal_show(
            ui.modal(
                tags.ul(*items, class_="tr-warning-list") if items else tags.p("No warnings."),
                title="Warnings",
                easy_close=True,
                size="l",
            )
        )
