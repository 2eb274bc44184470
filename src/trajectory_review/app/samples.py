"""QA by sample: draw a random sample of the current list's answers (flags to judge, or
answers no rule flagged to spot-check), work it answer by answer with "k of N", and
settle the flags reviewers disagree on.

A sample is one review-log event holding its members (rules/evidence.draw, seeded), so
every reviewer on the team works the same answers and a reload keeps them. The bar above
the transcript follows the sample being worked: where it stands, the next answer, and
for an unflagged answer the spot check itself. What the browser sends (a spot check, a
settling verdict) is checked here against the answer it names.
"""

from __future__ import annotations

import math
import secrets
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

from htmltools import Tag, TagList, tags
from shiny import Inputs, Outputs, Session, module, reactive, render, ui

from trajectory_review.app.actions import sends
from trajectory_review.app.disputes import disagreements_html, settle_refused
from trajectory_review.app.feed import Reviews, acting
from trajectory_review.app.ids import MAIN_TABS, SAMPLE_NEXT, SAMPLE_SPOT, SAMPLE_WORK
from trajectory_review.app.navigation import Selection
from trajectory_review.listing.filters import Filters
from trajectory_review.listing.queries import Catalog
from trajectory_review.listing.queue import failing_rules
from trajectory_review.listing.samples import (
    next_member,
    sample_candidates,
    sample_progress,
    sample_query,
)
from trajectory_review.listing.urls import parse_exchange
from trajectory_review.model.trajectory import Conversation
from trajectory_review.reviews.log import (
    MAX_SAMPLE,
    Reviewer,
    ReviewEvent,
)
from trajectory_review.rules.evidence import draw
from trajectory_review.rules.registry import RULES

KINDS = {"flagged": "flags to judge", "unflagged": "answers no rule flagged (spot check)"}
STRATA = {"none": "no strata", "rule": "by rule", "tag": "by trust tag"}
AnswerKey = tuple[str, int]


@module.ui
def samples_ui() -> TagList:
    return TagList(
        tags.div(
            tags.div("Review by sample", class_="tr-chart-title"),
            tags.div(
                "A random sample of the current list, stored in the review log so every "
                "reviewer works the same answers. Estimates above come from samples; "
                "verdicts on answers opened by choice are counted apart.",
                class_="tr-chart-note",
            ),
            tags.div(
                ui.input_select("kind", "Sample", KINDS, width="260px"),
                ui.input_numeric("size", "Answers", 20, min=1, max=MAX_SAMPLE, width="110px"),
                # empty until a reviewer types a share (shiny's own "no value yet")
                ui.input_numeric(
                    "percent",
                    "or % of the list",
                    cast(float, None),
                    min=1,
                    max=100,
                    width="130px",
                ),  # fmt: skip
                ui.input_select("stratify", "Strata", STRATA, width="150px"),
                ui.input_action_button("draw", "Draw sample", class_="btn-sm btn-primary"),
                class_="tr-sample-form",
            ),
            ui.output_ui("listed"),
            class_="tr-chart-wrap",
        ),
        ui.output_ui("disputes"),
    )


@module.ui
def sample_bar_ui() -> Tag:
    """The bar above the transcript while a sample is worked."""
    return ui.output_ui("bar")


@dataclass(frozen=True)
class SampleDesk:
    """What every part of the samples' work shares: the catalog, the review state, who
    acts, the list and the selection, and the sample being worked."""

    catalog: Catalog
    reviews: Reviews
    user: Callable[[], Reviewer | None]
    filters: Callable[[], Filters]
    sel: Selection
    working: reactive.Value[str | None]
    session: Session

    def open_answer(self, cid: str, ex: int) -> None:
        """The transcript, at this answer (drawn and worked from the Rule quality tab)."""
        ui.update_navset(MAIN_TABS, selected="transcript", session=self.session.root_scope())
        self.sel.select(cid, ex, "push")


@module.server
def samples_server(
    input: Inputs,
    output: Outputs,
    session: Session,
    catalog: Catalog,
    reviews: Reviews,
    user: Callable[[], Reviewer | None],
    filters: Callable[[], Filters],
    sel: Selection,
    conversation: Callable[[], Conversation | None],
) -> None:
    """Samples, a part per job: drawing one, working through it (the bar, next, spot
    checks), the samples drawn, and settling the disagreements."""
    desk = SampleDesk(
        catalog, reviews, user, filters, sel, reactive.value(None, name="working"), session
    )
    drawing(input, desk)
    working_through(input, desk)
    spot_checking(input, desk, conversation)
    settling(input, desk)


def drawing(input: Inputs, desk: SampleDesk) -> None:
    """A sample drawn from the list as filtered, and the samples drawn so far."""
    catalog, reviews, filters = desk.catalog, desk.reviews, desk.filters

    @reactive.effect
    @reactive.event(input.draw)
    async def _draw() -> None:
        who = acting(desk.user)
        if who is None:
            return
        kind = input.kind() if input.kind() in KINDS else "flagged"
        stratify = input.stratify() if input.stratify() in STRATA else "none"
        candidates = sample_candidates(catalog, filters(), kind, stratify)
        if not candidates:
            ui.notification_show("No answer of the current list fits this sample.")
            return
        size = sample_size(input.size(), input.percent(), len(candidates))
        seed = secrets.randbelow(2**31)
        members = draw(candidates, size, seed)
        sample_id = uuid.uuid4().hex[:8]
        event = ReviewEvent(
            "sample", "*", who.name, sample=sample_id, members=tuple(members),
            spec={"kind": kind, "size": size, "seed": seed, "stratify": stratify,
                  "query": sample_query(filters())},
            identity=who.identity,
        )  # fmt: skip
        if await reviews.save(event):
            desk.working.set(sample_id)
            desk.open_answer(members[0][0], members[0][1])

    @render.ui
    def listed() -> Tag:
        state = reviews.state()
        rows = []
        for s in reversed(state.samples()[-10:]):
            done, total = sample_progress(s, state, catalog)
            spec = s.spec or {}
            rows.append(
                tags.li(
                    tags.b(f"Sample {s.sample}"),
                    f" · {KINDS.get(spec.get('kind', ''), '')}"
                    f" · {STRATA.get(spec.get('stratify', 'none'), '')}"
                    f" · drawn by {s.author} · ",
                    tags.span(f"{done:,} of {total:,} reviewed", class_="tr-sample-progress"),
                    tags.button(
                        "Work this sample" if done < total else "Done",
                        class_="btn btn-sm btn-outline-primary",
                        disabled=None if done < total else "",
                        **sends(SAMPLE_WORK, {"sample": s.sample}),
                    ),
                    data_sample=s.sample or "",
                )
            )
        return (
            tags.ul(*rows, class_="tr-samples")
            if rows
            else tags.p("No sample drawn yet.", class_="tr-muted")
        )


def working_through(input: Inputs, desk: SampleDesk) -> None:
    """A sample worked answer by answer: opened, moved through, its bar."""
    catalog, reviews, sel, working = desk.catalog, desk.reviews, desk.sel, desk.working

    @reactive.effect
    @reactive.event(input.work)
    def _work() -> None:
        sample_id = str((input.work() or {}).get("sample") or "")
        s = reviews.state().sample(sample_id)
        if s is None:
            return
        working.set(sample_id)
        nxt = next_member(s, reviews.state(), catalog, None)
        if nxt is not None:
            desk.open_answer(*nxt)

    @reactive.effect
    @reactive.event(input.next)
    def _next() -> None:
        s = reviews.state().sample(working() or "")
        if s is None:
            return
        with reactive.isolate():
            here = (sel.conversation(), sel.exchange())
        nxt = next_member(s, reviews.log.state(), catalog, here)
        if nxt is None:
            ui.notification_show("Every answer of this sample is reviewed.")
            return
        sel.select(nxt[0], nxt[1], "push", focus=True)

    @render.ui
    def bar() -> Tag | None:
        sample_id = working()
        state = reviews.state()
        s = state.sample(sample_id or "")
        if s is None:
            return None
        done, total = sample_progress(s, state, catalog)
        here = (sel.conversation(), sel.exchange())
        member = next((m for m in s.members or () if (m[0], m[1]) == here), None)
        spot: Tag | str = ""
        if member is not None and (s.spec or {}).get("kind") == "unflagged":
            spot = spot_box(here[1] or 0, state.spot_checks().get((here[0], here[1] or 0)))
        return tags.div(
            tags.span(f"Sample {s.sample}", class_="tr-sample-name"),
            tags.span(f"{done:,} of {total:,} reviewed", class_="tr-sample-progress"),
            tags.span(
                "this answer is in it" if member else "this answer is not in it", class_="tr-muted"
            ),  # fmt: skip
            spot,
            tags.button(
                "Next in sample",
                class_="btn btn-sm btn-primary",
                **sends(SAMPLE_NEXT, {}),
            ),  # fmt: skip
            class_="tr-sample-bar",
            role="status",
        )


def spot_checking(
    input: Inputs, desk: SampleDesk, conversation: Callable[[], Conversation | None]
) -> None:
    """A spot check of an answer of an "unflagged" sample: it looks right, or a rule
    missed it (which one)."""
    catalog, reviews = desk.catalog, desk.reviews

    @reactive.effect
    @reactive.event(input.spot)
    async def _spot() -> None:
        ev = input.spot() or {}
        conv = conversation()
        n = parse_exchange(ev.get("exchange"))
        ex = next((e for e in conv.exchanges if e.index == n), None) if conv else None
        verdict, rule = ev.get("verdict"), ev.get("rule")
        if (
            conv is None
            or ex is None
            or not ex.complete
            or verdict not in ("looks_right", "missed")
        ):
            ui.notification_show("Not saved: no such answer is open.", type="warning")
            return
        if failing_rules(catalog, [(conv.id, ex.index)]).get((conv.id, ex.index)):
            ui.notification_show("Not saved: a rule flags this answer.", type="warning")
            return
        if verdict == "missed" and rule not in (*RULES, "other"):
            ui.notification_show("Not saved: name the rule.", type="warning")
            return
        who = acting(desk.user)
        if who is not None:
            await reviews.save(ReviewEvent("spot", conv.id, who.name, ex.index,
                                     verdict=verdict, rule=rule if verdict == "missed" else None,
                                     identity=who.identity))  # fmt: skip


def settling(input: Inputs, desk: SampleDesk) -> None:
    """The disagreements between reviewers, and a lead settling them."""
    reviews, user = desk.reviews, desk.user

    @reactive.effect
    @reactive.event(input.settle)
    async def _settle() -> None:
        ev = input.settle() or {}
        who = acting(user)
        why = settle_refused(reviews.state(), who, ev)
        if why or who is None:
            ui.notification_show(f"Not saved: {why}", type="warning")
            return
        cid, ex = str(ev["conversation"]), parse_exchange(ev["exchange"]) or 0
        rule, verdict = str(ev["rule"]), str(ev["verdict"])
        await reviews.save(ReviewEvent("verdict", cid, who.name, ex, "settled", rule, verdict,
                                 identity=who.identity, settles=True))  # fmt: skip

    @render.ui
    def disputes() -> Tag:
        return disagreements_html(reviews.state(), user())


SPOT_VERDICTS = ("looks_right", "missed")  # a spot check of an answer no rule flags
DEFAULT_SIZE = 20


def sample_size(size: object, percent: object, available: int) -> int:
    """How many answers to draw: the percent of the list when one is given, else the
    count. Whatever the browser sends: a value that is not a finite number is ignored
    (NaN or 1e308 once ended the session that sent it), the percent is at most 100, and
    the size is 1 to the list's length (at most MAX_SAMPLE)."""

    def finite(v: object) -> float | None:
        if isinstance(v, bool) or not isinstance(v, int | float):
            return None
        try:
            f = float(v)
        except OverflowError:  # an integer of 400 digits
            return None
        return f if math.isfinite(f) else None

    share = finite(percent)
    if share is not None and share > 0:
        n = round(available * min(share, 100.0) / 100)
    else:
        n = int(min(finite(size) or DEFAULT_SIZE, float(MAX_SAMPLE)))
    return max(1, min(n, MAX_SAMPLE, available))


def spot_box(exchange: int, checked: ReviewEvent | None) -> Tag:
    said = ""
    if checked is not None:
        said = "looks right" if checked.verdict == "looks_right" else f"missed: {checked.rule}"
    return tags.span(
        tags.span(f"Spot check #{exchange}: ", class_="tr-muted"),
        tags.button("Looks right", class_="btn btn-sm btn-outline-success tr-spot",
                    **sends(SAMPLE_SPOT, {"exchange": exchange, "verdict": "looks_right"})),
        *[
            tags.button(f"Missed: {rule}", class_="btn btn-sm btn-outline-danger tr-spot",
                        data_rule=rule,
                        **sends(SAMPLE_SPOT, {"exchange": exchange, "verdict": "missed",
                                                 "rule": rule}))
            for rule in (*RULES, "other")
        ],
        tags.span(f" ({said})", class_="tr-spot-said") if said else "",
        class_="tr-spot-box",
    )  # fmt: skip
