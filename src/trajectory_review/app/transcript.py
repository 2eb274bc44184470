"""The transcript module: which page of which conversation is drawn, the buttons that ask
for more of it, and the whole texts it holds only part of (the HTML is
app/transcript_html.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from htmltools import Tag, tags
from shiny import Inputs, Outputs, Session, module, reactive, render, ui

from trajectory_review.app.feed import Reviews
from trajectory_review.app.transcript_html import (
    PAGE_EXCHANGES,
    conversation_html,
    page_of,
)
from trajectory_review.listing.urls import parse_exchange
from trajectory_review.model.reader import TraceReader
from trajectory_review.replay.project import replay_exchange
from trajectory_review.replay.render import answer_text, format_json
from trajectory_review.rules.registry import RuleConfig
from trajectory_review.rules.whatif import WhatIf


def own_events(
    reviews: Reviews, conversation: reactive.Value[Any]
) -> reactive.Value[tuple[Any, ...]]:
    """The open conversation's review events, changed only when they change: a colleague's
    note elsewhere must not re-render this transcript (open tool cards closed, the scroll
    jumped and a half-typed verdict note was lost)."""
    mine: reactive.Value[tuple[Any, ...]] = reactive.value((), name="mine")

    @reactive.effect
    def _mine() -> None:
        cid = conversation()
        events = tuple(e for e in reviews.state().events if e.conversation_id == cid)
        with reactive.isolate():
            if events != mine.get():
                mine.set(events)

    return mine


@dataclass(frozen=True)
class Shown:
    """Which answers of which conversation the transcript draws: PAGE_EXCHANGES around
    `around` (the newest page when None), widened by what "earlier" and "later" asked."""

    conversation: str | None
    around: int | None = None
    before: int = 0
    after: int = 0


@module.ui
def transcript_ui() -> Tag:
    return ui.output_ui("view")


# Long on purpose: a module server: the closure its outputs and effects share (each short).
@module.server
def transcript_server(
    input: Inputs,
    output: Outputs,
    session: Session,
    reader: TraceReader,
    reviews: Reviews,
    rules: RuleConfig,
    conversation: reactive.Value[Any],
    exchange: reactive.Value[Any],
    events: reactive.Value[Any],
    tried: reactive.Value[WhatIf | None],
) -> Callable[[str], tuple[int, int] | None]:
    """The transcript (TRANSCRIPT_OUTPUT), drawn a page of answers at a time, and the
    texts it holds only part of, whole, on request. Returns which answers of a
    conversation were last drawn (first, last), for n / p (app/keys.py)."""
    shown: reactive.Value[Shown] = reactive.value(Shown(None), name="shown")
    drawn: dict[str, tuple[int, int]] = {}  # conversation -> answers last drawn

    @reactive.effect
    def _follow() -> None:
        # a new conversation, or an answer named outside the page drawn: a new page
        cid, ex = conversation(), exchange()
        with reactive.isolate():
            cur = shown()
        lo, hi = drawn.get(cid or "", (0, -1))
        if cur.conversation != cid or (ex is not None and not lo <= ex <= hi):
            shown.set(Shown(cid, ex))

    @reactive.effect
    @reactive.event(input.more)
    def _more() -> None:
        ev = input.more() or {}
        cur = shown()
        if ev.get("conversation") != cur.conversation:
            return
        if ev.get("side") == "earlier":
            shown.set(replace(cur, before=cur.before + PAGE_EXCHANGES))
        elif ev.get("side") == "later":
            shown.set(replace(cur, after=cur.after + PAGE_EXCHANGES))

    @reactive.effect
    @reactive.event(input.show_all)
    async def _show_all() -> None:
        ev = input.show_all() or {}
        cid = shown().conversation
        n = parse_exchange(ev.get("exchange"))
        if cid is None or n is None or not isinstance(ev.get("part"), str):
            return
        text = await asyncio.to_thread(full_text, reader, cid, n, ev["part"])
        if text is None:
            return
        ui.modal_show(
            ui.modal(
                tags.pre(text, class_="tr-full-text"),
                title=f"Answer #{n:,} · {part_name(ev['part'])} · {len(text):,} characters",
                size="xl",
                easy_close=True,
            )
        )

    @render.ui
    async def view() -> Tag:
        events()
        want = shown()
        cid = want.conversation
        if not cid:
            return tags.div(
                tags.p("Select a conversation on the left, or press j."),
                class_="tr-empty-state",
            )
        # Reading, replaying and judging a conversation runs off the event loop: one huge
        # answer (a 16 MB tool result, an adversarial reply) must not keep every other
        # session waiting for its clicks.
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
            state = reviews.state()  # this conversation's part of it is `events`
        page = page_of(len(conv.exchanges), want.around, want.before, want.after)
        drawn[cid] = page

        candidate = tried()

        def html() -> Tag:
            above = reader.conversation(parent) if parent else None
            return conversation_html(conv, state, rules, above, page, candidate)

        return await asyncio.to_thread(html)

    return drawn.get


def part_name(part: str) -> str:
    """What a `show_all` part is, in words."""
    if part.startswith("tool-") and part[5:].isdigit():
        return f"tool result {int(part[5:]) + 1}"
    return {"question": "the question", "answer": "the answer", "raw": "the raw answer text"}.get(
        part, part
    )


def full_text(reader: TraceReader, cid: str, n: int, part: str) -> str | None:
    """One text of an answer, whole: what `show_all` offers."""
    conv = reader.conversation(cid)
    ex = next((e for e in conv.exchanges if e.index == n), None) if conv else None
    if ex is None:
        return None
    if part == "question":
        return ex.question
    if part == "answer":
        return answer_text(replay_exchange(ex))
    if part == "raw":
        return ex.answer_raw
    if part.startswith("tool-") and part[5:].isascii() and part[5:].isdigit():
        tools = ex.tools()
        i = int(part[5:])
        if i < len(tools):
            t = tools[i]
            return format_json(t.result) if t.answered else "(no result recorded)"
    return None
