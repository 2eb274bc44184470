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
from dataclasses import replace
from typing import Any, cast

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
from trajectory_review.listing.urls import parse_exchange
from trajectory_review.reviews.log import (
    MAX_SAMPLE,
    Reviewer,
    ReviewEvent,
    ReviewState,
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


# Long on purpose: a module server: the closure its outputs and effects share (each short).
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
    conversation: Callable[..., Any],  # the open Conversation, or None
) -> None:
    # the sample being worked
    working: reactive.Value[str | None] = reactive.value(None, name="working")

    def open_answer(cid: str, ex: int) -> None:
        """The transcript, at this answer (drawn and worked from the Rule quality tab)."""
        ui.update_navset(MAIN_TABS, selected="transcript", session=session.root_scope())
        sel.select(cid, ex, "push")

    def me() -> Reviewer | None:
        return acting(user)

    @reactive.effect
    @reactive.event(input.draw)
    async def _draw() -> None:
        who = me()
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
                  "query": _query(filters())},
            identity=who.identity,
        )  # fmt: skip
        if await reviews.save(event):
            working.set(sample_id)
            first = members[0]
            open_answer(first[0], first[1])

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
            open_answer(*nxt)

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
        sel.select(nxt[0], nxt[1], "push")

    @reactive.effect
    @reactive.event(input.spot)
    async def _spot() -> None:
        ev = input.spot() or {}
        conv = conversation()
        n = parse_exchange(ev.get("exchange"))
        ex = next((e for e in conv.exchanges if e.index == n), None) if conv else None
        verdict, rule = ev.get("verdict"), ev.get("rule")
        if ex is None or not ex.complete or verdict not in ("looks_right", "missed"):
            ui.notification_show("Not saved: no such answer is open.", type="warning")
            return
        if failing_rules(catalog, [(conv.id, ex.index)]).get((conv.id, ex.index)):
            ui.notification_show("Not saved: a rule flags this answer.", type="warning")
            return
        if verdict == "missed" and rule not in (*RULES, "other"):
            ui.notification_show("Not saved: name the rule.", type="warning")
            return
        who = me()
        if who is not None:
            await reviews.save(ReviewEvent("spot", conv.id, who.name, ex.index,
                                     verdict=verdict, rule=rule if verdict == "missed" else None,
                                     identity=who.identity))  # fmt: skip

    @reactive.effect
    @reactive.event(input.settle)
    async def _settle() -> None:
        ev = input.settle() or {}
        who = me()
        why = settle_refused(reviews.state(), who, ev)
        if why or who is None:
            ui.notification_show(f"Not saved: {why}", type="warning")
            return
        cid, ex = str(ev["conversation"]), parse_exchange(ev["exchange"]) or 0
        rule, verdict = str(ev["rule"]), str(ev["verdict"])
        await reviews.save(ReviewEvent("verdict", cid, who.name, ex, "settled", rule, verdict,
                                 identity=who.identity, settles=True))  # fmt: skip

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

    @render.ui
    def disputes() -> Tag:
        return disagreements_html(reviews.state(), user())

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


def _query(f: Filters) -> str:
    from trajectory_review.listing.urls import link_query

    return link_query(f, None, None, (None, None))[:2000]


def sample_candidates(
    catalog: Catalog, f: Filters, kind: str, stratify: str
) -> list[tuple[str, int, str]]:
    """The answers of the current list a sample is drawn from, each with its stratum: the
    flagged ones, or the judged final answers no rule flagged."""
    rows = catalog.matching_answers(replace(f, view="answers", show_done=True, done=frozenset()))
    judged = {
        (str(c), int(e))
        for c, e in catalog.rule_rows()[["conversation_id", "exchange"]].itertuples(index=False)
    }
    out = []
    for r in rows.itertuples(index=False):
        key = (str(r.conversation_id), int(r.exchange))
        failed = list(r.failed_rules)
        if key not in judged or bool(failed) != (kind == "flagged"):
            continue
        stratum = (failed[0] if failed else "none") if stratify == "rule" else (
            str(r.tag) if stratify == "tag" else "all"
        )  # fmt: skip
        out.append((key[0], key[1], stratum))
    return out


def sample_progress(s: ReviewEvent, state: ReviewState, catalog: Catalog) -> tuple[int, int]:
    members = [(c, e) for c, e, _ in s.members or ()]
    return sum(key in finished(s, state, catalog) for key in members), len(members)


def finished(s: ReviewEvent, state: ReviewState, catalog: Catalog) -> frozenset[AnswerKey]:
    members = [(c, e) for c, e, _ in s.members or ()]
    if (s.spec or {}).get("kind") == "unflagged":
        return frozenset(k for k in state.spot_checks() if k in set(members))
    return state.done_answers(failing_rules(catalog, members))


def next_member(
    s: ReviewEvent, state: ReviewState, catalog: Catalog, after: tuple[Any, ...] | None
) -> AnswerKey | None:
    """The next member nobody has finished, after `after` (round the end)."""
    members = [(c, e) for c, e, _ in s.members or ()]
    done = finished(s, state, catalog)
    start = members.index(after) + 1 if after in members else 0
    for key in members[start:] + members[:start]:
        if key not in done and key != after:
            return key
    return None


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
