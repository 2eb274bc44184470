"""Rule quality: the numbers that decide whether the linter may ever enforce."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from htmltools import Tag, TagList, tags
from shiny import Inputs, Outputs, Session, module, reactive, render, ui

from trajectory_review.app.catalog_feed import CatalogFeed
from trajectory_review.app.feed import Reviews
from trajectory_review.listing.queries import Catalog
from trajectory_review.rules.evidence import Agreement, Estimate, RuleEvidence, rule_evidence
from trajectory_review.rules.qa import RuleQuality, quality_csv, rule_quality
from trajectory_review.rules.registry import RULES, RuleConfig


def estimate(e: Estimate, what: str) -> Tag:
    """A share with its 95% interval and n, or why there is none (never 0)."""
    if not e.n:
        return tags.span("none yet", class_="tr-rate-none", title=f"no {what} yet")
    lo, hi = e.interval or (0.0, 0.0)
    return tags.span(
        f"{e.share:.0%}",
        tags.span(f" [{lo:.0%}–{hi:.0%}]", class_="tr-interval"),
        tags.span(f" n={e.n}", class_="tr-n"),
        title=f"{e.k} of {e.n} {what}; 95% Wilson interval {lo:.1%}–{hi:.1%}",
        class_="tr-rate",
    )


def sub(text: str) -> Tag:
    return tags.span(text, class_="tr-sub")


def agreement_cell(a: Agreement) -> Tag:
    if not a.flags:
        return tags.span("none yet", class_="tr-rate-none", title="no flag judged twice yet")
    kappa = "κ n/a" if a.kappa is None else f"κ {a.kappa:.2f}"
    return tags.span(
        f"{a.agreeing / a.flags:.0%} · {kappa}",
        tags.span(f" n={a.flags}", class_="tr-n"),
        title=f"{a.agreeing} of {a.flags} flags judged alike by every reviewer; Cohen's "
        "kappa over the first two reviewers of each",
        class_="tr-rate",
    )


def quality_table(
    rows: list[RuleQuality], source: str, evidence: dict[str, RuleEvidence] | None = None
) -> Tag:
    evidence = evidence or {}
    head = tags.tr(
        *[
            tags.th(h, title=t) if t else tags.th(h)
            for h, t in (
                ("Rule", ""),
                ("Evaluated", "Answers the rule applied to"),
                ("Flagged", "Answers the rule fails"),
                ("Reviewed", "Flags with a verdict"),
                ("FP rate", "False positives / reviewed flags, over every verdict"),
                ("Precision", "Share of randomly sampled flags judged correct"),
                ("Miss rate", "Share of spot-checked unflagged answers the rule missed"),
                ("FP by choice", "False-positive rate of flags opened by choice, not drawn"),
                ("Agreement", "Flags judged alike by every reviewer; Cohen's kappa"),
            )
        ]
    )
    body = []
    for q in rows:
        # a count with its qualifier under it: thirteen numbers in nine columns, so the
        # table fits the main area beside the list instead of running off the window
        rate = (
            tags.span("no reviews yet", class_="tr-rate-none")
            if q.fp_rate is None
            else tags.span(
                f"{q.fp_rate:.0%}",
                tags.span(f" ({q.false_positives} of {q.reviewed})", class_="tr-n"),
                title=f"{q.false_positives} false positives of {q.reviewed} reviewed flags",
                class_="tr-rate",
            )
        )
        body.append(
            tags.tr(
                tags.td(tags.code(q.rule)),
                tags.td(q.evaluated, sub(f"{q.not_applicable} not applicable")),
                tags.td(q.flagged, sub(f"{q.blocking} would withhold")),
                tags.td(q.reviewed, sub(f"{q.unreviewed} unreviewed")),
                tags.td(rate),
                *(
                    (
                        tags.td(estimate(ev.sampled_precision, "sampled flags judged correct")),
                        tags.td(estimate(ev.miss_rate, "spot-checked answers it missed")),
                        tags.td(estimate(ev.by_choice, "false positives")),
                        tags.td(agreement_cell(ev.agreement)),
                    )
                    if (ev := evidence.get(q.rule)) is not None
                    else ()
                ),
                data_rule=q.rule,
            )
        )
    return tags.div(
        tags.div("Reply rules in report mode over every recorded answer", class_="tr-chart-title"),
        tags.div(
            "FP rate = false positives / reviewed flags, shown once a flag has a verdict, "
            "with the counts behind it. Precision (of flags) and miss rate (of unflagged "
            "answers) come from random samples (Review by sample, below), each with its 95% "
            "interval and n; verdicts on flags opened by choice are not a random draw and "
            f"have a column of their own. Rules: {source}.",
            class_="tr-chart-note",
        ),
        tags.table(
            tags.thead(head), tags.tbody(*body), class_="table table-sm tr-table tr-quality"
        ),
        class_="tr-chart-wrap",
    )


@module.ui
def quality_ui() -> TagList:
    return TagList(
        ui.output_ui("panel"),
        ui.download_link("csv", "Export rule quality (CSV)"),
    )


@module.server
def quality_server(
    input: Inputs,
    output: Outputs,
    session: Session,
    catalog: Catalog,
    reviews: Reviews,
    rules: RuleConfig,
    feed: CatalogFeed,
) -> None:
    def judging() -> tuple[int, float | None]:
        return (feed.judged(), feed.judging())

    @reactive.calc
    def rows() -> list[dict[str, Any]]:
        judging()
        records: list[dict[str, Any]] = catalog.rule_rows().to_dict("records")
        return records

    @reactive.calc
    def quality() -> list[RuleQuality]:
        return rule_quality(rows(), reviews.state())

    @reactive.calc
    def evidence() -> dict[str, RuleEvidence]:
        failing = {(str(r["conversation_id"]), int(r["exchange"])): tuple(r["failed_rules"])
                   for r in rows()}  # fmt: skip
        return rule_evidence(reviews.state(), RULES, failing)

    @render.ui
    def panel() -> Tag:
        table = quality_table(quality(), rules.source, evidence())
        fraction = judging()[1]
        if fraction is None:
            return table
        note = f"Judging answers with the reply rules: {fraction:.0%}. Figures so far."
        return tags.div(tags.p(note, class_="tr-judging", role="status"), table)

    @render.download_link(filename="rule-quality.csv")
    def csv() -> Iterator[str]:
        yield quality_csv(quality())
