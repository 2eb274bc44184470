"""The pages: the app's layout (rendered per request, with the deep link's state already in
its inputs) and the progress page shown while the data is built."""

from __future__ import annotations

from typing import Any

from htmltools import HTMLDependency, Tag, tags
from shiny import Inputs, Outputs, Session, module, reactive, render, ui

from trajectory_review import __version__
from trajectory_review.app.actions import sends
from trajectory_review.app.catalog_feed import CatalogFeed
from trajectory_review.app.chart import trend_ui
from trajectory_review.app.data import AppData, Loader, static_dir
from trajectory_review.app.downloads import downloads_ui
from trajectory_review.app.ids import (
    DOWNLOADS,
    HEADER_STATS,
    KEY_INPUT,
    LIST,
    MAIN_TABS,
    NAV_INPUTS,
    QUALITY,
    REVIEW,
    SAMPLES,
    TRANSCRIPT,
    TRANSCRIPT_OUTPUT,
    TREND,
    WARNINGS,
    WHATIF,
)
from trajectory_review.app.keys import SENT
from trajectory_review.app.listing import listing_ui
from trajectory_review.app.quality import quality_ui
from trajectory_review.app.review import review_ui
from trajectory_review.app.samples import sample_bar_ui, samples_ui
from trajectory_review.app.transcript import transcript_ui
from trajectory_review.app.warnings import warnings_ui
from trajectory_review.app.watch import watch
from trajectory_review.app.whatif import whatif_ui
from trajectory_review.listing.filters import Filters
from trajectory_review.listing.urls import parse_link
from trajectory_review.model import provenance
from trajectory_review.reviews.store import lost_on_redeploy
from trajectory_review.settings import cache_dir
from trajectory_review.sources import shown

# The feature modules' ids on the page (Shiny prefixes their inputs and outputs: "list-q").


def assets(script: bool = True) -> HTMLDependency:
    """The page's stylesheet and script, as an HTML dependency: served by Shiny under its
    own versioned path (relative, so Connect's path prefix is no concern), loaded after
    Shiny's own scripts, so the script can register its handlers at once. script=False:
    the progress page's script, which only opens the app once its server says so."""
    return HTMLDependency(
        "trajectory-review",
        __version__,
        source={"subdir": str(static_dir())},
        stylesheet={"href": "app.css"},
        # view.js first: app.js asks it what is text
        script=[{"src": "view.js", "defer": ""}, {"src": "app.js", "defer": ""}]
        if script
        else {"src": "loading.js", "defer": ""},
        all_files=False,
    )


def header_stats(data: AppData) -> str:
    """What the header says the server holds. While conversations are still read into
    the list, the index's count of them (the list's own count is not final yet)."""
    stats = data.reader.stats if data.reader else None
    if data.catalog is None or stats is None or data.reader is None:
        return ""
    spans = f"{stats.spans:,} span{'' if stats.spans == 1 else 's'}"
    where = f"{spans} · {data.reader.index.origin}"
    if data.catalog.replaying is not None:
        return f"reading {_conversations(stats.conversations)} · {where}"
    return f"{_conversations(data.catalog.conversation_count())} · {where}"


def _conversations(n: int) -> str:
    return "1 conversation" if n == 1 else f"{n:,} conversations"


@module.server
def header_server(
    input: Inputs, output: Outputs, session: Session, data: AppData, feed: CatalogFeed
) -> None:
    """The header's counts, again whenever the list's rows change (Catalog.fill)."""

    @render.text
    def stats() -> str:
        feed.judged()
        return header_stats(data)


def store_notice(data: AppData) -> Tag | None:
    """A lasting line while reviews are written where a redeploy loses them."""
    said = lost_on_redeploy(data.reviews)
    return tags.div(said, class_="tr-store-notice", role="status") if said else None


# Long on purpose: the page's layout as one tree, read top to bottom like the page.
def build_ui(data: AppData, query: str = "") -> Tag:
    """The page for one request: the sidebar's inputs start in the state its URL names.
    Each feature's own UI is its module's `*_ui`."""
    lo, hi = data.catalog.date_bounds() if data.catalog else (None, None)
    initial, counts, notes = Filters(), None, []
    if data.catalog:
        ids = data.reviews.state().ids_by_state()
        link = parse_link(query, ids)
        initial = link.filters
        counts = data.catalog.facet_counts(initial)
        notes = list(link.ignored)
    return ui.page_fillable(
        assets(),  # a child, not head content: Shiny renders dependencies into the head
        ui.head_content(
            tags.title("trajectory-review"),
            # the tags' colours and the popovers' source kinds, from the display table
            # (server-authored constants)
            tags.style(provenance.tone_css() + provenance.popover_css()),
            tags.link(rel="icon", href="icons/trusted.svg"),
        ),
        tags.header(
            tags.div(
                tags.img(src="icons/trusted.svg", width="20", height="20", alt=""),
                # the page's one level-one heading (a reader's way in, WCAG 2.4.6)
                tags.h1("trajectory-review", class_="tr-brand-name"),
                class_="tr-brand",
            ),
            tags.span(
                header_stats(data),
                # a text output holding its first text: it follows the list as it fills in
                id=HEADER_STATS,
                class_="shiny-text-output tr-header-stats",
                # what this server reads and writes, on hover (as `serve` prints it)
                title=(
                    f"Sources: {' '.join(shown(s) for s in data.sources)}\n"
                    f"Review log: {data.reviews.shown}\n"
                    f"Rules: {data.rules.source}\n"
                    f"Cache: {cache_dir() or 'off'}"
                ),
            ),
            ui.output_ui("refresh_banner"),
            store_notice(data),
            warnings_ui(WARNINGS),
            tags.button(
                "?",
                class_="btn btn-sm btn-outline-secondary tr-help-btn",
                title="Keyboard shortcuts (?)",
                aria_label="Keyboard shortcuts",
                **sends(KEY_INPUT, {"key": "?"}),
            ),
            class_="tr-header",
        ),
        ui.layout_sidebar(
            ui.sidebar(
                tags.p(
                    "Ignored in this link (not understood): " + ", ".join(notes),
                    class_="tr-link-note",
                    role="note",
                )
                if notes
                else None,
                listing_ui(
                    LIST,
                    lo,
                    hi,
                    initial,
                    counts,
                    data.catalog.select_values() if data.catalog else {},
                    growing=bool(data.catalog and data.catalog.replaying is not None),
                ),
                downloads_ui(DOWNLOADS) if data.catalog else None,
                id="left",
                width=400,
                class_="tr-left",
                title=None,
                aria_label="Conversations and answers",
            ),
            ui.layout_sidebar(
                ui.sidebar(
                    review_ui(REVIEW),
                    id="right",
                    position="right",
                    width=320,
                    class_="tr-right",
                    aria_label="Review",
                ),
                # the main landmark: a screen reader's "skip to main" lands on the tabs
                tags.main(
                    ui.navset_underline(
                        ui.nav_panel(
                            "Transcript",
                            sample_bar_ui(SAMPLES),
                            transcript_ui(TRANSCRIPT),
                            value="transcript",
                        ),
                        ui.nav_panel(
                            "Rule quality",
                            quality_ui(QUALITY),
                            samples_ui(SAMPLES),
                            value="quality",
                        ),
                        ui.nav_panel("What if", whatif_ui(WHATIF), value="whatif"),
                        ui.nav_panel("Trust over time", trend_ui(TREND), value="chart"),
                        id=MAIN_TABS,
                    ),
                    class_="tr-main-landmark",
                ),
                class_="tr-main",
                border=False,
                fillable=False,
            ),
            border=False,
        ),
        # Shiny's notifications ("Not saved: …") in a live region a screen reader reads
        # out: Shiny makes its panel without one, and uses this one when the page has it
        tags.div(id="shiny-notification-panel", role="status", aria_live="polite"),
        padding=0,
        gap=0,
        lang="en",
        class_="tr-app",
        # served while the reply rules still ran over the answers (the QA queue and the
        # rule filters were filling in): tests and scripts wait for a page without it
        data_judging="1" if data.catalog is not None and data.catalog.judging is not None else None,
        data_view=initial.view,  # static/app.js follows the view input from here on
        # what static/app.js looks up, by the ids the modules give them
        data_search=f"{LIST}-q",
        data_view_input=f"{LIST}-view",
        data_rows=f"{LIST}-rows",
        data_note=f"{REVIEW}-note",
        data_transcript=TRANSCRIPT_OUTPUT,
        data_nav=NAV_INPUTS["nav"],
        data_key=KEY_INPUT,
        data_keys=SENT,  # the keys sent to the server (app/keys.py: KEYS)
        data_url_state=NAV_INPUTS["url_state"],
    )


# The progress page follows its server live (loading_server) and opens the app the moment
# the data is ready (a page that reloaded itself on a timer showed the list late). It
# reloads itself after this long only while its live link is down (static/loading.js): a
# Shiny page without one shows nothing else.
FALLBACK_RELOAD_SECONDS = 30
# How often a progress page's server looks at the loader (cheap: a few attributes and
# DuckDB's progress figure).
PROGRESS_POLL_SECONDS = 0.25
PROGRESS_OUTPUT = "loading_state"  # the name of loading_server's output function


def loading_page(loader: Loader) -> Tag:
    """What a browser gets while the data is built: progress, then the app."""
    return ui.page_fillable(
        assets(script=False),
        ui.head_content(
            tags.title("trajectory-review · loading"),
            tags.style(provenance.tone_css()),
            tags.link(rel="icon", href="icons/trusted.svg"),
        ),
        # drawn now, then again by loading_server as the build goes on
        tags.main(
            tags.div(loading_card(loader), id=PROGRESS_OUTPUT, class_="shiny-html-output"),
            # static/loading.js: the same URL again, deep link included, should the live
            # link be down
            data_fallback_reload=str(FALLBACK_RELOAD_SECONDS),
        ),
        padding=0,
        gap=0,
        lang="en",
    )


def loading_card(loader: Loader) -> Tag:
    failed = loader.failure is not None
    fraction = loader.fraction()  # once: asked of a running build, it moves between calls
    return tags.div(
        tags.div(
            tags.img(src="icons/trusted.svg", width="28", height="28", alt=""),
            tags.h1("trajectory-review"),
            class_="tr-loading-brand",
        ),
        tags.p(
            "Could not load the traces." if failed else "Reading the traces…",
            class_="tr-loading-title",
        ),
        tags.p(
            loader.failure if failed else loader.status(),
            class_="tr-loading-status",
            role="status",
            aria_live="polite",
        ),
        None
        if failed or fraction is None
        else tags.progress(value=f"{fraction:.3f}", max="1", class_="tr-loading-bar"),
        None
        if failed
        else tags.p(
            f"{loader.elapsed():.0f} s so far. This page opens the app when it is ready"
            + (
                "; later starts on unchanged traces read it from the cache."
                if cache_dir() is not None
                else "."
            ),
            class_="tr-loading-note",
        ),
        class_="tr-loading" + (" tr-loading-failed" if failed else ""),
    )


def on_progress_page(session: Session) -> bool:
    """Was this session's page the progress page? (Only it has the progress output.)"""
    with reactive.isolate():
        return session.clientdata.output_hidden(PROGRESS_OUTPUT) is not None


def loading_server(loader: Loader, session: Session) -> None:
    """A progress page's session: the card drawn again as the build moves, and the app
    opened (the page reloaded, deep link and all) once the data is ready. A failed start
    stays on the page and says why; the traces are watched, and a fix opens the app."""

    def state() -> tuple[Any, ...]:
        fraction = loader.fraction()
        return (
            loader.data is not None,
            loader.failure,
            loader.status(),
            None if fraction is None else round(fraction, 3),
            int(loader.elapsed()),
        )

    @watch(state, PROGRESS_POLL_SECONDS)
    def progress() -> tuple[Any, ...]:
        return state()

    @render.ui
    def loading_state() -> Tag:  # PROGRESS_OUTPUT
        progress()
        return loading_card(loader)

    @reactive.effect
    async def open_app() -> None:
        if progress()[0]:
            await session.send_custom_message("tr-ready", {})
