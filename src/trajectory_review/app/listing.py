"""The left sidebar: view tabs, filters with counts, and one server-side page of rows."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, date, datetime

from htmltools import Tag, TagList, tags
from shiny import module, reactive, render, ui

from trajectory_review.listing.catalog import Catalog, Filters, Page
from trajectory_review.listing.urls import conversation_href, parse_exchange, parse_link
from trajectory_review.replay import provenance
from trajectory_review.replay.render import icon, pill
from trajectory_review.reviews.log import ReviewLog
from trajectory_review.rules.registry import RULES

VIEW_LABELS = {"conversations": "Conversations", "answers": "Answers", "flagged": "Flagged"}
FLAG_KIND_LABELS = {"collapse": "Would be withheld", "metric": "Metric-only failures"}
REVIEW_CHOICES = {
    "any": "Any",
    "unreviewed": "Unreviewed",
    "flagged": "Flagged",
    "noted": "With notes",
    "reviewed": "Reviewed",
}


def _count_text(n: int | None) -> str:
    return f"({n:,})" if n is not None else ""


def _option_labels(
    counts: dict | None, models: list[str] | None = None, tools: list[str] | None = None
) -> dict[str, dict[str, str]]:
    """The text of each <option> of the selects, counts included."""
    rules = (counts or {}).get("rules")
    review = (counts or {}).get("review")
    by_model = (counts or {}).get("models")
    by_tool = (counts or {}).get("tools")

    def counted(names: list[str], seen: dict | None, anyone: str) -> dict[str, str]:
        opts = {"": anyone}
        for n in names:
            opts[n] = f"{n} {_count_text(seen.get(n, 0))}" if seen is not None else n
        return opts

    rule_opts = {"": "Any rule"}
    for rule in RULES:
        rule_opts[rule] = f"{rule} {_count_text(rules.get(rule, 0))}" if rules is not None else rule
    review_opts = {
        k: (f"{v} {_count_text(review[k])}" if review is not None and k in review else v)
        for k, v in REVIEW_CHOICES.items()
    }
    return {
        "rule": rule_opts,
        "review": review_opts,
        "model": counted(models or sorted(by_model or {}), by_model, "Any model"),
        "tool": counted(tools or sorted(by_tool or {}), by_tool, "Any tool"),
    }


def _counted(text: str, key: str, n: int | None) -> Tag:
    # The count lives in its own span so that an update rewrites the number only and
    # never the input's value: re-sending a checkbox group's choices would race a
    # reviewer's click and could untick what they just ticked.
    return tags.span(text, " ", tags.span(_count_text(n), class_="tr-count", data_tr_count=key))


def _tag_choices(counts: dict[str, int] | None = None) -> dict[str, Tag]:
    out = {}
    for key in provenance.FILTER_KEYS:
        d = provenance.display_for_key(key)
        out[key] = tags.span(
            tags.span(class_=f"tr-dot tr-dot-{d.pill_class}"),
            _counted(d.label, f"tags-{key}", counts.get(key, 0) if counts is not None else None),
        )
    return out


def active_filters(f: Filters, lo: date | None = None, hi: date | None = None) -> list[str]:
    """The filters in force, named as the sidebar names them (shown as chips above the
    list while the filters are folded away)."""
    out = [provenance.display_for_key(t).label for t in f.tags]
    flags = (
        (f.rejected, "rejected citations"),
        (f.malformed, "malformed citations"),
        (f.problem, "cut off or failed"),
    )
    out += [name for on, name in flags if on]
    if f.review != "any":
        out.append(REVIEW_CHOICES[f.review])
    out += [v for v in (f.rule, f.model, f.tool) if v]
    if f.q.strip():
        out.append(f"“{f.q.strip()}”")
    if f.date_from and f.date_from != lo or f.date_to and f.date_to != hi:
        out.append(f"{f.date_from or '…'} – {f.date_to or '…'}")
    return out


def count_labels(counts: dict, models: list[str], tools: list[str]) -> dict:
    """The payload of one counts update: span texts by key, option texts by select."""
    spans = {f"tags-{k}": _count_text(v) for k, v in counts["tags"].items()}
    spans["rejected"] = _count_text(counts["rejected"]["yes"])
    spans["malformed"] = _count_text(counts["malformed"]["yes"])
    spans["problem"] = _count_text(counts["problem"]["yes"])
    return {"spans": spans, "options": _option_labels(counts, models, tools)}


@module.ui
def listing_ui(
    lo: date | None = None,
    hi: date | None = None,
    initial: Filters | None = None,
    counts: dict | None = None,
    models: list[str] | None = None,
    tools: list[str] | None = None,
) -> TagList:
    """The sidebar, its inputs already holding the state a deep link asks for.

    Rendering the link's state into the page (rather than updating inputs after the
    socket opens) means nothing the server sends later can undo a reviewer's first click.
    """
    f = initial or Filters()
    c = counts or {}
    opts = _option_labels(counts, models, tools)
    return TagList(
        ui.input_radio_buttons("view", None, VIEW_LABELS, selected=f.view, inline=True),
        ui.input_text(
            "q",
            None,
            value=f.q,
            placeholder="Search questions and answers  ( / )",
            update_on="blur",
        ),
        ui.accordion(
            ui.accordion_panel(
                "Filters",
                ui.input_checkbox_group(
                    "tags", "Trust level", _tag_choices(c.get("tags")), selected=list(f.tags)
                ),
                ui.input_checkbox(
                    "rejected",
                    _counted(
                        "Has rejected citations", "rejected", c.get("rejected", {}).get("yes")
                    ),
                    value=f.rejected,
                ),
                ui.input_checkbox(
                    "malformed",
                    _counted(
                        "Has malformed citations", "malformed", c.get("malformed", {}).get("yes")
                    ),
                    value=f.malformed,
                ),
                ui.input_checkbox(
                    "problem",
                    _counted("Cut off or failed", "problem", c.get("problem", {}).get("yes")),
                    value=f.problem,
                ),
                ui.panel_conditional(
                    "input.view === 'flagged'",
                    ui.input_radio_buttons(
                        "flag_kind", "Flag kind", FLAG_KIND_LABELS, selected=f.flag_kind
                    ),
                ),
                ui.input_select("rule", "Reply rule", opts["rule"], selected=f.rule),
                ui.input_select("review", "Review state", opts["review"], selected=f.review),
                ui.input_select("model", "Model", opts["model"], selected=f.model),
                ui.input_select("tool", "Tool called", opts["tool"], selected=f.tool),
                ui.input_date_range(
                    "dates",
                    "Date range",
                    start=f.date_from or lo,
                    end=f.date_to or hi,
                    min=lo,
                    max=hi,
                ),
                ui.input_action_link("clear", "Clear filters"),
            ),
            # folded: the list gets the height; the filters in force show as chips
            open=False,
            class_="tr-filters",
        ),
        ui.output_ui("summary"),
        ui.output_ui("rows"),
    )


def filters_from_inputs(input, page: int, review_log: ReviewLog) -> Filters:  # noqa: ANN001
    dates = input.dates() or (None, None)
    return Filters(
        view=input.view() or "conversations",
        tags=tuple(input.tags() or ()),
        rejected=bool(input.rejected()),
        malformed=bool(input.malformed()),
        problem=bool(input.problem()),
        date_from=dates[0],
        date_to=dates[1],
        q=input.q() or "",
        review=input.review() or "any",
        model=input.model() or "",
        tool=input.tool() or "",
        page=page,
        rule=input.rule() or "",
        flag_kind=input.flag_kind() or "collapse",
        review_ids=review_log.state().ids_by_state(),
    )


def _time(ns: int) -> str:
    return datetime.fromtimestamp(ns / 1e9, UTC).strftime("%Y-%m-%d %H:%M")


def _snippet(text: str, n: int = 110) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def row_html(
    r,
    view: str,
    selected: str | None,
    flagged: frozenset[str],  # noqa: ANN001
    noted: frozenset[str],
    jump: bool = False,
) -> Tag:
    """One list row. jump: a conversation row opens at the answer the filters matched."""
    cid = r["conversation_id"]
    ex = int(r["exchange"])
    per_answer = view in ("answers", "flagged")
    target = None
    if not per_answer and jump and "match_exchange" in r and r["match_exchange"] is not None:
        target = int(r["match_exchange"])
    href = conversation_href(cid, ex if per_answer else target)
    marks = []
    if int(r["rejected"]):
        marks.append(
            tags.span(
                icon("audit"),
                f"{int(r['rejected'])} rejected",
                class_="tr-mark tr-mark-rejected",
                title=provenance.review_audit_body(int(r["rejected"])),
            )
        )
    if int(r["malformed"]):
        marks.append(
            tags.span(
                icon("malformed"),
                str(int(r["malformed"])),
                class_="tr-mark tr-mark-malformed",
                title=provenance.malformed_note(int(r["malformed"])),
            )
        )
    if int(r["problem"]):
        marks.append(
            tags.span(
                "cut off or failed",
                class_="tr-mark tr-mark-problem",
                title=str(r["finish"])
                if "finish" in r and r["finish"]
                else "in one of its answers",
            )
        )
    for rule in list(r["failed_rules"]) if "failed_rules" in r else []:
        gate = rule in list(r["blocking_rules"])
        marks.append(
            tags.span(
                rule,
                class_="tr-rule-badge" + (" tr-rule-gate" if gate else ""),
                title=("would withhold the answer" if gate else "fails the metric only"),
            )
        )
    if cid in flagged:
        marks.append(tags.span(icon("flag"), class_="tr-mark tr-mark-flag", title="Flagged"))
    if cid in noted:
        marks.append(tags.span("✎", class_="tr-mark tr-mark-note", title="Has review notes"))
    turns = int(r["n_exchanges"])
    meta = [_time(int(r["time_ns"]))]
    meta.append(
        f"answer {ex} of {turns}" if per_answer else f"{turns} turn{'s' if turns != 1 else ''}"
    )
    if not per_answer and "branches" in r and int(r["branches"] or 0):
        meta.append(f"{int(r['branches'])} branch{'es' if int(r['branches']) > 1 else ''}")
    return tags.a(
        tags.div(_snippet(r["question"]), class_="tr-row-q", title=_snippet(r["question"], 400)),
        tags.div(
            pill(provenance.display(None if r["tag"] == "none" else r["tag"])),
            *marks,
            tags.span(" · ".join(meta), class_="tr-row-meta"),
            class_="tr-row-line",
        ),
        href=href,
        class_="tr-row" + (" tr-row-selected" if cid == selected else ""),
        data_conversation=cid,
        data_exchange=str(ex) if per_answer else None,
        data_open_exchange=str(target) if target else None,
        aria_current="true" if cid == selected else None,
    )


@module.server
def listing_server(
    input,
    output,
    session,
    catalog: Catalog,
    review_log: ReviewLog,  # noqa: ANN001
    selected: reactive.Value,
    review_tick: reactive.Value,
    url_filters: reactive.Value,
) -> reactive.Calc:
    page_no = reactive.value(1)
    pending_page: reactive.Value[tuple[Filters, int] | None] = reactive.value(None)

    @reactive.effect
    @reactive.event(url_filters)
    def _apply_url() -> None:
        """Filters from a deep link or from back/forward (parsed query string).

        On the first load the page was rendered with the link's state already in its
        inputs, so only the list page is set here; back/forward moves the inputs.
        """
        q = dict(url_filters() or {})
        initial = bool(q.pop("_initial", None))
        link = parse_link(q)
        if link.conversation:
            lo_, hi_ = catalog.date_bounds()
            wanted = replace(
                link.filters,
                date_from=link.filters.date_from or lo_,
                date_to=link.filters.date_to or hi_,
            )
            page = catalog.page_of(wanted, link.conversation)
            if not initial:
                pending_page.set((wanted, page))
            page_no.set(page)
        if initial:
            return
        f = link.filters
        lo, hi = catalog.date_bounds()
        ui.update_radio_buttons("view", selected=f.view)
        ui.update_checkbox_group("tags", selected=list(f.tags))
        ui.update_checkbox("rejected", value=f.rejected)
        ui.update_checkbox("malformed", value=f.malformed)
        ui.update_checkbox("problem", value=f.problem)
        ui.update_select("review", selected=f.review)
        ui.update_text("q", value=f.q)
        ui.update_select("rule", selected=f.rule)
        ui.update_select("model", selected=f.model)
        ui.update_select("tool", selected=f.tool)
        ui.update_radio_buttons("flag_kind", selected=f.flag_kind)
        ui.update_date_range("dates", start=f.date_from or lo, end=f.date_to or hi)

    @reactive.effect
    @reactive.event(
        input.view,
        input.tags,
        input.rejected,
        input.malformed,
        input.problem,
        input.review,
        input.dates,
        input.q,
        input.rule,
        input.model,
        input.tool,
        input.flag_kind,
    )
    def _reset_page() -> None:
        # After a deep link, open the page that holds its conversation, once the link's
        # filters have reached the inputs; any other filter change starts at page 1.
        pending, target = pending_page(), None
        if pending is not None:
            wanted, page = pending
            if filters_from_inputs(input, 1, review_log) == wanted:
                target = page
            pending_page.set(None)
        page_no.set(target or 1)

    @reactive.effect
    @reactive.event(input.clear, input.clear_all)
    def _clear() -> None:
        lo, hi = catalog.date_bounds()
        ui.update_checkbox_group("tags", selected=[])
        ui.update_checkbox("rejected", value=False)
        ui.update_checkbox("malformed", value=False)
        ui.update_checkbox("problem", value=False)
        ui.update_select("review", selected="any")
        ui.update_select("rule", selected="")
        ui.update_select("model", selected="")
        ui.update_select("tool", selected="")
        ui.update_date_range("dates", start=lo, end=hi)
        ui.update_text("q", value="")

    @reactive.effect
    @reactive.event(input.page_to)
    def _page_to() -> None:
        n = parse_exchange(input.page_to())  # a positive number from the browser, or nothing
        if n is not None:
            page_no.set(n)

    @reactive.calc
    def filters() -> Filters:
        review_tick()
        return filters_from_inputs(input, page_no(), review_log)

    @reactive.calc
    def current() -> Page:
        return catalog.page(filters())

    @reactive.effect
    async def _update_counts() -> None:
        payload = count_labels(
            catalog.facet_counts(filters()), catalog.models(), catalog.tool_names()
        )
        await session.send_custom_message(
            "tr-counts",
            {
                "spans": payload["spans"],
                "options": {session.ns(k): v for k, v in payload["options"].items()},
            },
        )

    @render.ui
    def summary() -> Tag:
        p = current()
        f = filters()
        unit = "conversation" if f.view == "conversations" else "answer"
        lo, hi = catalog.date_bounds()
        chips = active_filters(f, lo, hi)
        return tags.div(
            f"{p.total:,} {unit}{'' if p.total == 1 else 's'}",
            tags.span(f" · page {p.page} of {p.pages}"),
            tags.div(
                *[tags.span(c, class_="tr-chip-filter") for c in chips],
                ui.input_action_link("clear_all", "clear"),
                class_="tr-active-filters",
            )
            if chips
            else None,
            class_="tr-list-summary",
            aria_live="polite",
        )

    @render.ui
    def rows() -> Tag:
        p = current()
        f = filters()
        ids = f.review_ids
        flagged, noted = ids.get("flagged", frozenset()), ids.get("noted", frozenset())
        body = [
            row_html(r, f.view, selected(), flagged, noted, f.picks_answers)
            for _, r in p.rows.iterrows()
        ]
        if not body:
            body = [tags.div("Nothing matches these filters.", class_="tr-empty")]
        pager = tags.div(
            tags.button(
                "‹ Prev",
                class_="btn btn-sm btn-outline-secondary tr-page",
                data_page=str(p.page - 1),
                disabled=p.page <= 1 or None,
            ),
            tags.span(f"{p.page} / {p.pages}", class_="tr-page-no"),
            tags.button(
                "Next ›",
                class_="btn btn-sm btn-outline-secondary tr-page",
                data_page=str(p.page + 1),
                disabled=p.page >= p.pages or None,
            ),
            class_="tr-pager",
            data_input=session.ns("page_to"),
        )
        return tags.div(tags.nav(*body, class_="tr-rows", aria_label="Conversations"), pager)

    return filters
