"""Rule quality: the numbers that decide whether the linter may ever enforce."""

from __future__ import annotations

from htmltools import Tag, TagList, tags
from shiny import Inputs, Outputs, Session, module, reactive, render, ui

from trajectory_review.app.feed import Reviews
from trajectory_review.app.watch import watch
from trajectory_review.listing.catalog import Catalog
from trajectory_review.rules.qa import RuleQuality, quality_csv, rule_quality
from trajectory_review.rules.registry import RuleConfig


def quality_table(rows: list[RuleQuality], source: str) -> Tag:
    head = tags.tr(
        *[
            tags.th(h)
            for h in (
                "Rule",
                "Evaluated",
                "Not applicable",
                "Flagged",
                "Would withhold",
                "Reviewed",
                "False positives",
                "False-positive rate",
                "Unreviewed",
            )
        ]
    )
    body = []
    for q in rows:
        rate = (
            tags.span("no reviews yet", class_="tr-rate-none")
            if q.fp_rate is None
            else tags.span(q.rate_text(), class_="tr-rate")
        )
        body.append(
            tags.tr(
                tags.td(tags.code(q.rule)),
                tags.td(q.evaluated),
                tags.td(q.not_applicable),
                tags.td(q.flagged),
                tags.td(q.blocking),
                tags.td(q.reviewed),
                tags.td(q.false_positives),
                tags.td(rate),
                tags.td(q.unreviewed),
                data_rule=q.rule,
            )
        )
    return tags.div(
        tags.div("Reply rules in report mode over every recorded answer", class_="tr-chart-title"),
        tags.div(
            "False-positive rate = false positives / reviewed flags. A rate is shown only "
            "once a flag has a verdict, with the counts behind it; unreviewed flags are "
            f"counted separately. Rules: {source}.",
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
) -> None:
    @watch(lambda: (catalog.judged_generation, catalog.judging), 1.0)
    def judging() -> tuple[int, float | None]:
        return (catalog.judged_generation, catalog.judging)

    @reactive.calc
    def quality() -> list[RuleQuality]:
        judging()
        rows = catalog.rule_rows().to_dict("records")
        return rule_quality(rows, reviews.state())

    @render.ui
    def panel() -> Tag:
        table = quality_table(quality(), rules.source)
        fraction = judging()[1]
        if fraction is None:
            return table
        note = f"Judging answers with the reply rules: {fraction:.0%}. Figures so far."
        return tags.div(tags.p(note, class_="tr-judging", role="status"), table)

    @render.download_link(filename="rule-quality.csv")
    def csv():  # noqa: ANN202
        yield quality_csv(quality())
