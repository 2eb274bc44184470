"""The sidebar's filter inputs, all made from the one table of filters
(listing/filters.FILTERS) and the kinds of input (KINDS): each entry's input as the page
is served, its value read back into Filters, the inputs set from a link (back/forward)
and cleared. Nothing here names a filter: a new filter is an entry of the table, a new
kind of input an entry of KINDS."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
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


Bounds = tuple[date | None, date | None]


@dataclass(frozen=True)
class Drawn:
    """What an input is drawn with besides its entry and state: the counts beside the
    values, the select options, the corpus' date bounds, whether counts are so far."""

    counts: dict[str, Any]
    options: dict[str, dict[str, str]]
    bounds: Bounds
    growing: bool


@dataclass(frozen=True)
class InputKind:
    """One kind of sidebar input, all of it: drawn holding a state, read back into the
    Filters fields it sets, and moved to a state (back/forward, a link, Clear). A new
    kind is one entry of KINDS."""

    draw: Callable[[FilterField, Filters, Drawn], Tag]
    read: Callable[[FilterField, Any], dict[str, Any]]
    move: Callable[[FilterField, Filters, Bounds], None]


def _value(e: FilterField, got: Any) -> dict[str, Any]:
    return {e.name: got or DEFAULTS[e.name]}


def _flag(e: FilterField, got: Any) -> dict[str, Any]:
    return {e.name: bool(got)}


KINDS: dict[str, InputKind] = {
    "view": InputKind(
        lambda e, f, d: ui.input_radio_buttons(e.name, None, e.choices, selected=f.view,
                                               inline=True),
        _value,
        lambda e, f, b: ui.update_radio_buttons(e.name, selected=getattr(f, e.name)),
    ),
    "text": InputKind(
        lambda e, f, d: ui.input_text(e.name, None, value=getattr(f, e.name),
                                      placeholder=e.label, update_on="blur"),
        _value,
        lambda e, f, b: ui.update_text(e.name, value=getattr(f, e.name)),
    ),
    "checkboxes": InputKind(
        lambda e, f, d: ui.input_checkbox_group(
            e.name, e.label, tag_choices(d.counts.get(e.name), d.growing),
            selected=list(getattr(f, e.name))),
        lambda e, got: {e.name: tuple(got or ())},
        lambda e, f, b: ui.update_checkbox_group(e.name, selected=list(getattr(f, e.name))),
    ),
    "checkbox": InputKind(
        lambda e, f, d: ui.input_checkbox(
            e.name, counted(e.label, e.name, d.counts.get(e.name, {}).get("yes"), d.growing),
            value=getattr(f, e.name)),
        _flag,
        lambda e, f, b: ui.update_checkbox(e.name, value=getattr(f, e.name)),
    ),
    "radio": InputKind(
        lambda e, f, d: ui.input_radio_buttons(e.name, e.label, e.choices,
                                               selected=getattr(f, e.name)),
        _value,
        lambda e, f, b: ui.update_radio_buttons(e.name, selected=getattr(f, e.name)),
    ),
    "select": InputKind(
        lambda e, f, d: ui.input_select(e.name, e.label, d.options.get(e.name) or e.choices,
                                        selected=getattr(f, e.name)),
        _value,
        lambda e, f, b: ui.update_select(e.name, selected=getattr(f, e.name)),
    ),
    "dates": InputKind(
        lambda e, f, d: ui.input_date_range(
            e.name, e.label, start=f.date_from or d.bounds[0], end=f.date_to or d.bounds[1],
            min=d.bounds[0], max=d.bounds[1]),
        lambda e, got: dict(zip(("date_from", "date_to"), got or (None, None), strict=True)),
        lambda e, f, b: ui.update_date_range(e.name, start=f.date_from or b[0],
                                             end=f.date_to or b[1]),
    ),
    "switch": InputKind(
        lambda e, f, d: ui.input_switch(e.name, e.label, value=getattr(f, e.name)),
        _flag,
        lambda e, f, b: ui.update_switch(e.name, value=getattr(f, e.name)),
    ),
}  # fmt: skip


def filter_input(entry: FilterField, f: Filters, drawn: Drawn) -> Tag:
    """The entry's input, holding the state `f` names (a deep link's, on first load)."""
    made = KINDS[entry.input].draw(entry, f, drawn)
    if entry.queue_only:  # shown in the queue only (data-view, static/app.js)
        extra = " tr-queue-toggle" if entry.input in HEAD else ""
        return tags.div(made, class_=f"tr-only-flagged{extra}")
    return made


def filters_from_inputs(
    input: Any, page: int, review_ids: dict[str, Any], done: frozenset[tuple[str, int]]
) -> Filters:
    """The filters the inputs hold now."""
    values: dict[str, Any] = {}
    for entry in FILTERS:
        values.update(KINDS[entry.input].read(entry, input[entry.name]()))
    return Filters(page=page, review_ids=review_ids, done=done, **values)


def set_inputs(f: Filters, bounds: Bounds) -> None:
    """Move every input to the state `f` names (back/forward, a link followed)."""
    for entry in FILTERS:
        KINDS[entry.input].move(entry, f, bounds)


def clear_inputs(current: Filters, bounds: tuple[date | None, date | None]) -> None:
    """ "Clear filters": every filter that clears back to its default; the view and the
    queue's own settings stay as they are."""
    kept = {e.name for e in FILTERS if not e.clears}
    fields = {k: v for k, v in DEFAULTS.items() if k not in kept and k != "page"}
    set_inputs(dataclasses.replace(current, **fields), bounds)


def filter_events(input: Any) -> list[Any]:
    """Every filter input, for the effects that follow any change of the filters."""
    return [input[entry.name] for entry in FILTERS]
