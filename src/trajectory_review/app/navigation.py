"""Which conversation and answer are open: row clicks, deep links, back/forward, and the
address bar kept in step (the keys that move it are app/keys.py's).

The browser talks here through the module's inputs (`nav`, `flag_exchange`,
`url_state`: app/ids.NAV_INPUTS, named to static/app.js by the page's data- attributes) and
hears back through the `tr-url` message.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

from shiny import Inputs, Outputs, Session, module, reactive, ui

from trajectory_review.app.feed import Reviews
from trajectory_review.app.ids import MAIN_TABS
from trajectory_review.listing.filters import Filters
from trajectory_review.listing.queries import Catalog
from trajectory_review.listing.urls import link_query, parse_exchange, parse_link


@dataclass(frozen=True)
class Selection:
    conversation: reactive.Value[Any]  # str | None
    exchange: reactive.Value[Any]  # int | None
    mode: reactive.Value[Any]  # "push" or "replace": how the next address change is recorded
    # the answer opened takes the focus once drawn: a key opened it (the queue moving on
    # included), so the reviewer reads and Tabs on from it; a click or a link leaves the
    # focus where the reviewer put it
    focus: reactive.Value[bool]

    def select(self, cid: str | None, ex: int | None, mode: str, focus: bool = False) -> None:
        with reactive.isolate():
            same = (self.conversation(), self.exchange()) == (cid, ex)
        self.mode.set(mode)
        self.focus.set(focus and not same)  # nothing opened: nothing to focus, later either
        self.conversation.set(cid)
        self.exchange.set(ex)


def new_selection() -> Selection:
    return Selection(
        reactive.value(None, name="conversation"),
        reactive.value(None, name="exchange"),
        reactive.value("push", name="mode"),
        reactive.value(False, name="focus"),
    )


# Long on purpose: a module server: the closure its effects share (each effect a screen or less).
@module.server
def navigation_server(
    input: Inputs,
    output: Outputs,
    session: Session,
    catalog: Catalog,
    reviews: Reviews,
    filters: Callable[[], Filters],
    url_filters: reactive.Value[Any],
    sel: Selection,
    flag: Callable[[int | None], Awaitable[None]],
) -> None:
    @reactive.effect
    @reactive.event(input.nav)
    def _nav() -> None:
        ev = input.nav() or {}
        # a link from another tab (What if, a chart) opens the transcript it names
        ui.update_navset(MAIN_TABS, selected="transcript", session=session.root_scope())
        cid = ev.get("conversation")
        target = cid if isinstance(cid, str) and cid else sel.conversation()
        sel.select(
            target,
            parse_exchange(ev.get("exchange")),
            "replace" if ev.get("history") == "replace" else "push",
            # a link to another answer of the open conversation takes the reader there
            focus=target == sel.conversation(),
        )

    @reactive.effect
    @reactive.event(input.flag_exchange)
    async def _flag_button() -> None:
        ex = parse_exchange((input.flag_exchange() or {}).get("exchange"))
        if sel.conversation() and ex is not None:
            await flag(ex)

    @reactive.effect
    @reactive.event(input.url_state)
    def _from_url() -> None:
        state = input.url_state() or {}
        q = parse_qs(str(state.get("search") or "").lstrip("?"))
        url_filters.set({**q, "_initial": ["1"]} if state.get("initial") else q)
        link = parse_link(q, reviews.state().ids_by_state())
        cid, ex = link.conversation, link.exchange
        if cid is None:
            wanted = link.filters
            first = catalog.page(wanted, 1).rows
            cid = first.iloc[0]["conversation_id"] if len(first) else None
            if cid and wanted.view != "conversations" and not ex:
                ex = int(first.iloc[0]["exchange"])  # the listed answer itself
            elif cid and wanted.picks_answers and not ex:
                ex = int(first.iloc[0]["match_exchange"])  # as a click on the row
        sel.select(cid, ex, "replace")

    seen_view: list[str | None] = [None]

    @reactive.effect
    def _open_the_views_first_answer() -> None:
        """A view of answers (Answers, the QA queue) opened from its tab starts at its
        first answer, as its deep link does: with the conversation open and no answer
        chosen, ] walked nothing and x judged nothing."""
        f = filters()
        before, seen_view[0] = seen_view[0], f.view
        if before is None or before == f.view or f.view == "conversations":
            return
        with reactive.isolate():
            ex = sel.exchange()
        if ex is not None:
            return
        rows = catalog.page(f, 1).rows
        if len(rows):
            sel.select(str(rows.iloc[0]["conversation_id"]), int(rows.iloc[0]["exchange"]), "push")

    @reactive.effect
    async def _to_url() -> None:
        cid, ex = sel.conversation(), sel.exchange()
        query = link_query(filters(), cid, ex, catalog.date_bounds())
        with reactive.isolate():
            mode, focus = sel.mode(), sel.focus()
            # Not before the page's own address is read (_from_url, which then selects):
            # the empty selection a session starts with was pushed as "?", an entry of its
            # own that Back from a deep link returned to. Isolated: on back/forward the
            # address is the browser's already, and only the selection it names is news.
            if input.url_state() is None:
                return
        await session.send_custom_message(
            "tr-url",
            {"query": query, "mode": mode, "conversation": cid, "exchange": ex, "focus": focus},
        )
        with reactive.isolate():
            sel.mode.set("replace")
            sel.focus.set(False)


def fold_review_pane(input: Inputs) -> None:
    """The review pane is for the transcript: on the rule-quality and trend tabs it folds
    away and gives them its width (their tables were cut off at the right), and it
    opens again with the transcript. Its own toggle still folds it at any time."""

    @reactive.effect
    @reactive.event(input.main_tabs, ignore_init=True)
    def _fold() -> None:
        ui.update_sidebar("right", show=input.main_tabs() == "transcript")
