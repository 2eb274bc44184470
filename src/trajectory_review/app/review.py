"""The right sidebar: flags and notes per conversation and per exchange, with author and
time, read back from the append-only review log."""

from __future__ import annotations

import asyncio

from htmltools import Tag, TagList, tags
from shiny import Inputs, Session, module, reactive, render, req, ui
from shiny.module import resolve_id

from trajectory_review.listing.urls import parse_exchange
from trajectory_review.reviews.log import (
    ReviewEvent,
    ReviewLog,
    ReviewLogError,
    local_user,
    on_posit_connect,
)


def save_event(log: ReviewLog, event: ReviewEvent) -> bool:
    """The one way the app writes a review event: a log that cannot take it (read-only,
    a directory, a full disk) is one line on the page, never a dropped session."""
    try:
        log.append(event)
    except (ReviewLogError, ValueError) as exc:
        ui.notification_show(f"Not saved: {exc}", type="error", duration=8)
        return False
    return True


@module.ui
def review_ui() -> TagList:
    return TagList(
        tags.h3("Review", class_="tr-pane-title"),
        ui.output_ui("who"),
        ui.output_ui("target"),
        ui.input_text_area("note", None, placeholder="Add a note…", rows=3, width="100%"),
        tags.div(
            # A plain button: app.js sends the textarea's current text with the click, so a
            # note typed fast is never lost to the textarea's input debounce.
            tags.button(
                "Add note",
                type="button",
                id=resolve_id("add_note"),
                class_="btn btn-sm btn-primary tr-add-note",
                data_input=resolve_id("note_submit"),
                data_source=resolve_id("note"),
            ),
            ui.input_action_button("toggle_flag", "Flag", class_="btn-sm btn-outline-danger"),
            class_="tr-pane-actions",
        ),
        ui.output_ui("history"),
        tags.hr(),
        ui.download_link("download", "Export review events (CSV)"),
    )


@module.server
def review_server(
    input,
    output,
    session,
    log: ReviewLog,
    conversation: reactive.Calc,  # noqa: ANN001
    exchange: reactive.Value,
    author: reactive.Calc,  # the reviewer's name, or None while it is not known
    tick: reactive.Value,
):  # noqa: ANN201
    # -- who is reviewing -----------------------------------------------------------------
    # Anonymous access on Posit Connect gives no user: the page asks once and the browser
    # keeps the name. Never the server's account name: notes are evidence.

    @render.ui
    def who() -> Tag | None:
        if author() is not None:
            return None
        return tags.form(
            tags.label("Your name, for your notes and verdicts", for_=resolve_id("name")),
            ui.input_text("name", None, placeholder="Name", width="100%"),
            ui.input_action_button("save_name", "Save", class_="btn-sm btn-primary"),
            class_="tr-who",
            onsubmit="return false",
        )

    @reactive.effect
    @reactive.event(input.save_name)
    async def _save_name() -> None:
        name = " ".join(str(input.name() or "").split())[:80]
        if not name:
            ui.notification_show("Write your name first.", type="warning", duration=3)
            return
        await session.send_custom_message("tr-name", {"name": name})  # kept in the browser

    def log_problem() -> Tag | None:
        # A log that cannot be read or written is one line here; reading the traces goes on.
        problem = log.writable_problem() or log.state().error
        return tags.p(problem, class_="tr-log-problem", role="alert") if problem else None

    @render.ui
    def target() -> Tag:
        conv = conversation()
        if conv is None:
            return tags.div(
                log_problem(), tags.p("Select a conversation to review it.", class_="tr-muted")
            )
        ex = exchange()
        what = f"Answer #{ex}" if ex else "Whole conversation"
        choices = {"0": "Whole conversation"} | {
            str(e.index): f"Answer #{e.index}" for e in conv.exchanges
        }
        return tags.div(
            log_problem(),
            ui.input_select("scope", None, choices, selected=str(ex or 0), width="100%"),
            tags.div(f"Reviewing as {author() or '(no name yet)'} · {what}", class_="tr-muted"),
        )

    @reactive.effect
    @reactive.event(input.scope)
    def _scope() -> None:
        val = parse_exchange(input.scope()) or 0
        if val != (exchange() or 0):
            exchange.set(val or None)

    def _append(event: ReviewEvent) -> None:
        if save_event(log, event):
            tick.set(tick() + 1)

    def _me() -> str | None:
        with reactive.isolate():
            name = author()
        if name is None:
            ui.notification_show("Give your name first (in the review pane).", type="warning")
        return name

    @reactive.effect
    @reactive.event(input.note_submit)
    def _add_note() -> None:
        text = str((input.note_submit() or {}).get("text") or "").strip()
        if not text:
            ui.notification_show("Write a note first.", type="warning", duration=3)
            return
        cid, ex = _current()
        me = _me()
        if me is not None:
            _append(ReviewEvent("note", cid, me, ex, text))
        # app.js already emptied the box when it sent the note: clearing it from here
        # could wipe the next note a fast reviewer has started typing.

    @reactive.effect
    @reactive.event(input.toggle_flag)
    def _toggle() -> None:
        toggle_flag()

    def _current() -> tuple[str, int | None]:
        conv = conversation()
        req(conv is not None)
        with reactive.isolate():
            ex = exchange()
        return conv.id, ex

    def toggle_flag(ex_override: int | None = None) -> None:
        cid, ex = _current()
        if ex_override is not None:
            ex = ex_override
        flagged = log.state().flagged(cid, ex) is not None
        me = _me()
        if me is not None:
            _append(ReviewEvent("unflag" if flagged else "flag", cid, me, ex))

    @reactive.effect
    def _flag_label() -> None:
        tick()
        conv = conversation()
        if conv is None:
            return
        ex = exchange()
        flagged = log.state().flagged(conv.id, ex) is not None
        ui.update_action_button("toggle_flag", label="Unflag" if flagged else "Flag")

    @render.ui
    def history() -> Tag:
        tick()
        conv = conversation()
        if conv is None:
            return tags.div()
        events = [e for e in log.state().events if e.conversation_id == conv.id]
        if not events:
            return tags.p("No review events yet.", class_="tr-muted")
        items = []
        for e in reversed(events):
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
                body = tags.div(
                    "flagged" if e.type == "flag" else "unflagged",
                    class_="tr-note-text tr-note-flag",
                )
            items.append(
                tags.li(
                    tags.div(
                        tags.b(e.author),
                        f" · {where} · ",
                        tags.time(e.ts[:19].replace("T", " "), datetime=e.ts),
                        class_="tr-note-meta",
                    ),
                    body,
                    class_=f"tr-note tr-note-{e.type}",
                )
            )
        return tags.ul(*items, class_="tr-notes")

    @render.download_link(filename="review-events.csv")
    async def download():  # noqa: ANN202
        # a long log is read and written out off the event loop
        yield await asyncio.to_thread(log.to_csv)

    return toggle_flag  # the keyboard handler (f) and the transcript's buttons flag here


def reviewer(input: Inputs, session: Session):  # noqa: ANN201
    """Who is reviewing: Connect's user; else, on Connect, the name the browser gave (None
    until it has); else (a local run) the login name."""

    @reactive.calc
    def user() -> str | None:
        if session.user:
            return str(session.user)
        if not on_posit_connect():
            return local_user()
        if "reviewer_name" not in input:
            return None
        name = input.reviewer_name()
        return " ".join(str(name).split())[:80] or None if name else None

    return user


def review_ticks(log: ReviewLog) -> reactive.Value:
    """One counter for everything that shows review state, bumped when this session or
    any other (process) appends to the log (polled every second on its signature)."""
    tick = reactive.value(0)

    @reactive.poll(log.signature, 1.0)
    def signature() -> tuple[int, int]:
        return log.signature()

    @reactive.effect
    def _changed() -> None:
        signature()
        with reactive.isolate():
            tick.set(tick() + 1)

    return tick


def verdicts(
    input: Inputs,
    log: ReviewLog,
    conversation: reactive.Calc,
    user: reactive.Calc,
    tick: reactive.Value,
) -> None:
    """*Correct flag* / *False positive* under a flagged answer (the `verdict` input)."""

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
        note = str(ev.get("note") or "")
        event = ReviewEvent("verdict", conv.id, user(), ex, note, ev["rule"], ev["verdict"])
        if save_event(log, event):
            tick.set(tick() + 1)
