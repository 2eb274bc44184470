"""The keyboard: one table (KEYS) that renders the help and tells the page which keys to
send, and the server that decides what each sent key does.

The browser decides nothing: it sends the key (static/app.js, to KEY_INPUT) with what the
page holds that the server cannot see (the text typed in the open answer's verdict notes),
and the server acts on the selection as it is when the key arrives. A key pressed while
the answer just chosen is still on its way therefore acts on that answer, in order, with
no buffer of early keys in the page (`]` then `x` judged the answer still on screen).

Two keys stay in the browser, because they only move the focus and the next keystroke
must land in the box: `/` (the search) and `m` (the note the server marked on the
answer, `data-note-for`). Sent to the server, the letters typed in the round trip would
have been read as keys ("correct" typed after `m` records a verdict).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from htmltools import Tag, tags
from shiny import Inputs, Outputs, Session, module, reactive, ui

from trajectory_review.app.listing import ListView
from trajectory_review.app.navigation import Selection
from trajectory_review.app.queue import Queue
from trajectory_review.app.rules_box import note_id
from trajectory_review.app.transcript_html import PAGE_EXCHANGES
from trajectory_review.listing.filters import Filters
from trajectory_review.listing.queries import Catalog
from trajectory_review.model.trajectory import Conversation
from trajectory_review.reviews.log import TO_DO


@dataclass(frozen=True)
class Key:
    keys: str  # the characters it is pressed as ("" for a line of the help alone)
    shown: str  # as the help writes it
    says: str
    job: str | None = None  # what the server does (JOBS); None: the browser's own


# The keyboard, as the help lists it. A new key is one entry here (and its job below).
KEYS: tuple[Key, ...] = (
    Key("jk", "j / k", "next / previous conversation", "conversation"),
    Key("np", "n / p", "next / previous answer", "answer"),
    Key("][", "] / [", "next / previous row of the list (the QA queue in Flagged)", "row"),
    Key("", "", "in Flagged, a finished answer opens the next one nobody has reviewed"),
    Key("f", "f", "flag the current answer", "flag"),
    Key(
        "cx",
        "c / x",
        "correct flag / false positive on the first flag without a verdict",
        "verdict",
    ),  # fmt: skip
    Key("l", "l", "the answer looks right (done without a verdict on each flag)", "looks_right"),
    # the focus moves, in the browser (static/view.js): see the module's docstring
    Key("m", "m", "a note: for that verdict (Esc, then c or x), else in the review pane"),
    Key("/", "/", "search"),
    Key("?", "?", "this help", "help"),
    Key("", "Esc", "close this help"),
)
# what static/app.js sends (the page's data-keys): every key the server has a job for
SENT = "".join(k.keys for k in KEYS if k.job)
JOBS = ("conversation", "answer", "row", "flag", "verdict", "looks_right", "help")


def help_modal() -> Tag:
    """The help, drawn from KEYS, as a Shiny modal (Esc and a click outside close it)."""
    modal = ui.modal(
        tags.dl(
            *[
                x
                for k in KEYS
                for x in (tags.dt(tags.kbd(k.shown) if k.shown else ""), tags.dd(k.says))
            ]
        ),  # fmt: skip
        title="Keyboard shortcuts",
        easy_close=True,
        footer=None,
        # shown at once: Bootstrap ignores Esc while a modal fades in, and a reviewer who
        # pressed ? and then Esc at once was left with the help open
        fade=False,
        class_="tr-help",
    )
    # the element Bootstrap focuses when it opens, named for a screen reader
    modal.add_class("tr-help-card")
    modal.attrs["aria-label"] = "Keyboard shortcuts"
    return modal


@module.server
def keys_server(
    input: Inputs,
    output: Outputs,
    session: Session,
    catalog: Catalog,
    listing: ListView,
    sel: Selection,
    conversation: Callable[[], Conversation | None],
    drawn: Callable[[str], tuple[int, int] | None],
    flag: Callable[[int | None], Awaitable[None]],
    queue: Queue,
) -> None:
    """What each key does, decided here on the selection as it is when the key arrives."""

    def current() -> tuple[Conversation, int] | None:
        conv = conversation()
        if conv is None or not conv.exchanges:
            return None
        return conv, sel.exchange() or conv.exchanges[0].index

    async def conversation_step(key: str, ev: dict[str, Any]) -> None:
        prev, nxt = catalog.neighbours(listing.filters(), sel.conversation() or "")
        target = nxt if key == "j" else prev
        if target:
            sel.select(target, None, "push", focus=True)

    async def answer_step(key: str, ev: dict[str, Any]) -> None:
        conv = conversation()
        if conv is None or not conv.exchanges:
            return
        total = len(conv.exchanges)
        ex = sel.exchange()
        if ex is None:  # from the answers drawn: the first of them, or the last
            lo, hi = drawn(conv.id) or (max(1, total - PAGE_EXCHANGES + 1), total)
            nxt = lo if key == "n" else hi
        else:
            nxt = ex + (1 if key == "n" else -1)
        sel.select(conv.id, max(1, min(total, nxt)), "push", focus=True)

    async def row_step(key: str, ev: dict[str, Any]) -> None:
        step_row(catalog, listing, sel, 1 if key == "]" else -1)

    async def flag_key(key: str, ev: dict[str, Any]) -> None:
        if sel.conversation():
            await flag(sel.exchange() or None)

    async def verdict_key(key: str, ev: dict[str, Any]) -> None:
        if (at := current()) is None:
            return
        conv, ex = at
        rule = queue.focus_rule(conv, ex)
        if rule is None:
            return
        notes = ev.get("notes") if ev.get("conversation") == conv.id else None
        note = notes.get(note_id(ex, rule)) if isinstance(notes, dict) else None
        verdict = "correct" if key == "c" else "false_positive"
        await queue.judge(conv.id, ex, rule, verdict, note if isinstance(note, str) else "")

    async def looks_right(key: str, ev: dict[str, Any]) -> None:
        if (at := current()) is not None and queue.state(at[0], at[1]) == TO_DO:
            await queue.mark(at[0].id, at[1], "looks_right")

    async def show_help(key: str, ev: dict[str, Any]) -> None:
        ui.modal_show(help_modal())

    done = (conversation_step, answer_step, row_step, flag_key, verdict_key, looks_right,
            show_help)  # fmt: skip
    by_job = dict(zip(JOBS, done, strict=True))
    jobs = {char: by_job[k.job] for k in KEYS if k.job for char in k.keys}

    @reactive.effect
    @reactive.event(input.key)
    async def _key() -> None:
        ev = input.key()
        if not isinstance(ev, dict) or not isinstance(ev.get("key"), str):
            return
        job = jobs.get(ev["key"])
        if job is not None:
            await job(ev["key"], ev)


def step_row(catalog: Catalog, listing: ListView, sel: Selection, delta: int) -> None:
    """`]` / `[`: the next / previous row of the list as shown, opened as a click on it
    opens it; past either end of a page, the next / previous page (the key again then
    takes its first / last row)."""
    with reactive.isolate():
        f = listing.filters()
        cid, ex = sel.conversation(), sel.exchange()
    page = catalog.page(f)
    rows = [_opens(f, r) for _, r in page.rows.iterrows()]
    at = next(
        (i for i, (c, e, per_answer) in enumerate(rows)
         if c == cid and (not per_answer or ex is None or e == ex)),
        None,
    )  # fmt: skip
    index = (0 if delta > 0 else len(rows) - 1) if at is None else at + delta
    if 0 <= index < len(rows):
        c, e, _ = rows[index]
        sel.select(c, e, "push", focus=True)
    elif 1 <= page.page + delta <= page.pages:
        listing.go_to_page(page.page + delta)


def _opens(f: Filters, r: Any) -> tuple[str, int | None, bool]:
    """What a click on a row opens (app/rows.row_html): (conversation, answer, whether the
    row is one answer)."""
    cid = str(r["conversation_id"])
    if f.view in ("answers", "flagged"):
        return cid, int(r["exchange"]), True
    match = r.get("match_exchange") if f.picks_answers else None
    return cid, (int(match) if match is not None and match == match else None), False
