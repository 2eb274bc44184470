"""What leaves the app from the list: the current list as CSV, and the reviewed answers
among it as the reviewed@1 dataset (the same writer as `export --reviewed`)."""

from __future__ import annotations

import asyncio
import io
from collections.abc import AsyncIterator, Callable

from htmltools import Tag, tags
from shiny import Inputs, Outputs, Session, module, render, ui

from trajectory_review.listing.export import write_reviewed
from trajectory_review.listing.filters import Filters
from trajectory_review.listing.queries import Catalog
from trajectory_review.model.reader import TraceReader
from trajectory_review.model.spans import iso_ns
from trajectory_review.reviews.store import ReviewStore
from trajectory_review.rules.registry import RuleConfig
from trajectory_review.support.cells import csv_text

LIST_COLUMNS = ["conversation_id", "exchange", "answered", "question", "provenance_tag",
                "rejected_citations", "malformed_citations", "cut_off_or_failed", "model",
                "tools", "failed_rules", "would_withhold"]  # fmt: skip


@module.ui
def downloads_ui() -> Tag:
    return tags.div(
        ui.download_link("list_csv", "Current list (CSV)"),
        " · ",
        ui.download_link("reviewed", "Reviewed answers (JSON lines)"),
        class_="tr-downloads",
    )


@module.server
def downloads_server(
    input: Inputs,
    output: Outputs,
    session: Session,
    catalog: Catalog,
    reader: TraceReader,
    reviews: ReviewStore,
    rules: RuleConfig,
    filters: Callable[[], Filters],
) -> None:
    def list_csv_text(f: Filters) -> str:
        catalog.wait_settled()  # a file is whole: not the conversations read so far
        rows = catalog.matching_answers(f)
        return csv_text(
            LIST_COLUMNS,
            (
                [
                    r.conversation_id,
                    int(r.exchange),
                    iso_ns(int(r.answered_ns)),
                    r.question,
                    "" if r.tag == "none" else r.tag,
                    int(r.rejected),
                    int(r.malformed),
                    "yes" if int(r.problem) else "",
                    r.model or "",
                    r.tools,
                    ";".join(r.failed_rules),
                    ";".join(r.blocking_rules),
                ]  # fmt: skip
                for r in rows.itertuples()
            ),
        )

    def reviewed_text(f: Filters) -> str:
        catalog.wait_settled()
        rows = catalog.matching_answers(f)
        only = {(str(c), int(e)) for c, e in zip(rows.conversation_id, rows.exchange, strict=True)}
        out = io.StringIO()
        write_reviewed(reader, reviews.state(), rules, out, only)
        return out.getvalue()

    @render.download_link(filename="trajectory-review-list.csv")
    async def list_csv() -> AsyncIterator[str]:
        yield await asyncio.to_thread(list_csv_text, filters())

    @render.download_link(filename="reviewed-answers.jsonl")
    async def reviewed() -> AsyncIterator[str]:
        yield await asyncio.to_thread(reviewed_text, filters())
