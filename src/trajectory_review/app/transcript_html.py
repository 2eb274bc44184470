"""The transcript's HTML: question, tool cards, the answer through shinychat's renderer,
the asides after it, the rule findings, and the stored raw text, a page of answers at a
time. Pure functions of a conversation and the review state (app/transcript.py draws
them).

Long on purpose: one answer's HTML from its question to its raw text, as the page reads."""

from __future__ import annotations

from typing import Any

from htmltools import Tag, TagList, tags
from shinychat import output_markdown_stream

from trajectory_review.app.actions import sends
from trajectory_review.app.ids import NAV_INPUTS, TRANSCRIPT_INPUTS
from trajectory_review.app.rules_box import note_id, rules_box
from trajectory_review.listing.urls import conversation_href
from trajectory_review.model import provenance
from trajectory_review.model.messages import Part
from trajectory_review.model.spans import iso_ns
from trajectory_review.model.trajectory import Conversation, Exchange
from trajectory_review.replay.citations import ArtifactSegment
from trajectory_review.replay.documents import DocVersion, Ledger, ledger
from trajectory_review.replay.project import projected_text
from trajectory_review.replay.render import (
    SHOWN_CHARS,
    answer_blocks,
    chip_aside,
    clipped,
    clipped_replay,
    format_json,
    icon,
    markdown_html,
    pill,
    projected_length,
    tool_card,
)
from trajectory_review.reviews.log import ReviewState
from trajectory_review.rules.judged import judge_answer
from trajectory_review.rules.registry import RuleConfig
from trajectory_review.rules.whatif import WhatIf


def _timing(ex: Exchange) -> str:
    if not ex.calls:
        return ""
    seconds = (ex.calls[-1].end_ns - ex.calls[0].start_ns) / 1e9
    tin = sum(c.input_tokens or 0 for c in ex.calls)
    tout = sum(c.output_tokens or 0 for c in ex.calls)
    model = ex.calls[-1].model or "model ?"
    rounds = len(ex.calls)
    return (
        f"{model} · {rounds} call{'s' if rounds != 1 else ''} · {tin:,} in / {tout:,} "
        f"out tokens · {seconds:.1f} s"
    )


# Parts a recorder may write besides text and tool calls (docs/spec.md §1): never dropped
# silently. Reasoning is shown folded under the answer; anything else is named with its
# size, its content not rendered (a blob or a URI the model produced is not fetched).
def _non_text_parts(ex: Exchange) -> tuple[list[Tag], list[Part]]:
    reasoning: list[Tag] = []
    other: list[Part] = []
    for msg in ex.messages[1:]:
        if msg.role != "assistant":
            continue
        for part in msg.parts:
            if part.type == "reasoning":
                text = part.raw.get("content") if isinstance(part.raw, dict) else None
                reasoning.append(
                    tags.details(
                        tags.summary("Reasoning"),
                        tags.pre(text if isinstance(text, str) else format_json(part.raw)),
                        class_="tr-reasoning",
                    )
                )
            elif part.type not in ("text", "tool_call", "tool_call_response"):
                other.append(part)
    return reasoning, other


def part_placeholder(part: Part) -> Tag:
    raw = part.raw if isinstance(part.raw, dict) else {}
    mime = raw.get("mime_type") or raw.get("mimeType") or raw.get("modality")
    bits = [str(part.type)]
    if isinstance(mime, str):
        bits.append(mime)
    if part.size is not None:
        bits.append(f"{part.size:,} characters")
    return tags.div(f"[{' · '.join(bits)}: not shown]", class_="tr-part-placeholder")


def _header(conv: Conversation, ex: Exchange, malformed: int, review: ReviewState) -> list[Any]:
    """An answer's header: its anchor and pill, the marks for what went wrong, timing,
    and the flag and copy-link buttons."""
    d = provenance.display(ex.tag)
    header_bits: list[Any] = [
        tags.a(
            f"#{ex.index}",
            href=conversation_href(conv.id, ex.index),
            class_="tr-ex-anchor",
        ),
        pill(d, extra_class="tr-ex-pill"),
    ]
    if malformed:
        header_bits.append(
            tags.span(
                icon("malformed"),
                provenance.malformed_note(malformed),
                class_="tr-mark tr-mark-malformed",
                title="The model wrote citation markup that could not be "
                "parsed; the user saw nothing for it.",
            )
        )
    if ex.conflict:
        header_bits.append(tags.span("conflicting records: no claim", class_="tr-mark tr-warn"))
    if ex.cut_off:
        reasons = ", ".join(ex.finish_reasons)
        header_bits.append(
            tags.span(
                f"cut off: {reasons}",
                class_="tr-mark tr-mark-problem",
                title="The model stopped before finishing (the user saw this answer as it "
                "stands): " + reasons,
            )
        )
    if ex.error is not None:
        kind = ex.error.get("type") or "error"
        header_bits.append(
            tags.span(
                f"failed: {kind}",
                class_="tr-mark tr-mark-problem",
                title=ex.error.get("message") or "The model call ended with an error status.",
            )
        )
    if not ex.complete:
        header_bits.append(
            tags.span(
                "incomplete",
                class_="tr-mark tr-warn",
                title="The recorded history ends in a tool call.",
            )
        )
    flagged = review.flagged(conv.id, ex.index) is not None
    header_bits.append(tags.span(_timing(ex), class_="tr-ex-meta"))
    header_bits.append(
        tags.span(
            tags.button(
                icon("flag"),
                "Flagged" if flagged else "Flag",
                class_="btn btn-sm tr-btn-flag" + (" active" if flagged else ""),
                **sends(NAV_INPUTS["flag_exchange"], {"exchange": ex.index}),
                aria_pressed="true" if flagged else "false",
                title="Flag this answer (f)",
            ),
            tags.button(
                "Copy link",
                class_="btn btn-sm tr-btn-copy",
                data_exchange=str(ex.index),
                title="Copy a link to this answer",
            ),
            class_="tr-ex-actions",
        )
    )
    return header_bits


def whatif_strip(tried: WhatIf | None, cid: str, index: int) -> Tag | str:
    """An answer the session's what-if run decided differently: each rule's decision in
    force and the candidate's, side by side."""
    if tried is None:
        return ""
    diffs = [d for d in tried.diffs if d.conversation_id == cid and d.exchange == index]
    if not diffs:
        return ""

    def side(r: dict[str, Any]) -> Tag:
        word = "n/a" if not r["applicable"] else "passed" if r["passed"] else (
            "flagged, would withhold" if r["blocks_publish"] else "flagged"
        )  # fmt: skip
        return tags.td(tags.b(word), tags.div(r["detail"], class_="tr-rule-detail"))

    return tags.div(
        tags.div(f"What if: {tried.after}", class_="tr-whatif-title"),
        tags.table(
            tags.thead(tags.tr(tags.th("Rule"), tags.th("In force"), tags.th("Candidate"))),
            tags.tbody(
                *[
                    tags.tr(tags.td(tags.code(d.rule)), side(d.before), side(d.after))
                    for d in diffs
                ]  # fmt: skip
            ),
            class_="table table-sm tr-table",
        ),
        class_="tr-whatif-strip",
    )


# Long on purpose: one answer's HTML as one tree, read top to bottom like the page.
def exchange_html(
    conv: Conversation,
    ex: Exchange,
    review: ReviewState,
    cfg: RuleConfig,
    tried: Tag | str = "",
    docs: Ledger | None = None,
) -> Tag:
    as_judged = judge_answer(ex, cfg)
    rep, results = as_judged.replay, as_judged.results
    docs = docs if docs is not None else ledger(conv, ex.index)
    written = iter(docs.written.get(ex.index, []))
    # the verdicts that count: those given since the answer was last reopened
    judged, _ = review.judged().get((conv.id, ex.index), (frozenset(), False))
    verdicts = {
        rule: v
        for (cid, n, rule), v in review.verdicts().items()
        if cid == conv.id and n == ex.index and rule in judged
    }
    failing = [r.rule for r in results if r.failed]
    queue_state = review.answer_state((conv.id, ex.index), failing)
    # what m opens (static/app.js): the note of the flag c / x would judge (Queue.focus_rule)
    focus = next((rule for rule in failing if rule not in judged), None)
    header_bits = _header(conv, ex, rep.malformed, review)
    tools = [
        tool_card(
            t.name,
            t.arguments,
            t.result,
            t.answered,
            show_all(ex.index, f"tool-{i}"),
            t.request,
            edit_note(docs.edits.get((ex.index, i))),
        )  # fmt: skip
        for i, t in enumerate(ex.tools())
    ]
    reasoning, other_parts = _non_text_parts(ex)
    shown, answer_cut = clipped_replay(rep)
    answer = [
        output_markdown_stream(
            f"answer_{ex.index}" + (f"_{k}" if k else ""),
            content=block,
            auto_scroll=False,
            width="100%",
        )
        if isinstance(block, str)
        else artifact_chip(block, next(written, None))
        for k, block in enumerate(answer_blocks(shown))
    ]
    question, question_cut = clipped(ex.question)
    raw, raw_cut = clipped(ex.answer_raw or "(no answer text)")
    # Each aside after the answer gets a renderer of its own: shinychat groups asides that
    # share a block into one pill, and these are separate statements, not sources. The
    # zero-width space is the block's text, which an aside needs to attach to.
    chips = [
        tags.div(
            output_markdown_stream(
                f"chip_{ex.index}_{i}",
                content="\u200b" + chip_aside(c),
                auto_scroll=False,
                width="auto",
            ),
            class_=f"tr-chip tr-chip-{c.kind}",
            data_chip=c.kind,
        )
        for i, c in enumerate(rep.chips)
    ]
    notes = review.notes(conv.id, ex.index)
    return tags.section(
        tags.header(*header_bits, class_="tr-ex-header"),
        tags.div(
            tags.div("User", class_="tr-role"),
            markdown_html(question),
            show_all(ex.index, "question", len(ex.question)) if question_cut else "",
            tags.details(  # recorded, sent to the model, never shown to the user
                tags.summary(
                    f"{len(ex.reminders)} reminder{'s' if len(ex.reminders) != 1 else ''} "
                    "to the model (the user did not see it)"
                ),
                tags.pre(clipped("\n".join(ex.reminders))[0], class_="tr-raw-text"),
                class_="tr-reminders",
            )
            if ex.reminders
            else "",
            *[part_placeholder(p) for p in ex.messages[0].parts if not p.is_text],
            class_="tr-msg tr-user",
        ),
        tags.div(*tools, class_="tr-tools") if tools else "",
        tags.div(
            tags.div("Assistant", class_="tr-role"),
            *answer,
            show_all(ex.index, "answer", projected_length(rep)) if answer_cut else "",
            *[part_placeholder(p) for p in other_parts],
            tags.div(*chips, class_="tr-chips") if chips else "",
            *reasoning,
            class_="tr-msg tr-assistant",
            data_tag=ex.tag or "none",
        ),
        rules_box(conv.id, ex.index, projected_text(rep), results, verdicts, queue_state),
        tried,
        tags.details(
            tags.summary("Raw"),
            tags.pre(raw, class_="tr-raw-text"),
            show_all(ex.index, "raw", len(ex.answer_raw)) if raw_cut else "",
            class_="tr-raw",
        ),
        tags.div(
            *[
                tags.div(
                    tags.b(n.author),
                    f" · {n.ts[:16].replace('T', ' ')} — ",
                    n.text,
                    class_="tr-inline-note",
                )
                for n in notes
            ],
            class_="tr-inline-notes",
        )
        if notes
        else "",
        id=f"ex-{ex.index}",
        class_="tr-exchange",
        data_exchange=str(ex.index),
        data_note_for=note_id(ex.index, focus) if focus else None,
        tabindex="-1",
    )


# Answers drawn at once: a conversation of 20,000 answers is opened at its newest page (or
# the page holding the answer a link names) with "earlier" and "later" on demand; drawn
# whole, it never opened.
PAGE_EXCHANGES = 20


def page_of(n: int, around: int | None, before: int = 0, after: int = 0) -> tuple[int, int]:
    """The answers drawn (first, last) of `n`: PAGE_EXCHANGES around `around`, or the
    newest when none is named, widened by `before` and `after`."""
    if around is None or not 1 <= around <= n:
        lo = n - PAGE_EXCHANGES + 1
    else:
        lo = min(around - PAGE_EXCHANGES // 2, n - PAGE_EXCHANGES + 1)
    lo = max(1, lo)
    hi = min(n, lo + PAGE_EXCHANGES - 1)
    return max(1, lo - before), min(n, hi + after)


def more_button(conv: Conversation, side: str, hidden: int) -> Tag:
    word = "Earlier" if side == "earlier" else "Later"
    return tags.button(
        f"{word} answers ({hidden:,} more)",
        class_=f"btn btn-sm btn-outline-secondary tr-more tr-more-{side}",
        **sends(TRANSCRIPT_INPUTS["more"], {"conversation": conv.id, "side": side}),
    )


def show_all(exchange: int, part: str, size: int | None = None) -> Tag:
    """The button that opens a text the page holds only SHOWN_CHARS of, whole, as text."""
    count = f" ({size:,} characters)" if size is not None else ""
    return tags.button(
        f"Show all{count} as text",
        class_="btn btn-sm btn-link tr-show-all-text",
        title=f"The page shows the first {SHOWN_CHARS:,} characters",
        **sends(TRANSCRIPT_INPUTS["show_all"], {"exchange": exchange, "part": part}),
    )


def artifact_chip(artifact: ArtifactSegment, doc: DocVersion | None) -> Tag:
    """A document the model handed the user, where it was in the answer, as the ledger
    (replay/documents.py) says the user had it: a chip with its title and version that
    folds out the document rendered (markdown without HTML or images: nothing runs,
    nothing is fetched), its source one click further; or, for a document commons
    refused, no chip, a mark saying why."""
    if doc is not None and not doc.saved:
        return tags.div(
            icon("document"),
            tags.span("Document not saved", class_="tr-artifact-rejected-label"),
            tags.span(f" {doc.title} ({doc.id}): {doc.reason}. ", class_="tr-artifact-title"),
            tags.span(
                "The user saw no chip; commons asked the model to fix it in the next turn.",
                class_="tr-muted",
            ),
            tags.details(tags.summary("Source"), tags.pre(doc.source, class_="tr-artifact-body")),
            class_="tr-artifact-rejected",
            data_artifact=doc.id,
            role="note",
        )
    return document_chip(doc) if doc is not None else tags.details(
        tags.summary(icon("document"), tags.span(artifact.title, class_="tr-artifact-title")),
        tags.pre(artifact.body, class_="tr-artifact-body"),
        class_="tr-artifact",
        data_artifact=artifact.id,
    )  # fmt: skip


def document_chip(doc: DocVersion) -> Tag:
    return tags.details(
        tags.summary(
            icon("document"),
            tags.span(doc.title, class_="tr-artifact-title"),
            tags.span(f"v{doc.version}", class_="tr-artifact-version"),
            tags.span(f"{doc.id} · {len(doc.source):,} characters", class_="tr-artifact-meta"),
            title="A document the model handed the user; open it to read it",
        ),
        tags.div(markdown_html(doc.body), class_="tr-artifact-rendered") if doc.body else "",
        tags.details(
            tags.summary("Source", class_="tr-artifact-source-toggle"),
            tags.pre(doc.source, class_="tr-artifact-body"),
            class_="tr-artifact-source",
        )
        if doc.source
        else tags.p(doc.reason, class_="tr-muted"),
        class_="tr-artifact",
        id=f"tr-doc-{doc.n}",
        data_artifact=doc.id,
        data_version=str(doc.version),
    )


def edit_note(doc: DocVersion | None) -> Tag | str:
    """On an edit_artifact card: which document and version it saved, and that version."""
    if doc is None:
        return ""
    return tags.div(
        tags.p(
            f"Saved version {doc.version} of ",
            tags.a(doc.title, href=f"#tr-doc-{doc.n}", class_="tr-edit-link"),
            f" ({doc.id})",
            class_="tr-edit-saved",
        ),
        document_chip(doc),
        class_="tr-edit",
    )


def conversation_html(
    conv: Conversation,
    review: ReviewState,
    cfg: RuleConfig,
    parent: Conversation | None = None,
    shown: tuple[int, int] | None = None,
    tried: WhatIf | None = None,
) -> Tag:
    n = len(conv.exchanges)
    lo, hi = shown or (1, n)
    docs = ledger(conv, hi)
    head: list[Any] = [
        tags.h2(conv.id, class_="tr-conv-id"),
        tags.span(
            f"last active {iso_ns(conv.last_active_ns)[:19].replace('T', ' ')} "
            f"UTC · {n:,} exchange{'s' if n != 1 else ''}"
            + (f" · showing #{lo:,}–#{hi:,}" if (lo, hi) != (1, n) else ""),
            class_="tr-conv-meta",
        ),
    ]
    if conv.is_branch and parent is not None:
        head.append(
            tags.div(
                "Abandoned branch of ",
                tags.a(
                    parent.id,
                    href=conversation_href(parent.id),
                    class_="tr-nav-link",
                    data_conversation=parent.id,
                ),
                class_="tr-branch-note",
            )
        )
    siblings = parent.branches if parent is not None else conv.branches
    root = parent if parent is not None else conv
    if siblings:
        links = [
            tags.a(
                "current" if b is root else f"branch {b.id.rsplit('~', 1)[-1]}",
                href=conversation_href(b.id),
                data_conversation=b.id,
                class_="tr-nav-link tr-branch" + (" active" if b.id == conv.id else ""),
            )
            for b in (root, *siblings[-BRANCH_LINKS:])
        ]
        if len(siblings) > BRANCH_LINKS:
            links.insert(1, tags.span(f"({len(siblings) - BRANCH_LINKS:,} older not listed)"))
        head.append(tags.div("Branches: ", *links, class_="tr-branches"))
    warns = [tags.li(w.message) for w in conv.warnings]
    return tags.article(
        tags.header(*head, class_="tr-conv-header"),
        tags.ul(*warns, class_="tr-conv-warnings") if warns else "",
        tags.details(
            tags.summary("System instructions"),
            tags.pre(clipped(conv.system)[0]),
            class_="tr-system",
        )  # fmt: skip
        if conv.system
        else "",
        more_button(conv, "earlier", lo - 1) if lo > 1 else "",
        TagList(
            *[
                exchange_html(conv, ex, review, cfg, whatif_strip(tried, conv.id, ex.index), docs)
                for ex in conv.exchanges[lo - 1 : hi]
            ]
        ),
        more_button(conv, "later", n - hi) if hi < n else "",
        class_="tr-conversation",
        data_conversation=conv.id,
        data_exchanges=str(n),  # of every answer, though the page draws a window of them
        data_shown=f"{lo}-{hi}",
    )


# Branches named in a conversation's header (the newest): a conversation recorded as
# thousands of abandoned branches must not draw thousands of links.
BRANCH_LINKS = 50
