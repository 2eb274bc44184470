"""One row of the list: the question, its trust pill, its marks (rejected and malformed
citations, problems, failing reply rules, review state) and when it was answered."""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from datetime import UTC, datetime
from typing import Any

from htmltools import HTML, Tag, TagList, tags

from trajectory_review.listing.urls import conversation_href
from trajectory_review.model import provenance
from trajectory_review.replay.render import icon, pill


def _time(ns: int) -> str:
    return datetime.fromtimestamp(ns / 1e9, UTC).strftime("%Y-%m-%d %H:%M")


def _snippet(text: str, n: int = 110) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def row_html(
    r: Any,  # a row of the page's frame (its `.values` are what the row shows)
    view: str,
    on: bool,  # the row is the selection (app/list_rows.py: is_selected)
    flagged: frozenset[str],
    noted: frozenset[str],
    jump: bool = False,
    done: frozenset[tuple[str, int]] = frozenset(),
) -> Tag:
    """One list row. jump: a conversation row opens at the answer the filters matched."""
    cid = r["conversation_id"]
    ex = int(r["exchange"])
    per_answer = view in ("answers", "flagged")
    target = None
    if not per_answer and jump and "match_exchange" in r and r["match_exchange"] is not None:
        target = int(r["match_exchange"])
    href = conversation_href(cid, ex if per_answer else target)
    problem = int(r["problem"])
    line = _pill_and_marks(
        r["tag"],
        int(r["rejected"]),
        int(r["malformed"]),
        (str(r["finish"]) if "finish" in r and r["finish"] else "") if problem else None,
        tuple(r["failed_rules"]) if "failed_rules" in r else (),
        tuple(r["blocking_rules"]) if "blocking_rules" in r else (),
        cid in flagged,
        cid in noted,
        view == "flagged" and (cid, ex) in done,
    )
    turns = int(r["n_exchanges"])
    meta = [_time(int(r["time_ns"]))]
    meta.append(
        f"answer {ex} of {turns}" if per_answer else f"{turns} turn{'s' if turns != 1 else ''}"
    )
    if not per_answer and "branches" in r and int(r["branches"] or 0):
        meta.append(f"{int(r['branches'])} branch{'es' if int(r['branches']) > 1 else ''}")
    return tags.a(
        tags.div(_snippet(r["question"]), class_="tr-row-q", title=_snippet(r["question"], 400)),
        tags.div(line, tags.span(" · ".join(meta), class_="tr-row-meta"), class_="tr-row-line"),
        href=href,
        class_="tr-row" + (" tr-row-selected" if on else ""),
        data_conversation=cid,
        data_exchange=str(ex) if per_answer else None,
        data_open_exchange=str(target) if target else None,
        aria_current="true" if on else None,
    )


# Most rows share their pill and marks (a tag, a few counts, the rules they fail), and
# htmltools on Python 3.11 checks every child node against its runtime protocols: the
# pill and marks were most of a row's time (docs/performance-log.md, "pill and marks
# drawn once"). Drawn once per distinct value, by htmltools (which
# escapes the finish reason and rule names there), and kept as its markup.
@functools.lru_cache(maxsize=4096)
def _pill_and_marks(
    tag: str,
    rejected: int,
    malformed: int,
    problem: str | None,  # the finish reason when an answer was cut off or failed
    failed_rules: tuple[str, ...],
    blocking_rules: tuple[str, ...],
    flagged: bool,
    noted: bool,
    done: bool,
) -> HTML:
    marks: list[Tag | TagList] = []
    if rejected:
        marks.append(
            tags.span(
                icon("audit"),
                f"{rejected} rejected",
                class_="tr-mark tr-mark-rejected",
                title=provenance.review_audit_body(rejected),
            )
        )
    if malformed:
        marks.append(
            tags.span(
                icon("malformed"),
                str(malformed),
                class_="tr-mark tr-mark-malformed",
                title=provenance.malformed_note(malformed),
            )
        )
    if problem is not None:
        marks.append(
            tags.span(
                "cut off or failed",
                class_="tr-mark tr-mark-problem",
                title=problem or "in one of its answers",
            )
        )
    # A title is not read out by screen readers: what a mark means is also said in text
    # only they read (Bootstrap's visually-hidden), inside the row's link name
    for rule in failed_rules:
        gate = rule in blocking_rules
        why = "would withhold the answer" if gate else "fails the metric only"
        marks.append(
            TagList(
                unseen("rule "),
                tags.span(rule, class_="tr-rule-badge" + (" tr-rule-gate" if gate else ""),
                          title=why),
                unseen(f" ({why})"),
            )
        )  # fmt: skip
    if flagged:
        marks.append(
            tags.span(
                icon("flag"), unseen("flagged"), class_="tr-mark tr-mark-flag", title="Flagged"
            )
        )
    if noted:
        marks.append(
            tags.span(
                tags.span("✎", aria_hidden="true"),
                unseen("has review notes"),
                class_="tr-mark tr-mark-note",
                title="Has review notes",
            )
        )
    if done:
        marks.append(tags.span("✓ done", class_="tr-mark tr-mark-done", title="QA has reviewed it"))
    shown = provenance.display(None if tag == "none" else tag)
    return HTML(str(TagList(pill(shown), *marks)))


class RowCache:
    """Rows drawn once and shared by every session of one catalog.

    A row is a pure function of its catalog row and its marks, and htmltools is slow to
    draw one (docs/performance-log.md, "rows drawn once"): reviewers paging the same
    lists got the same rows drawn again and again. The key holds everything the row
    shows; the value is the HTML htmltools wrote (escaped there, once)."""

    def __init__(self, size: int = 4096) -> None:
        self._rows: OrderedDict[Hashable, HTML] = OrderedDict()
        self._size = size
        self._lock = threading.Lock()

    def html(self, key: Hashable, draw: Callable[[], Tag]) -> HTML:
        with self._lock:
            hit = self._rows.get(key)
            if hit is not None:
                self._rows.move_to_end(key)
                return hit
        made = HTML(str(draw()))
        with self._lock:
            self._rows[key] = made
            while len(self._rows) > self._size:
                self._rows.popitem(last=False)
        return made


def unseen(text: str) -> Tag:
    """Text for screen readers only."""
    return tags.span(text, class_="visually-hidden")
