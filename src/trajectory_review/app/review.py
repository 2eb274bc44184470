"""The right sidebar: flags and notes per conversation and per exchange, with author and
time, read back from the append-only review log."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, NamedTuple

from htmltools import Tag, TagList, tags
from shiny import Inputs, Outputs, Session, module, reactive, render, req, ui
from shiny.module import resolve_id
from shiny.types import SilentException

from trajectory_review.app.feed import Reviews, acting
from trajectory_review.listing.urls import parse_exchange
from trajectory_review.model.trajectory import Conversation
from trajectory_review.reviews.log import AUTHENTICATED, Reviewer, ReviewEvent, clean_name

# How the history names the events that carry no text of their own.
EVENT_WORDS = {
    "flag": "flagged",
    "unflag": "unflagged",
    "looks_right": "marked looks right (QA queue)",
    "reopen": "reopened (back in the QA queue)",
}


class Pane(NamedTuple):
    """What the review pane's parts share: its inputs, the review state, the open
    conversation, the answer reviewed (None: the conversation) and who reviews."""

    input: Inputs
    reviews: Reviews
    conversation: Callable[[], Conversation | None]
    exchange: reactive.Value[Any]
    author: Callable[[], Reviewer | None]


@module.ui
def review_ui() -> TagList:
    return TagList(
        tags.h3("Review", class_="tr-pane-title"),
        ui.output_ui("who"),
        ui.output_ui("target"),
        # Shiny's submit textarea: the text goes with the click (or Ctrl/Cmd+Enter) and the
        # box empties itself, so a note typed fast is never lost to an input debounce.
        ui.input_submit_textarea(
            "note",
            placeholder="Add a note… (Ctrl+Enter)",
            rows=3,
            width="100%",
            button=ui.input_task_button(
                "add_note", "Add note", class_="btn-sm btn-primary", label_busy="Saving…"
            ),
            toolbar=ui.input_action_button(
                "toggle_flag", "Flag", class_="btn-sm btn-outline-danger"
            ),
        ),
        ui.output_ui("history"),
        tags.hr(),
        ui.download_link("download", "Export review events (CSV)"),
    )


@module.server
def review_server(
    input: Inputs,
    output: Outputs,
    session: Session,
    reviews: Reviews,
    conversation: Callable[[], Conversation | None],
    exchange: reactive.Value[Any],
    author: Callable[[], Reviewer | None],  # None while their name is not known
) -> Callable[[int | None], Awaitable[None]]:
    """The review pane, a part per job: who reviews, what (the note box and the flag),
    and the history. Returns the flag toggle (the f key and the transcript's buttons)."""
    who_reviews(input, session, author)
    pane = Pane(input, reviews, conversation, exchange, author)
    review_target(pane)
    review_history(reviews, conversation)
    return notes_and_flags(pane)


def who_reviews(input: Inputs, session: Session, author: Callable[[], Reviewer | None]) -> None:
    """Anonymous access on Posit Connect gives no user: the page asks once and the browser
    keeps the name. Never the server's account name: notes are evidence."""

    @render.ui
    def who() -> Tag | None:
        if author() is not None:
            return None
        return tags.form(
            tags.label("Your name, for your notes and verdicts", for_=resolve_id("name")),
            ui.input_text("name", None, placeholder="Name", width="100%"),
            ui.input_action_button("save_name", "Save", class_="btn-sm btn-primary"),
            class_="tr-who",  # Enter saves without submitting (static/app.js)
        )

    @reactive.effect
    @reactive.event(input.save_name)
    async def _save_name() -> None:
        name = clean_name(input.name())
        if not name:
            ui.notification_show("Write your name first.", type="warning", duration=3)
            return
        await session.send_custom_message("tr-name", {"name": name})  # kept in the browser


def review_target(pane: Pane) -> None:
    """What is reviewed: the conversation or one of its answers (the scope menu), by whom,
    and a line when the review log cannot be used."""
    input, reviews, conversation, exchange, author = pane

    def log_problem() -> Tag | None:
        # A log that cannot be read or written is one line here; reading the traces goes on.
        problem = reviews.log.writable_problem() or reviews.state().error
        return tags.p(problem, class_="tr-log-problem", role="alert") if problem else None

    @render.ui
    def target() -> Tag:
        conv = conversation()
        if conv is None:
            return tags.div(
                log_problem(), tags.p("Select a conversation to review it.", class_="tr-muted")
            )
        return tags.div(log_problem(), *scope_box(conv, exchange(), author()))

    @reactive.effect
    @reactive.event(input.scope)
    def _scope() -> None:
        # only an answer of the open conversation: the select's value comes from the browser
        ev = input.scope()
        val = parse_exchange(ev.get("value") if isinstance(ev, dict) else None) or 0
        conv = conversation()
        if val and (conv is None or all(e.index != val for e in conv.exchanges)):
            return
        if val != (exchange() or 0):
            exchange.set(val or None)


def notes_and_flags(pane: Pane) -> Callable[[int | None], Awaitable[None]]:
    """The note box and the flag, on what review_target says is reviewed."""
    input, reviews, conversation, exchange, author = pane

    @reactive.effect
    @reactive.event(input.note)
    async def _add_note() -> None:
        text = str(input.note() or "").strip()
        if not text:
            ui.notification_show("Write a note first.", type="warning", duration=3)
            return
        cid, ex = _current()
        me = acting(author)
        if me is not None and not await reviews.save(me.event("note", cid, ex, text)):
            # the box emptied itself on submit: the text comes back to be saved again
            ui.update_submit_textarea("note", value=text)

    @reactive.effect
    @reactive.event(input.toggle_flag)
    async def _toggle() -> None:
        await toggle_flag()

    def _open() -> Conversation:
        conv = conversation()
        if conv is None:
            raise SilentException()  # nothing is open: a flag key does nothing
        return conv

    def _current() -> tuple[str, int | None]:
        conv = _open()
        with reactive.isolate():
            ex = exchange()
        req(ex is None or any(e.index == ex for e in conv.exchanges))
        return conv.id, ex

    async def toggle_flag(ex_override: int | None = None) -> None:
        cid, ex = _current()
        if ex_override is not None:
            req(any(e.index == ex_override for e in _open().exchanges))
            ex = ex_override
        with reactive.isolate():
            flagged = reviews.state().flagged(cid, ex) is not None
        me = acting(author)
        if me is not None:
            await reviews.save(me.event("unflag" if flagged else "flag", cid, ex))

    @reactive.effect
    def _flag_label() -> None:
        conv = conversation()
        if conv is None:
            return
        flagged = reviews.state().flagged(conv.id, exchange()) is not None
        ui.update_action_button("toggle_flag", label="Unflag" if flagged else "Flag")

    return toggle_flag


def scope_box(conv: Conversation, ex: int | None, me: Reviewer | None) -> list[Tag]:
    """The scope menu (the conversation, or one of its answers) and who reviews it."""
    choices = {"0": "Whole conversation"} | {
        str(n): f"Answer #{n:,}" for n in scope_choices(len(conv.exchanges), ex)
    }
    # A plain menu that sends the reviewer's choice (static/app.js, on its change), not a
    # Shiny input: a Shiny select drawn anew reports its value back, and two drawn in quick
    # succession (the queue moving on from #2 to #3) reported #2 after the server had
    # moved to #3, which drew the menu at #2 again, whose report moved it back: the
    # selection flipped between the two for as long as one watched, each flip taking
    # the focus. A menu drawn by the server says nothing; only a choice is sent.
    menu = resolve_id("scope")
    return [
        tags.div(
            # named for a screen reader, the name not shown: the choices say it
            tags.label("What to review", for_=menu, class_="visually-hidden"),
            tags.select(
                *[
                    tags.option(label, value=v, selected=v == str(ex or 0) or None)
                    for v, label in choices.items()
                ],
                id=menu,
                class_="form-select",
                data_choose=menu,  # not data-send: a click on it is no choice
                data_shiny_no_bind_input="",  # Shiny binds any select as an input otherwise
            ),  # fmt: skip
            class_="form-group shiny-input-container tr-scope",
            style="width: 100%;",
        ),
        tags.div(
            "Reviewing as ",
            tags.b(me.name) if me else "(no name yet)",
            identity_badge(me.identity) if me else "",
            f" · {f'Answer #{ex}' if ex else 'Whole conversation'}",
            class_="tr-muted tr-reviewing-as",
        ),
    ]


def review_history(reviews: Reviews, conversation: Callable[[], Conversation | None]) -> None:
    """The open conversation's review events, newest first, and the whole log as CSV."""

    @render.ui
    def history() -> Tag:
        conv = conversation()
        if conv is None:
            return tags.div()
        events = [e for e in reviews.state().events if e.conversation_id == conv.id]
        if not events:
            return tags.p("No review events yet.", class_="tr-muted")
        return tags.ul(*[history_item(e) for e in reversed(events)], class_="tr-notes")

    @render.download_link(filename="review-events.csv")
    async def download() -> AsyncIterator[str]:
        # a long log is read and written out off the event loop
        yield await asyncio.to_thread(reviews.log.to_csv)


def history_item(e: ReviewEvent) -> Tag:
    where = f"#{e.exchange}" if e.exchange else "conversation"
    if e.type == "note":
        body: Tag | str = tags.div(e.text, class_="tr-note-text")
    elif e.type == "verdict":
        body = tags.div(
            f"{e.rule}: {'correct flag' if e.verdict == 'correct' else 'false positive'}"
            + (f" — {e.text}" if e.text else ""),
            class_="tr-note-text",
        )
    else:
        body = tags.div(EVENT_WORDS.get(e.type, e.type), class_="tr-note-text tr-note-flag")
    return tags.li(
        tags.div(
            tags.b(e.author),
            identity_badge(e.identity),
            f" · {where} · ",
            tags.time(e.ts[:19].replace("T", " "), datetime=e.ts),
            class_="tr-note-meta",
        ),
        body,
        class_=f"tr-note tr-note-{e.type}",
    )


# Answers the scope menu lists around the current one: a conversation of 20,000 answers
# put 20,000 options in the menu, and the page took seconds to draw it.
SCOPE_CHOICES = 50


def scope_choices(n: int, current: int | None) -> list[int]:
    """The answers the scope menu offers: all of a short conversation; of a long one,
    those around the current answer (the newest when none is open)."""
    if n <= SCOPE_CHOICES:
        return list(range(1, n + 1))
    mid = current if current and 1 <= current <= n else n
    lo = max(1, min(mid - SCOPE_CHOICES // 2, n - SCOPE_CHOICES + 1))
    return list(range(lo, lo + SCOPE_CHOICES))


def identity_badge(identity: str | None) -> Tag | str:
    """How the author is known, beside the name: a login, or a name given."""
    if identity is None:  # an event from a log written before identities were kept
        return ""
    title = (
        "signed in: the server vouches for this name"
        if identity == AUTHENTICATED
        else "a name the reviewer gave; nobody checked it"
    )
    return tags.span(identity, class_=f"tr-identity tr-identity-{identity}", title=title)
