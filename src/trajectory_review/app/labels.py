"""What the filters say: the labels of views, flag kinds and review states, the counts
beside each value, and the chips naming the filters in force."""

from __future__ import annotations

from dataclasses import replace
from datetime import date
from typing import Any

from htmltools import Tag, tags

from trajectory_review.listing.filters import FILTERS, REVIEW_LABELS, Filters
from trajectory_review.model import provenance
from trajectory_review.rules.registry import RULES

# the yes/no filters (a checkbox each), from the one table of filters
YES_NO_FILTERS = tuple(e for e in FILTERS if e.input == "checkbox")


def _count_text(n: int | None) -> str:
    return f"({n:,})" if n is not None else ""


def option_labels(
    counts: dict[str, Any] | None,
    models: list[str] | None = None,
    tools: list[str] | None = None,
    judging: bool = False,
    growing: bool = False,
) -> dict[str, dict[str, str]]:
    """The text of each <option> of the selects, counts included. While the answers are
    being judged a rule's count is not final: it is shown as counted so far; while
    conversations are still read into the list (growing), no count is."""
    count_text = _growing_text if growing else _count_text
    rules = (counts or {}).get("rules")
    review = (counts or {}).get("review")
    by_model = (counts or {}).get("models")
    by_tool = (counts or {}).get("tools")

    def counted(names: list[str], seen: dict[str, Any] | None, anyone: str) -> dict[str, str]:
        opts = {"": anyone}
        for n in names:
            opts[n] = f"{n} {count_text(seen.get(n, 0))}" if seen is not None else n
        return opts

    rule_opts = {"": "Any rule"}
    for rule in RULES:
        n = _count_text(rules.get(rule, 0)) if rules is not None else ""
        partial = judging or growing
        rule_opts[rule] = f"{rule} {n[:-1]} so far…)" if partial and n else f"{rule} {n}".strip()
    review_opts = {
        k: (f"{v} {count_text(review[k])}" if review is not None and k in review else v)
        for k, v in REVIEW_LABELS.items()
    }
    return {
        "rule": rule_opts,
        "review": review_opts,
        "model": counted(models or sorted(by_model or {}), by_model, "Any model"),
        "tool": counted(tools or sorted(by_tool or {}), by_tool, "Any tool"),
    }


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
    models: list[str],
    tools: list[str],
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
    return {"spans": spans, "options": option_labels(counts, models, tools, judging, growing)}


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
