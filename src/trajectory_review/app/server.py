"""The reviewer's app: the page for each request, and a session that wires the feature
modules (list, navigation, transcript, review, quality, trend, warnings)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from htmltools import Tag, tags
from shiny import App, Inputs, Outputs, Session, reactive, render

from trajectory_review.app.catalog_feed import catalog_feed
from trajectory_review.app.chart import trend_server
from trajectory_review.app.data import AppData, Loader, static_dir
from trajectory_review.app.downloads import downloads_server
from trajectory_review.app.feed import review_feed, reviewer
from trajectory_review.app.guard import Guard
from trajectory_review.app.ids import (
    DOWNLOADS,
    HEADER,
    KEYBOARD,
    LIST,
    NAV,
    QUALITY,
    QUEUE,
    REVIEW,
    SAMPLES,
    TRANSCRIPT,
    TREND,
    WARNINGS,
    WHATIF,
)
from trajectory_review.app.keys import keys_server
from trajectory_review.app.listing import listing_server
from trajectory_review.app.navigation import fold_review_pane, navigation_server, new_selection
from trajectory_review.app.page import (
    build_ui,
    header_server,
    loading_page,
    loading_server,
    on_progress_page,
)
from trajectory_review.app.quality import quality_server
from trajectory_review.app.queue import queue_server
from trajectory_review.app.review import review_server
from trajectory_review.app.samples import samples_server
from trajectory_review.app.transcript import own_events, transcript_server
from trajectory_review.app.warnings import warnings_server
from trajectory_review.app.watch import watch
from trajectory_review.app.whatif import whatif_server

if TYPE_CHECKING:  # shiny hands the page function a Starlette request
    from starlette.applications import Starlette
    from starlette.requests import Request

    from trajectory_review.model.trajectory import Conversation

# Favicons for asides would be fetched from a third party: never from a reviewer's browser.
os.environ.setdefault("SHINYCHAT_ASIDE_FAVICON", "false")


def make_server(data: AppData) -> Callable[[Inputs, Outputs, Session], None]:
    """The session: wires the feature modules; no data logic lives here."""

    def server(input: Inputs, output: Outputs, session: Session) -> None:
        user = reviewer(input, session)
        catalog, reader = data.catalog, data.reader
        if catalog is None or reader is None:  # never served (app/data.py, SourcesUnreadable)
            return
        sel = new_selection()
        feed = catalog_feed(catalog)  # how far the catalog is: one poll for every module
        reviews = review_feed(data.reviews, catalog, feed)
        url_filters: reactive.Value[dict[str, Any] | None] = reactive.value(
            None, name="url_filters"
        )
        listing = listing_server(LIST, catalog, reviews, sel, url_filters, data.rows, feed)
        filters = listing.filters

        @reactive.calc
        def conversation() -> Conversation | None:
            cid = sel.conversation()
            return reader.conversation(cid) if cid else None

        flag = review_server(REVIEW, reviews, conversation, sel.exchange, user)
        navigation_server(NAV, catalog, reviews, filters, url_filters, sel, flag)
        fold_review_pane(input)
        queue = queue_server(QUEUE, catalog, reviews, conversation, user, filters, sel, data.rules)
        mine = own_events(reviews, sel.conversation)
        tried = whatif_server(WHATIF, reader, catalog, reviews, data.rules, filters)
        drawn = transcript_server(
            TRANSCRIPT, reader, reviews, data.rules, sel.conversation, sel.exchange, mine, tried
        )
        keys_server(KEYBOARD, catalog, listing, sel, conversation, drawn, flag, queue)
        quality_server(QUALITY, catalog, reviews, data.rules, feed)
        samples_server(SAMPLES, catalog, reviews, user, filters, sel, conversation)
        trend_server(TREND, catalog, filters, feed)
        warnings_server(WARNINGS, data, feed)
        header_server(HEADER, data, feed)
        downloads_server(DOWNLOADS, catalog, reader, data.reviews, data.rules, filters)

    return server


class GuardedApp(App):
    """Shiny's app behind app/guard.py: Host, Origin, framing, CSP, identity header."""

    def init_starlette_app(self) -> Starlette:
        starlette_app = super().init_starlette_app()
        starlette_app.add_middleware(Guard)
        return starlette_app


def make_app(static: Path | None = None) -> App:
    loader = Loader()

    def page(request: Request) -> Tag:
        if loader.data is None:
            return loading_page(loader)
        try:
            return build_ui(loader.data, request.url.query)
        finally:
            loader.page_served()

    def server(input: Inputs, output: Outputs, session: Session) -> None:
        # A session opened on the progress page follows the build, then opens the app;
        # so does one whose page was the progress page when the data became ready in
        # between (it has none of the app's outputs, and would otherwise wait for the
        # fallback reload).
        data = loader.data
        if data is None or on_progress_page(session):
            loading_server(loader, session)
            return
        make_server(data)(input, output, session)
        born = loader.generation

        # The traces changed and were read again: a session keeps the data it opened with
        # (its list and transcript stay consistent) and is offered the new one.
        @watch(lambda: loader.generation, 2.0)
        def generation() -> int:
            return loader.generation

        @render.ui
        def refresh_banner() -> Tag | None:
            if generation() == born or loader.data is None or loader.data.catalog is None:
                return None
            n = loader.data.catalog.conversation_count()
            return tags.button(
                f"New traces · {n:,} conversations · reload",
                class_="btn btn-sm tr-refresh",
                data_reload="",  # static/app.js: the page's CSP allows no inline handler
                title="The trace files changed and have been read again",
            )

    app = GuardedApp(page, server, static_assets=static or static_dir())
    app.on_shutdown(loader.stop)  # under serve, shiny run and Connect alike
    return app
