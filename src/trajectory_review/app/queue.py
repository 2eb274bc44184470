"""QA's queue: verdicts on flags (*correct flag* / *false positive*), "looks right" and
"reopen" on an answer, and the move to the next answer nobody has finished.

The browser sends the module's `verdict` and `answer_mark` inputs (app/ids.py: the
buttons under a flagged answer carry them, and static/app.js clicks them for c / x / l).
What it sends is only a request: a verdict is written only on a rule the open answer
fails, as the reply rules judge it here (a crafted message once recorded verdicts on
rules an answer passes, on a rule named `=HYPERLINK(...)` and on answer #999999).
Moving on is decided here, from the log as it is at that moment, so a reviewer is never
sent to an answer a colleague finished a moment ago (their "done" may not have reached
this page yet).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from shiny import Inputs, Outputs, Session, module, reactive, ui

from trajectory_review.app.feed import Reviews, acting
from trajectory_review.app.navigation import Selection
from trajectory_review.listing.filters import Filters
from trajectory_review.listing.queries import Catalog
from trajectory_review.listing.queue import failing_rules, next_undone
from trajectory_review.listing.urls import parse_exchange
from trajectory_review.reviews.log import VERDICTS, Reviewer
from trajectory_review.rules.qa import flagged_rule_names
from trajectory_review.rules.registry import RuleConfig

MARKS = ("looks_right", "reopen")


@module.server
def queue_server(
    input: Inputs,
    output: Outputs,
    session: Session,
    catalog: Catalog,
    reviews: Reviews,
    conversation: Callable[..., Any],  # the open Conversation, or None
    user: Callable[[], Reviewer | None],
    filters: Callable[[], Filters],
    sel: Selection,
    rules: RuleConfig,
) -> None:
    def _target(ev: dict[str, Any]) -> tuple[str, int, Reviewer, tuple[str, ...]] | None:
        """The open answer the event names, who acts, and the rules the answer fails;
        None (with a line saying why) for anything else."""
        conv = conversation()
        n = parse_exchange(ev.get("exchange"))
        ex = next((e for e in conv.exchanges if e.index == n), None) if conv else None
        # The event names its conversation: a button of the transcript still on screen
        # while the next answer loads must not judge that answer's same-numbered flag.
        if conv is None or ex is None or not ex.complete or ev.get("conversation") != conv.id:
            ui.notification_show("Not saved: no such answer is open.", type="warning")
            return None
        if (who := acting(user)) is None:
            return None
        return conv.id, ex.index, who, tuple(flagged_rule_names(ex, rules))

    @reactive.effect
    @reactive.event(input.verdict)
    async def _verdict() -> None:
        ev = input.verdict() or {}
        if ev.get("verdict") not in VERDICTS or not isinstance(ev.get("rule"), str):
            return
        if (t := _target(ev)) is None:
            return
        cid, ex, who, failing = t
        if ev["rule"] not in failing:
            ui.notification_show(f"Not saved: answer #{ex} has no such flag.", type="warning")
            return
        note = str(ev.get("note") or "")
        event = who.event("verdict", cid, ex, note, rule=ev["rule"], verdict=ev["verdict"])
        if await reviews.save(event):
            _advance(cid, ex)

    @reactive.effect
    @reactive.event(input.answer_mark)
    async def _mark() -> None:
        ev = input.answer_mark() or {}
        mark = ev.get("mark")
        if mark not in MARKS or (t := _target(ev)) is None:
            return
        cid, ex, who, failing = t
        if not failing:  # only a flagged answer has a place in the queue
            ui.notification_show(f"Not saved: answer #{ex} is not flagged.", type="warning")
            return
        if await reviews.save(who.event(mark, cid, ex)) and mark == "looks_right":
            _advance(cid, ex)

    def _advance(cid: str, ex: int) -> None:
        """In the Flagged view, once the answer is done: open the next one not done."""
        with reactive.isolate():
            f = filters()
        if f.view != "flagged":
            return
        state = reviews.log.state()  # now, not as this page last polled it
        done = state.done_answers(failing_rules(catalog, state.judged()))
        if (cid, ex) not in done:
            return  # a flag of this answer still waits for its verdict
        nxt = next_undone(catalog, replace(f, done=done), (cid, ex))
        if nxt is None:
            ui.notification_show("The queue is done: every answer here is reviewed.")
            return
        sel.select(nxt[0], nxt[1], "push")
