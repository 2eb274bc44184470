"""The reviewer's app: wires the modules together; no data logic lives here."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import parse_qs

from htmltools import Tag, tags
from shiny import App, Inputs, Outputs, Session, reactive, render, ui

from trajectory_review.app.chart import trust_chart
from trajectory_review.app.data import AppData, Loader, static_dir
from trajectory_review.app.listing import listing_server, listing_ui
from trajectory_review.app.quality import quality_table
from trajectory_review.app.review import review_server, review_ui, save_event
from trajectory_review.app.transcript import conversation_html
from trajectory_review.index.cache import cache_dir
from trajectory_review.listing.catalog import Filters
from trajectory_review.listing.urls import conversation_href, link_query, parse_exchange, parse_link
from trajectory_review.replay import provenance
from trajectory_review.reviews.log import ReviewEvent, local_user, on_posit_connect
from trajectory_review.rules.qa import RuleQuality, quality_csv, rule_quality

if TYPE_CHECKING:  # shiny hands the page function a Starlette request
    from starlette.requests import Request

# Favicons for asides would be fetched from a third party: never from a reviewer's browser.
os.environ.setdefault("SHINYCHAT_ASIDE_FAVICON", "false")

HELP = [
    ("j / k", "next / previous conversation"),
    ("n / p", "next / previous answer"),
    ("] / [", "next / previous row of the list (the QA queue in Flagged)"),
    ("f", "flag the current answer"),
    ("/", "search"),
    ("?", "this help"),
    ("Esc", "close this help"),
]


def build_ui(data: AppData, query: str = "") -> Tag:
    """The page for one request: the sidebar's inputs start in the state its URL names."""
    lo, hi = data.catalog.date_bounds() if data.catalog else (None, None)
    stats = data.reader.stats if data.reader else None
    initial, counts, notes = Filters(), None, []
    if data.catalog:
        ids = data.reviews.state().ids_by_state()
        link = parse_link(query, ids)
        initial = link.filters
        counts = data.catalog.facet_counts(initial)
        notes = list(link.ignored)
    return ui.page_fillable(
        ui.head_content(
            tags.title("trajectory-review"),
            tags.link(rel="stylesheet", href="app.css"),
            # the tags' colours, from the display table (server-authored constants)
            tags.style(provenance.tone_css()),
            tags.script(src="app.js", defer=""),
            tags.link(rel="icon", href="icons/trusted.svg"),
            # The popover header names a citation's source kind from the display table.
            tags.script(
                json.dumps(provenance.popover_heads()).replace("</", "<\\/"),
                type="application/json",
                id="tr-citation-kinds",
            ),
        ),
        tags.header(
            tags.div(
                tags.img(src="icons/trusted.svg", width="20", height="20", alt=""),
                tags.span("trajectory-review", class_="tr-brand-name"),
                class_="tr-brand",
            ),
            tags.span(
                f"{data.catalog.conversation_count():,} conversations · "
                f"{stats.spans:,} spans · {stats.files} files"
                if data.catalog and stats
                else "",
                class_="tr-header-stats",
            ),
            ui.output_ui("refresh_banner"),
            ui.output_ui("warnings_button"),
            tags.button(
                "?",
                class_="btn btn-sm btn-outline-secondary tr-help-btn",
                title="Keyboard shortcuts (?)",
                aria_label="Keyboard shortcuts",
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
                listing_ui("list", lo, hi, initial, counts),
                id="left",
                width=400,
                class_="tr-left",
                title=None,
            ),
            ui.layout_sidebar(
                ui.sidebar(
                    review_ui("review"), id="right", position="right", width=320, class_="tr-right"
                ),
                ui.navset_underline(
                    ui.nav_panel("Transcript", ui.output_ui("transcript"), value="transcript"),
                    ui.nav_panel(
                        "Rule quality",
                        ui.output_ui("quality_panel"),
                        ui.download_link("quality_csv_download", "Export rule quality (CSV)"),
                        value="quality",
                    ),
                    ui.nav_panel(
                        "Trust over time",
                        ui.input_radio_buttons(
                            "grain", None, {"week": "Per week", "day": "Per day"}, inline=True
                        ),
                        ui.output_ui("chart"),
                        value="chart",
                    ),
                    id="main_tabs",
                ),
                class_="tr-main",
                border=False,
                fillable=False,
            ),
            border=False,
        ),
        tags.div(
            tags.div(
                tags.h3("Keyboard shortcuts"),
                tags.dl(*[x for k, v in HELP for x in (tags.dt(tags.kbd(k)), tags.dd(v))]),
                class_="tr-help-card",
                tabindex="-1",
                role="dialog",
                aria_modal="true",
                aria_label="Keyboard shortcuts",
            ),
            class_="tr-help",
            hidden="",
        ),
        padding=0,
        gap=0,
        class_="tr-page",
    )


def make_server(data: AppData):  # noqa: ANN201
    def server(input: Inputs, output: Outputs, session: Session) -> None:
        selected: reactive.Value[str | None] = reactive.value(None)
        exchange: reactive.Value[int | None] = reactive.value(None)
        review_tick = reactive.value(0)
        nav_mode = reactive.value("push")

        @reactive.calc
        def user() -> str | None:
            """Connect's user; else, on Connect, the name the browser gave (None until
            it has); else (a local run) the login name."""
            if session.user:
                return str(session.user)
            if not on_posit_connect():
                return local_user()
            if "reviewer_name" not in input:
                return None
            name = input.reviewer_name()
            return " ".join(str(name).split())[:80] or None if name else None

        if data.catalog is None:

            @render.ui
            def transcript() -> Tag:
                return tags.div(
                    tags.h2("No traces"), tags.p(data.error or ""), class_="tr-empty-state"
                )

            return

        catalog = data.catalog
        reader = data.reader
        url_filters: reactive.Value[dict | None] = reactive.value(None)
        filters = listing_server("list", catalog, data.reviews, selected, review_tick, url_filters)

        @reactive.calc
        def conversation():  # noqa: ANN202
            cid = selected()
            return reader.conversation(cid) if cid else None

        toggle_flag = review_server(
            "review", data.reviews, conversation, exchange, user, review_tick
        )

        # Other sessions and processes append to the same log: pick their events up.
        @reactive.poll(data.reviews.signature, 1.0)
        def review_log_signature() -> tuple[int, int]:
            return data.reviews.signature()

        @reactive.effect
        def _external_reviews() -> None:
            review_log_signature()
            with reactive.isolate():
                review_tick.set(review_tick() + 1)

        # The open conversation's own review events, changed only when they change: a
        # colleague's note elsewhere must not re-render this transcript (open tool cards
        # closed, the scroll jumped and a half-typed verdict note was lost).
        my_events: reactive.Value[tuple] = reactive.value(())

        @reactive.effect
        def _my_events() -> None:
            review_tick()
            cid = selected()
            events = tuple(e for e in data.reviews.state().events if e.conversation_id == cid)
            with reactive.isolate():
                if events != my_events.get():
                    my_events.set(events)

        # -- navigation (clicks, keys, deep links, back/forward) -------------------------

        def select(cid: str | None, ex: int | None, mode: str) -> None:
            nav_mode.set(mode)
            selected.set(cid)
            exchange.set(ex)

        @reactive.effect
        @reactive.event(input.nav)
        def _nav() -> None:
            ev = input.nav() or {}
            cid = ev.get("conversation")
            select(
                cid if isinstance(cid, str) and cid else selected(),
                parse_exchange(ev.get("exchange")),
                "replace" if ev.get("history") == "replace" else "push",
            )

        @reactive.effect
        @reactive.event(input.key)
        def _key() -> None:
            key = (input.key() or {}).get("key")
            if key in ("j", "k"):
                prev, nxt = catalog.neighbours(filters(), selected() or "")
                target = nxt if key == "j" else prev
                if target:
                    select(target, None, "push")
            elif key == "f":
                if conversation() is not None:
                    toggle_flag(exchange() or None)

        @reactive.effect
        @reactive.event(input.flag_exchange)
        def _flag_button() -> None:
            ev = input.flag_exchange() or {}
            ex = parse_exchange(ev.get("exchange"))
            if conversation() is not None and ex is not None:
                toggle_flag(ex)

        @reactive.effect
        @reactive.event(input.verdict)
        def _verdict() -> None:
            ev = input.verdict() or {}
            conv = conversation()
            if conv is None or ev.get("verdict") not in ("correct", "false_positive"):
                return
            ex = parse_exchange(ev.get("exchange"))
            if ex is None or not isinstance(ev.get("rule"), str):
                return
            if user() is None:
                ui.notification_show("Give your name first (in the review pane).")
                return
            event = ReviewEvent(
                "verdict",
                conv.id,
                user(),
                ex,
                str(ev.get("note") or ""),
                rule=ev["rule"],
                verdict=ev["verdict"],
            )
            if save_event(data.reviews, event):
                review_tick.set(review_tick() + 1)

        @reactive.calc
        def quality() -> list[RuleQuality]:
            review_tick()
            rows = catalog.rule_rows().to_dict("records")
            return rule_quality(rows, data.reviews.state())

        @render.ui
        def quality_panel() -> Tag:
            return quality_table(quality(), data.rules.source)

        @render.download_link(filename="rule-quality.csv")
        def quality_csv_download():  # noqa: ANN202
            yield quality_csv(quality())

        @reactive.effect
        @reactive.event(input.url_state)
        def _from_url() -> None:
            state = input.url_state() or {}
            search = str(state.get("search") or "")
            q = parse_qs(search.lstrip("?"))
            url_filters.set({**q, "_initial": ["1"]} if state.get("initial") else q)
            link = parse_link(q, data.reviews.state().ids_by_state())
            cid, ex = link.conversation, link.exchange
            if cid is None:
                wanted = link.filters
                first = catalog.page(wanted, 1).rows
                cid = first.iloc[0]["conversation_id"] if len(first) else None
                if cid and wanted.view != "conversations" and not ex:
                    ex = int(first.iloc[0]["exchange"])  # the listed answer itself
                elif cid and wanted.picks_answers and not ex:
                    ex = int(first.iloc[0]["match_exchange"])  # as a click on the row
            select(cid, ex, "replace")

        @reactive.effect
        async def _to_url() -> None:
            f = filters()
            cid, ex = selected(), exchange()
            query = link_query(f, cid, ex, catalog.date_bounds())
            with reactive.isolate():
                mode = nav_mode()
            await session.send_custom_message(
                "tr-url",
                {
                    "query": query,
                    "mode": mode,
                    "conversation": cid,
                    "exchange": ex,
                },
            )
            with reactive.isolate():
                nav_mode.set("replace")

        # -- main panels ----------------------------------------------------------------

        @render.ui
        async def transcript() -> Tag:
            my_events()
            cid = selected()
            if not cid:
                return tags.div(
                    tags.p("Select a conversation on the left, or press j."),
                    class_="tr-empty-state",
                )
            # Reading, replaying and judging a conversation runs off the event loop: one
            # huge answer (a 16 MB tool result, an adversarial reply) must not keep every
            # other session waiting for its clicks.
            conv = await asyncio.to_thread(reader.conversation, cid)
            if conv is None:
                why = await asyncio.to_thread(reader.why_dropped, cid)
                return tags.div(
                    tags.h2("Conversation not shown" if why else "Conversation not found"),
                    tags.p(
                        f"The conversation {cid} could not be read: " + "; ".join(why)
                        if why
                        else f"No conversation with id {cid} in these traces."
                    ),
                    class_="tr-empty-state",
                )
            parent = conv.branch_of
            with reactive.isolate():
                state = data.reviews.state()

            def page() -> Tag:
                above = reader.conversation(parent) if parent else None
                return conversation_html(conv, state, data.rules, above)

            return await asyncio.to_thread(page)

        @render.ui
        def chart() -> Tag:
            grain = input.grain() or "week"
            return trust_chart(catalog.trust_over_time(filters(), grain), grain)

        @render.ui
        def warnings_button() -> Tag:
            n = len(all_warnings())
            return tags.button(
                f"⚠ {n} warning{'s' if n != 1 else ''}",
                class_="btn btn-sm tr-warn-btn" + (" has-warnings" if n else ""),
                onclick="Shiny.setInputValue('show_warnings', Date.now(), {priority: 'event'})",
                title="Bad lines, conflicting records, unreadable attributes, "
                "dropped conversations",
            )

        def all_warnings() -> list[tuple[str | None, str]]:
            out = [(w.conversation_id, w.message) for w in reader.source_warnings()]
            out.extend((None, w) for w in data.source_warnings)
            if catalog.dropped:
                out.append(
                    (None, f"{catalog.dropped} conversation(s) have no exchange and were dropped")
                )
            out.extend((cid, msg) for cid, msg in catalog.warnings)
            state = data.reviews.state()
            if state.error:
                out.append((None, state.error))
            if state.skipped_lines:
                out.append(
                    (
                        None,
                        f"review log {data.reviews.path}: {state.skipped_lines} line(s) are "
                        "not valid review events and were skipped",
                    )
                )
            return out

        @reactive.effect
        @reactive.event(input.show_warnings)
        def _warnings_modal() -> None:
            items = []
            for cid, msg in all_warnings():
                link = (
                    tags.a(
                        cid,
                        href=conversation_href(cid),
                        class_="tr-nav-link",
                        data_conversation=cid,
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

    return server


def loading_page(loader: Loader) -> Tag:
    """What a browser gets while the data is built: progress, reloading itself."""
    failed = loader.failure is not None
    return ui.page_fillable(
        ui.head_content(
            tags.title("trajectory-review · loading"),
            tags.link(rel="stylesheet", href="app.css"),
            tags.style(provenance.tone_css()),
            tags.link(rel="icon", href="icons/trusted.svg"),
            # the same URL again, deep link included, until the data is ready; after a
            # failure, slowly (the traces are watched and a fix is picked up)
            tags.meta(http_equiv="refresh", content="15" if failed else "2"),
        ),
        tags.div(
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
            if failed or loader.fraction() is None
            else tags.progress(value=f"{loader.fraction():.3f}", max="1", class_="tr-loading-bar"),
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
        ),
        padding=0,
        gap=0,
    )


def make_app(static: Path | None = None) -> App:
    loader = Loader()

    def page(request: Request) -> Tag:
        if loader.data is None:
            return loading_page(loader)
        return build_ui(loader.data, request.url.query)

    def server(input: Inputs, output: Outputs, session: Session) -> None:
        # A session opened on the loading page has nothing to serve; the page reloads.
        data = loader.data
        if data is None:
            return
        make_server(data)(input, output, session)
        born = loader.generation

        # The traces changed and were read again: a session keeps the data it opened with
        # (its list and transcript stay consistent) and is offered the new one.
        @reactive.poll(lambda: loader.generation, 2.0)
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
                onclick="window.location.reload()",
                title="The trace files changed and have been read again",
            )

    return App(page, server, static_assets=static or static_dir())
