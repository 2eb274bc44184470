"""Trust over time: shares of A / B / C / no claim per week or day, with the counts."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
from htmltools import Tag, TagList, tags
from shiny import Inputs, Outputs, Session, module, render, ui

from trajectory_review.app.catalog_feed import CatalogFeed
from trajectory_review.app.labels import reading_note
from trajectory_review.listing.filters import Filters
from trajectory_review.listing.queries import Catalog
from trajectory_review.model import provenance


# Long on purpose: axes, bars, labels and legend in one coordinate system, drawn together.
def trust_chart(frame: pd.DataFrame, grain: str) -> Tag:
    """The stacked bars as SVG."""
    if frame.empty:
        return tags.p("No answers match the filters.", class_="tr-muted")
    pivot = frame.pivot_table(
        index="period", columns="tag", values="n", aggfunc="sum", fill_value=0
    )
    keys = list(provenance.FILTER_KEYS)
    for k in keys:
        if k not in pivot.columns:
            pivot[k] = 0
    pivot = pivot[keys]
    width, height, pad = 720, 180, 28
    n = len(pivot)
    # Every bar inside the drawing area, however many periods: the step shrinks with n
    # (a minimum bar width once pushed ~100 days of bars past the right edge); the gap
    # goes first when bars get thin.
    step = (width - pad) / max(n, 1)
    bar_w = step - min(3.0, step * 0.2)
    bars = []
    for i, (period, row) in enumerate(pivot.iterrows()):
        total = int(row.sum())
        y = float(height)
        x = pad + i * step
        for k in keys:
            if not total or not row[k]:
                continue
            h = height * row[k] / total
            y -= h
            d = provenance.display_for_key(k)
            bars.append(
                Tag(
                    "rect",
                    Tag(
                        "title",
                        f"{period:%Y-%m-%d}: {d.label} {int(row[k])} of {total} "
                        f"({row[k] / total:.0%})",
                    ),
                    x=f"{x:.1f}",
                    y=f"{y:.1f}",
                    width=f"{bar_w:.1f}",
                    height=f"{h:.1f}",
                    class_=f"tr-bar tr-fill-{d.pill_class}",
                )
            )
    axis = [
        Tag("text", "100%", x="0", y="10", class_="tr-axis"),
        Tag("text", "0%", x="8", y=str(height), class_="tr-axis"),
        *[
            Tag(
                "text",
                f"{p:%b %d}",
                x=f"{pad + i * step:.1f}",
                y=str(height + 14),
                class_="tr-axis-x",
            )
            for i, p in enumerate(pivot.index)
            if n <= 16 or i % max(1, n // 8) == 0
        ],
    ]
    svg = Tag(
        "svg",
        *axis,
        *bars,
        viewBox=f"0 0 {width} {height + 18}",
        role="img",
        aria_label=f"Share of trust levels per {grain}",
        class_="tr-chart",
    )
    legend = tags.div(
        *[
            tags.span(
                tags.span(class_=f"tr-dot tr-dot-{d.pill_class}"), d.label, class_="tr-legend-item"
            )
            for d in map(provenance.display_for_key, keys)
        ],
        class_="tr-legend",
    )
    head = tags.tr(
        tags.th(grain.capitalize()),
        *[tags.th(provenance.display_for_key(k).label) for k in keys],
        tags.th("Total"),
    )
    body = [
        tags.tr(
            tags.td(f"{p:%Y-%m-%d}"), *[tags.td(int(r[k])) for k in keys], tags.td(int(r.sum()))
        )
        for p, r in pivot.iterrows()
    ]
    totals = pivot.sum()
    foot = tags.tr(
        tags.th("All"), *[tags.th(int(totals[k])) for k in keys], tags.th(int(totals.sum()))
    )
    total = int(pivot.values.sum())
    return tags.div(
        tags.div(f"Trust level of {total:,} answers, share per {grain}", class_="tr-chart-title"),
        tags.div(
            "Tags as the assistant recorded them; the filters on the left apply "
            "(except trust level).",
            class_="tr-chart-note",
        ),
        legend,
        svg,
        tags.details(
            tags.summary("Counts behind the chart"),
            tags.table(
                tags.thead(head),
                tags.tbody(*body),
                tags.tfoot(foot),
                class_="table table-sm tr-table",
            ),
        ),
        class_="tr-chart-wrap",
    )


@module.ui
def trend_ui() -> TagList:
    return TagList(
        ui.input_radio_buttons("grain", None, {"week": "Per week", "day": "Per day"}, inline=True),
        ui.output_ui("chart"),
    )


@module.server
def trend_server(
    input: Inputs,
    output: Outputs,
    session: Session,
    catalog: Catalog,
    filters: Callable[[], Filters],
    feed: CatalogFeed,
) -> None:
    @render.ui
    def chart() -> Tag:
        grain = input.grain() or "week"
        # drawn again as conversations are read into the list (Catalog.fill), saying so
        feed.judged()
        reading = feed.replaying()
        drawn = trust_chart(catalog.trust_over_time(filters(), grain), grain)
        if reading is None:
            return drawn
        return tags.div(reading_note(reading, "The chart so far."), drawn)
