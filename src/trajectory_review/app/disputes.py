"""Where reviewers disagree: the list of disputed flags, and who may settle one.

Settling decides between reviewers, so it is a lead's (reviews/log.may_settle): a login a
trusted proxy signed in and TRAJECTORY_LEADS names, never a typed name and never one of
the reviewers who disagree. The buttons are drawn only for such a lead, and whatever the
browser sends is checked again here before it is saved.
"""

from __future__ import annotations

from typing import Any

from htmltools import Tag, tags

from trajectory_review import settings
from trajectory_review.app.actions import sends
from trajectory_review.app.ids import SAMPLE_SETTLE
from trajectory_review.listing.urls import conversation_href, parse_exchange
from trajectory_review.reviews.log import VERDICTS, Reviewer, ReviewState, may_settle
from trajectory_review.rules.evidence import disagreements, reviewer_key


def settle_refused(state: ReviewState, who: Reviewer | None, ev: dict[str, Any]) -> str:
    """Why this settle may not be saved ("" when it may): whatever the browser sends, a
    settle names an open disagreement, comes from a lead, and not from one of its
    reviewers."""
    if not may_settle(who, settings.leads()):
        return "settling is for leads (signed in, named in TRAJECTORY_LEADS)."
    key = (str(ev.get("conversation")), parse_exchange(ev.get("exchange")) or 0, ev.get("rule"))
    if ev.get("verdict") not in VERDICTS:
        return "no such verdict."
    found = next((d for d in disagreements(state) if d.key == key), None)
    if found is None:
        return "no open disagreement on this flag."
    if who is not None and (who.name, who.identity) in {reviewer_key(v) for v in found.verdicts}:
        return "you are one of the reviewers who disagree."
    return ""


def disagreements_html(state: ReviewState, who: Reviewer | None = None) -> Tag:
    found = disagreements(state)
    lead = may_settle(who, settings.leads())
    if not found:
        return tags.div(
            tags.div("Disagreements", class_="tr-chart-title"),
            tags.p("No flag has reviewers who disagree.", class_="tr-muted"),
            class_="tr-chart-wrap tr-disputes",
        )
    items = []
    for d in found[:200]:
        cid, ex, rule = d.key
        notes = [n for n in state.notes(cid, ex)]
        items.append(
            tags.li(
                tags.a(f"{cid} #{ex}", href=conversation_href(cid, ex), data_conversation=cid,
                       data_exchange=str(ex), class_="tr-nav-link"),
                tags.code(rule),
                tags.ul(*[
                    tags.li(tags.b(v.author), f" · {v.identity or 'declared'} · ",
                            "correct flag" if v.verdict == "correct" else "false positive",
                            f" — {v.text}" if v.text else "", f" · {v.ts[:16].replace('T', ' ')}")
                    for v in d.verdicts
                ], *[tags.li(tags.b(n.author), f" (note) — {n.text}") for n in notes[:5]]),
                *[
                    tags.button(f"Settle: {label}", class_=f"btn btn-sm btn-outline-{tone}",
                                **sends(SAMPLE_SETTLE, {"conversation": cid, "exchange": ex,
                                                           "rule": rule, "verdict": verdict}))
                    for verdict, label, tone in (("correct", "correct flag", "success"),
                                                 ("false_positive", "false positive", "warning"))
                    if lead and who is not None
                    and (who.name, who.identity) not in {reviewer_key(v) for v in d.verdicts}
                ],
                class_="tr-dispute",
                data_rule=rule,
                data_conversation=cid,
            )
        )  # fmt: skip
    return tags.div(
        tags.div(f"Disagreements ({len(found):,})", class_="tr-chart-title"),
        tags.div(
            "Flags whose reviewers' latest verdicts differ; a lead's settling verdict decides "
            "one. "
            + (
                ""
                if lead
                else "Settling is for leads: signed-in logins named in "
                "TRAJECTORY_LEADS, never one of the reviewers who disagree."
            ),
            class_="tr-chart-note",
        ),  # fmt: skip
        tags.ul(*items, class_="tr-dispute-list"),
        class_="tr-chart-wrap tr-disputes",
    )
