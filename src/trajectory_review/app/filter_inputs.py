"""The sidebar's filter inputs, all made from the one table of filters
(listing/filters.FILTERS): each entry's input as the page is served, its value read back
into Filters, the inputs set from a link (back/forward) and cleared. Nothing here names a
filter: a new filter is an entry of the table."""

from __future__ import annotations

import dataclasses
from datetime import date
from typing import Any

from htmltools import Tag, tags
from shiny import ui

from trajectory_review.app.labels import counted, tag_choices
from trajectory_review.listing.filters import FILTERS, FilterField, Filters

DEFAULTS: dict[str, Any] = {
    f.name: f.default for f in dataclasses.fields(Filters) if f.default is not dataclasses.MISSING
}
# where an input sits: the view tabs and the search above the folded filters, the
# queue's switch beside the list's summary, every other one inside the fold
TOP = ("view", "text")
HEAD = ("switch",)


def filter_input(
    entry: FilterField,
    f: Filters,
    counts: dict[str, Any],
    options: dict[str, dict[str, str]],
    bounds: tuple[date | None, date | None],
    growing: bool,
) -> Tag:
    """The entry's input, holding the state `f` names (a deep link's, on first load)."""
    name, kind, label = entry.name, entry.input, entry.label
    if kind == "view":
        made = ui.input_radio_buttons(name, None, entry.choices, selected=f.view, inline=True)
    elif kind == "text":
        made = ui.input_text(name, None, value=getattr(f, name), placeholder=label,
                             update_on="blur")  # fmt: skip
    elif kind == "checkboxes":
        made = ui.input_checkbox_group(name, label, tag_choices(counts.get(name), growing),
                                       selected=list(getattr(f, name)))  # fmt: skip
    elif kind == "checkbox":
        n = counts.get(name, {}).get("yes")
        made = ui.input_checkbox(name, counted(label, name, n, growing), value=getattr(f, name))
    elif kind == "radio":
        made = ui.input_radio_buttons(name, label, entry.choices, selected=getattr(f, name))
    elif kind == "select":
        choices = options.get(name) or entry.choices
        made = ui.input_select(name, label, choices, selected=getattr(f, name))
    elif kind == "dates":
        lo, hi = bounds
        made = ui.input_date_range(name, label, start=f.date_from or lo, end=f.date_to or hi,
                                   min=lo, max=hi)  # fmt: skip
    elif kind == "switch":
        made = ui.input_switch(name, label, value=getattr(f, name))
    else:
        raise ValueError(f"filter {name}: no input of kind {kind!r}")
    if entry.queue_only:  # shown in the queue only (data-view, static/app.js)
        extra = " tr-queue-toggle" if kind in HEAD else ""
        return tags.div(made, class_=f"tr-only-flagged{extra}")
    return made


def filters_from_inputs(
    input: Any, page: int, review_ids: dict[str, Any], done: frozenset[tuple[str, int]]
) -> Filters:
    """The filters the inputs hold now."""
    values: dict[str, Any] = {}
    for entry in FILTERS:
        got = input[entry.name]()
        if entry.input == "dates":
            values["date_from"], values["date_to"] = got or (None, None)
        elif entry.input == "checkboxes":
            values[entry.name] = tuple(got or ())
        elif entry.input in ("checkbox", "switch"):
            values[entry.name] = bool(got)
        else:
            values[entry.name] = got or DEFAULTS[entry.name]
    return Filters(page=page, review_ids=review_ids, done=done, **values)


def set_inputs(f: Filters, bounds: tuple[date | None, date | None]) -> None:
    """Move every input to the state `f` names (back/forward, a link followed)."""
    lo, hi = bounds
    for entry in FILTERS:
        name, kind = entry.name, entry.input
        if kind == "dates":
            ui.update_date_range(name, start=f.date_from or lo, end=f.date_to or hi)
        elif kind in ("view", "radio"):
            ui.update_radio_buttons(name, selected=getattr(f, name))
        elif kind == "text":
            ui.update_text(name, value=getattr(f, name))
        elif kind == "checkboxes":
            ui.update_checkbox_group(name, selected=list(getattr(f, name)))
        elif kind == "checkbox":
            ui.update_checkbox(name, value=getattr(f, name))
        elif kind == "select":
            ui.update_select(name, selected=getattr(f, name))
        elif kind == "switch":
            ui.update_switch(name, value=getattr(f, name))


def clear_inputs(current: Filters, bounds: tuple[date | None, date | None]) -> None:
    """ "Clear filters": every filter that clears back to its default; the view and the
    queue's own settings stay as they are."""
    kept = {e.name for e in FILTERS if not e.clears}
    fields = {k: v for k, v in DEFAULTS.items() if k not in kept and k != "page"}
    set_inputs(dataclasses.replace(current, **fields), bounds)


def filter_events(input: Any) -> list[Any]:
    """Every filter input, for the effects that follow any change of the filters."""
    return [input[entry.name] for entry in FILTERS]
