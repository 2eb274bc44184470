"""QA's queue: verdicts on flags (*correct flag* / *false positive*), "looks right" and
"reopen" on an answer, and the move to the next answer nobody has finished.

The browser sends the module's `verdict` and `answer_mark` inputs (app/ids.py: the
buttons under a flagged answer carry them); the keys c / x / l reach the same checks
through `Queue` (app/keys.py).
What it sends is only a request: a verdict is written only on a rule the open answer
fails, as the reply rules judge it here (a crafted message once recorded verdicts on
rules an answer passes, on a rule named `=HYPERLINK(...)` and on answer #999999).
Moving on is decided here, from the log as it is at that moment, so a reviewer is never
sent to an answer a colleague finished a moment ago (their "done" may not have reached
this page yet).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace

from shiny import Inputs, Outputs, Session, module, reactive, ui

from trajectory_review.app.feed import Reviews, acting
from trajectory_review.app.navigation import Selection
from trajectory_review.listing.filters import Filters
from trajectory_review.listing.queries import Catalog
from trajectory_review.listing.queue import failing_rules, next_undone
from trajectory_review.listing.urls import parse_exchange
from trajectory_review.model.trajectory import Conversation
from trajectory_review.reviews.log import VERDICTS, Reviewer
from trajectory_review.rules.judged import judge_answer
from trajectory_review.rules.registry import RuleConfig

MARKS = ("looks_right", "reopen")


@dataclass(frozen=True)
class Queue:
    """What the keys ask of the queue (app/keys.py): the same checks and the same moving
    on as the buttons under an answer."""

    # (conversation, answer, rule, verdict, note), each checked against the open answer
    judge: Callable[[object, int | None, str, str, str], Awaitable[None]]
    mark: Callable[[object, int | None, str], Awaitable[None]]  # "looks_right" or "reopen"
    failing: Callable[[Conversation, int], tuple[str, ...]]  # the rules an answer fails
    reviews: Reviews

    def focus_rule(self, conv: Conversation, ex: int) -> str | None:
        """The flag c / x judge: the first the answer fails without a verdict since it
        was last reopened (the first the page draws with its verdict buttons)."""
        judged, _ = self.reviews.state().judged().get((conv.id, ex), (frozenset(), False))
        return next((r for r in self.failing(conv, ex) if r not in judged), None)

    def state(self, conv: Conversation, ex: int) -> str | None:
        """Where a flagged answer stands in the queue (None: not flagged)."""
        failing = self.failing(conv, ex)
        return self.reviews.state().answer_state((conv.id, ex), failing) if failing else None


@module.server
def queue_server(
    input: Inputs,
    output: Outputs,
    session: Session,
    catalog: Catalog,
    reviews: Reviews,
    conversation: Callable[[], Conversation | None],
    user: Callable[[], Reviewer | None],
    filters: Callable[[], Filters],
    sel: Selection,
    rules: RuleConfig,
) -> Queue:
    def failing(conv: Conversation, n: int) -> tuple[str, ...]:
        ex = next((e for e in conv.exchanges if e.index == n), None)
        return tuple(judge_answer(ex, rules).failed) if ex is not None else ()

    def _target(cid: object, n: int | None) -> tuple[str, int, Reviewer, tuple[str, ...]] | None:
        """The open answer the request names, who acts, and the rules the answer fails;
        None (with a line saying why) for anything else."""
        conv = conversation()
        ex = next((e for e in conv.exchanges if e.index == n), None) if conv else None
        # The request names its conversation: a button of the transcript still on screen
        # while the next answer loads must not judge that answer's same-numbered flag.
        if conv is None or ex is None or not ex.complete or cid != conv.id:
            ui.notification_show("Not saved: no such answer is open.", type="warning")
            return None
        if (who := acting(user)) is None:
            return None
        return conv.id, ex.index, who, failing(conv, ex.index)

    async def judge(asked: object, n: int | None, rule: str, verdict: str, note: str) -> None:
        if verdict not in VERDICTS or (t := _target(asked, n)) is None:
            return
        cid, ex, who, fails = t
        if rule not in fails:
            ui.notification_show(f"Not saved: answer #{ex} has no such flag.", type="warning")
            return
        event = who.event("verdict", cid, ex, note, rule=rule, verdict=verdict)
        if await reviews.save(event):
            advance(catalog, reviews, filters, sel, (cid, ex))

    async def mark(asked: object, n: int | None, which: str) -> None:
        if which not in MARKS or (t := _target(asked, n)) is None:
            return
        cid, ex, who, fails = t
        if not fails:  # only a flagged answer has a place in the queue
            ui.notification_show(f"Not saved: answer #{ex} is not flagged.", type="warning")
            return
        if await reviews.save(who.event(which, cid, ex)) and which == "looks_right":
            advance(catalog, reviews, filters, sel, (cid, ex))

    @reactive.effect
    @reactive.event(input.verdict)
    async def _verdict() -> None:
        ev = input.verdict() or {}
        if isinstance(ev.get("rule"), str) and isinstance(ev.get("verdict"), str):
            n = parse_exchange(ev.get("exchange"))
            await judge(ev.get("conversation"), n, ev["rule"], ev["verdict"],
                        str(ev.get("note") or ""))  # fmt: skip

    @reactive.effect
    @reactive.event(input.answer_mark)
    async def _mark() -> None:
        ev = input.answer_mark() or {}
        if isinstance(ev.get("mark"), str):
            await mark(ev.get("conversation"), parse_exchange(ev.get("exchange")), ev["mark"])

    return Queue(judge, mark, failing, reviews)


def advance(
    catalog: Catalog,
    reviews: Reviews,
    filters: Callable[[], Filters],
    sel: Selection,
    answer: tuple[str, int],
) -> None:
    """In the Flagged view, once the answer is done: open the next one not done."""
    with reactive.isolate():
        f = filters()
    if f.view != "flagged":
        return
    state = reviews.log.state()  # now, not as this page last polled it
    done = state.done_answers(failing_rules(catalog, state.judged()))
    if answer not in done:
        return  # a flag of this answer still waits for its verdict
    nxt = next_undone(catalog, replace(f, done=done), answer)
    if nxt is None:
        ui.notification_show("The queue is done: every answer here is reviewed.")
        return
    sel.select(nxt[0], nxt[1], "push", focus=True)
