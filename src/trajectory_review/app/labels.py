"""What the filters say: the labels of views, flag kinds and review states, the counts
beside each value, and the chips naming the filters in force."""

from __future__ import annotations

from dataclasses import replace
from datetime import date
from typing import Any

from htmltools import Tag, tags

from trajectory_review.listing.filters import FILTERS, Filters
from trajectory_review.model import provenance

# the yes/no filters (a checkbox each), from the one table of filters
YES_NO_FILTERS = tuple(e for e in FILTERS if e.input == "checkbox")


def _count_text(n: int | None) -> str:
    return f"({n:,})" if n is not None else ""


def option_labels(
    counts: dict[str, Any] | None,
    values: dict[str, list[str]] | None = None,
    judging: bool = False,
    growing: bool = False,
) -> dict[str, dict[str, str]]:
    """The text of each <option> of every select filter, counts included: its fixed
    choices, or "any" and the values it has (`values`: Catalog.select_values). While the
    answers are being judged a count that waits for the rules is shown as counted so far;
    while conversations are still read into the list (growing), no count is final."""
    count_text = _growing_text if growing else _count_text
    out: dict[str, dict[str, str]] = {}
    for entry in FILTERS:
        if entry.input != "select":
            continue
        seen = (counts or {}).get(entry.facet.key) if entry.facet is not None else None
        if entry.choices:
            out[entry.name] = {
                k: (f"{v} {count_text(seen[k])}" if seen is not None and k in seen else v)
                for k, v in entry.choices.items()
            }
            continue
        names = (values or {}).get(entry.name) or list(entry.known) or sorted(seen or {})
        opts = {"": entry.any_label}
        for name in names:
            if entry.judged:  # not final until every answer is judged
                n = _count_text(seen.get(name, 0)) if seen is not None else ""
                partial = (judging or growing) and n
                opts[name] = f"{name} {n[:-1]} so far…)" if partial else f"{name} {n}".strip()
            else:
                opts[name] = f"{name} {count_text(seen.get(name, 0))}" if seen is not None else name
        out[entry.name] = opts
    return out


def counted(text: str, key: str, n: int | None, growing: bool = False) -> Tag:
    # The count lives in its own span so that an update rewrites the number only and
    # never the input's value: re-sending a checkbox group's choices would race a
    # reviewer's click and could untick what they just ticked.
    count = _growing_text(n) if growing else _count_text(n)
    return tags.span(text, " ", tags.span(count, class_="tr-count", data_tr_count=key))


def tag_choices(counts: dict[str, int] | None = None, growing: bool = False) -> dict[str, Tag]:
    out = {}
    for key in provenance.FILTER_KEYS:
        d = provenance.display_for_key(key)
        n = counts.get(key, 0) if counts is not None else None
        out[key] = tags.span(
            tags.span(class_=f"tr-dot tr-dot-{d.pill_class}"),
            counted(d.label, f"tags-{key}", n, growing),
        )
    return out


def active_filters(f: Filters, lo: date | None = None, hi: date | None = None) -> list[str]:
    """The filters in force, named as the sidebar names them (shown as chips above the
    list while the filters are folded away). Dates at the corpus' bounds are no filter."""
    f = replace(
        f,
        date_from=None if f.date_from == lo else f.date_from,
        date_to=None if f.date_to == hi else f.date_to,
    )
    return [
        chip
        for entry in FILTERS
        if not entry.queue_only or f.view == "flagged"
        for chip in entry.chip(f)
    ]


def count_labels(
    counts: dict[str, Any],
    values: dict[str, list[str]],
    judging: bool = False,
    growing: bool = False,
) -> dict[str, Any]:
    """The payload of one counts update: span texts by key, option texts by select.
    growing: conversations are still read into the list, so every count is a count so
    far, and says so ("(12…)")."""
    text = _growing_text if growing else _count_text
    spans = {f"tags-{k}": text(v) for k, v in counts["tags"].items()}
    for entry in YES_NO_FILTERS:
        spans[entry.name] = text(counts[entry.name]["yes"])
    return {"spans": spans, "options": option_labels(counts, values, judging, growing)}


def _growing_text(n: int | None) -> str:
    return f"({n:,}…)" if n is not None else ""


def reading_note(fraction: float, what: str) -> Tag:
    """What a view says while conversations are still read into the list (Catalog.fill):
    how far, and that `what` (its list, its chart) is so far."""
    return tags.div(
        f"Reading conversations, newest first: {fraction:.0%}. {what}",
        class_="tr-judging tr-replaying",
        role="status",
    )
