"""The reply-rule findings under an answer: each broken rule, the words that triggered it,
and the reviewer's verdict on the flag (correct flag / false positive)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from htmltools import Tag, TagChild, tags

from trajectory_review.app.actions import sends
from trajectory_review.app.ids import MARK_INPUT, VERDICT_INPUT
from trajectory_review.reviews.log import TO_DO, ReviewEvent
from trajectory_review.rules.registry import RuleResult

EXCERPT = 420
VERDICT_BUTTONS = (
    ("correct", "Correct flag", "success"),
    ("false_positive", "False positive", "warning"),
)


def highlighted(text: str, evidence: Sequence[str]) -> list[TagChild]:
    """Text with every evidence phrase marked; strings stay strings (escaped by htmltools)."""
    words = sorted({e for e in evidence if e.strip()}, key=len, reverse=True)
    if not words:
        return [text]
    pattern = re.compile("|".join(re.escape(w) for w in words), re.I)
    out: list[TagChild] = []
    pos = 0
    for m in pattern.finditer(text):
        out.append(text[pos : m.start()])
        out.append(tags.mark(m.group(0)))
        pos = m.end()
    out.append(text[pos:])
    return out


def excerpt(text: str, evidence: Sequence[str]) -> str:
    if len(text) <= EXCERPT:
        return text
    low = text.lower()
    first = min((i for e in evidence if (i := low.find(e.lower())) >= 0), default=0)
    start = max(0, first - EXCERPT // 3)
    end = min(len(text), start + EXCERPT)
    return ("…" if start else "") + text[start:end] + ("…" if end < len(text) else "")


def queue_state_line(conversation: str, exchange: int, state: str) -> Tag:
    """Where the answer stands in QA's queue, and the one action that changes it: "looks
    right" (done without a verdict on each flag) while it is to do, "reopen" after."""
    mark, label, key = (
        ("looks_right", "Looks right", "l") if state == TO_DO else ("reopen", "Reopen", None)
    )
    return tags.div(
        tags.span(state, class_="tr-queue-state", data_state=state.replace(" ", "-")),
        tags.button(
            label,
            class_="btn btn-sm btn-outline-secondary tr-answer-mark",
            data_mark=mark,
            title=f"{label} ({key})" if key else label,
            **sends(MARK_INPUT, {"conversation": conversation, "exchange": exchange, "mark": mark}),
        ),
        class_="tr-queue-line",
    )


def note_id(exchange: int, rule: str) -> str:
    """The id of the note box under an answer's flag (rule names are the registry's)."""
    return f"verdict-note-{exchange}-{rule}"


def rules_box(
    conversation: str,
    exchange: int,
    reply: str,
    results: Sequence[RuleResult],
    verdicts: dict[str, ReviewEvent],
    queue_state: str = TO_DO,
) -> Tag | str:
    failed = [r for r in results if r.failed]
    if not failed:
        return ""
    items = []
    for r in failed:
        kind = ("gate", "would withhold") if r.blocks_publish else ("metric", "metric only")
        v = verdicts.get(r.rule)
        note = note_id(exchange, r.rule)
        state: TagChild = ""
        if v is not None:
            label = "correct flag" if v.verdict == "correct" else "false positive"
            state = tags.span(
                f"{label} · {v.author}" + (f" — {v.text}" if v.text else ""),
                class_=f"tr-verdict-state {v.verdict}",
            )
        items.append(
            tags.div(
                tags.div(
                    tags.span(r.rule, class_="tr-rule-name"),
                    tags.span(kind[1], class_=f"tr-rule-kind {kind[0]}"),
                    state,
                    class_="tr-rule-head",
                ),
                tags.div(r.detail, class_="tr-rule-detail"),
                tags.div(
                    *highlighted(excerpt(reply, r.evidence), r.evidence), class_="tr-rule-excerpt"
                )
                if r.evidence
                else "",
                tags.div(
                    tags.input(
                        type="text",
                        id=note,
                        class_="tr-verdict-note",
                        placeholder="note (optional)",
                        aria_label=f"Note on the {r.rule} flag",
                    ),
                    *[
                        tags.button(
                            label,
                            class_=f"btn btn-outline-{tone} tr-verdict-btn",
                            data_verdict=verdict,
                            **sends(
                                VERDICT_INPUT,
                                {
                                    "conversation": conversation,
                                    "exchange": exchange,
                                    "rule": r.rule,
                                    "verdict": verdict,
                                },
                                note_from=note,
                            ),
                        )
                        for verdict, label, tone in VERDICT_BUTTONS
                    ],
                    class_="tr-verdict",
                ),
                class_="tr-rule",
                data_rule=r.rule,
                data_exchange=str(exchange),
            )
        )
    return tags.div(
        tags.div(
            tags.span("Reply rules (report mode)"),
            queue_state_line(conversation, exchange, queue_state),
            class_="tr-rules-title",
        ),
        *items,
        class_="tr-rules",
        data_exchange=str(exchange),
    )
