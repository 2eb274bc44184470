"""HTML for the reviewer: escaped model text, pills from the display table, tool cards.

Model and user text is untrusted. It reaches the browser only (a) escaped inside the
markdown handed to shinychat's renderer, or (b) rendered by markdown-it with raw HTML and
images off. The only live elements are server-authored: asides, pills, cards.
"""

from __future__ import annotations

import html
import json
from typing import Any

from htmltools import HTML, Tag, TagList, tags
from markdown_it import MarkdownIt

from trajectory_review.model import provenance
from trajectory_review.model.provenance import Chip, TagDisplay
from trajectory_review.replay.citations import ArtifactSegment, Segment, TextSegment
from trajectory_review.replay.markup import aside_markup, escape_attribute_fully
from trajectory_review.replay.project import (
    ExchangeReplay,
    MarkupStyle,
    projected_markup,
    segments_markup,
)

RESULT_PREVIEW_CHARS = 600
# The most characters of one text (an answer, a question, the raw view, a tool result)
# drawn on the page; the rest is one click away, as plain text. A 50 MB answer once went
# to the browser three times over (142 MB of HTML) and took three minutes to open.
SHOWN_CHARS = 200_000

# Raw HTML off and images off: a model-written image would make the reviewer's browser
# fetch a URL of the model's choosing.
_md = (
    MarkdownIt("commonmark", {"html": False, "linkify": False})
    .enable(["table", "strikethrough"])  # GitHub's markdown, as the live chat renders it
    .disable("image")
)


def escape_model_text(text: str) -> str:
    """Model text made inert for shinychat's markdown renderer: no tag, no entity, no
    image survives; markdown emphasis and lists still read as markdown."""
    return html.escape(text, quote=False).replace("![", "!\\[")


def markdown_html(text: str) -> HTML:
    return HTML(_md.render(text))


# The reviewer's page: every piece of trace data escaped (model text as inert text,
# attribute values completely), icons served by this app.
PAGE = MarkupStyle(
    text=escape_model_text, attribute=escape_attribute_fully, icon_url=provenance.icon_path
)


def answer_markdown(replay: ExchangeReplay) -> str:
    """The markdown shinychat renders for one answer: the projection, model text escaped,
    so the server's asides are the only markup."""
    return projected_markup(replay, PAGE)


def answer_blocks(replay: ExchangeReplay) -> list[str | ArtifactSegment]:
    """The answer as the page draws it: pieces of markdown for shinychat's renderer
    (model text escaped, the server's asides), and between them the documents the model
    handed the user, each drawn as a chip of the page's own (never markup of the
    model's). An artifact stands on its own line, so the cut falls between blocks."""
    blocks: list[str | ArtifactSegment] = []
    piece: list[str] = []
    for n, run in enumerate(replay.runs):
        if n:
            piece.append("\n\n")
        pending: list[Segment] = []
        for seg in run:
            if isinstance(seg, ArtifactSegment):
                piece.append(segments_markup(tuple(pending), PAGE))
                pending = []
                blocks.append("".join(piece))
                blocks.append(seg)
                piece = []
            else:
                pending.append(seg)
        piece.append(segments_markup(tuple(pending), PAGE))
    blocks.append("".join(piece))
    return [b for b in blocks if not isinstance(b, str) or b.strip()] or [""]


def clipped(text: str, limit: int = SHOWN_CHARS) -> tuple[str, bool]:
    """The text as drawn on the page, and whether it was cut."""
    return (text, False) if len(text) <= limit else (text[:limit], True)


def clipped_replay(replay: ExchangeReplay, limit: int = SHOWN_CHARS) -> tuple[ExchangeReplay, bool]:
    """The replay cut after `limit` characters of model text, the documents' bodies
    counted with it (one answer of many documents put 50 M characters into the page): an
    aside that starts before the cut is kept whole (it is the server's, and small), model
    text is cut, and a document that does not fit waits, with what follows it, behind
    *Show all*."""
    left = limit
    runs: list[tuple[Segment, ...]] = []
    for run in replay.runs:
        kept: list[Segment] = []
        for seg in run:
            if left <= 0:
                break
            if isinstance(seg, TextSegment) and len(seg.text) > left:
                kept.append(TextSegment(seg.text[:left]))
                left = 0
                break
            if isinstance(seg, ArtifactSegment) and len(seg.body) > left:
                left = 0
                break
            kept.append(seg)
            left -= _size(seg)
        runs.append(tuple(kept))
        if left <= 0:
            break
    cut = left <= 0 and projected_length(replay) > limit
    if not cut:
        return replay, False
    return ExchangeReplay(tuple(runs), replay.rejected, replay.malformed, replay.chips), True


def _size(seg: Segment) -> int:
    if isinstance(seg, TextSegment):
        return len(seg.text)
    return len(seg.body) if isinstance(seg, ArtifactSegment) else 0


def projected_length(replay: ExchangeReplay) -> int:
    """Characters of model text and documents the answer puts on the page."""
    return sum(_size(s) for run in replay.runs for s in run)


def answer_text(replay: ExchangeReplay) -> str:
    """The answer whole as text, each document in its place under its id and title:
    what *Show all* opens."""

    def piece(s: Segment) -> str:
        if isinstance(s, TextSegment):
            return s.text
        if isinstance(s, ArtifactSegment):
            return f"\n[document {s.id}: {s.title}]\n{s.body}\n"
        return ""

    return "\n\n".join("".join(piece(s) for s in run) for run in replay.runs)


def chip_aside(chip: Chip) -> str:
    """The provenance or review-audit aside after an answer (a labelled pill, as commons
    draws it: not compact)."""
    icon = provenance.icon_path(chip.icon) if chip.icon else None
    body = html.escape(chip.body, quote=False)
    return aside_markup(chip.label, icon, body, escape_attribute_fully, compact=False)


def icon(name: str | None, label: str = "") -> Tag | str:
    if not name:
        return ""
    return tags.img(
        src=provenance.icon_path(name),
        alt=label,
        class_="tr-icon",
        width="14",
        height="14",
        aria_hidden="true" if not label else None,
    )


def pill(d: TagDisplay, *, extra_class: str = "", count: int | None = None) -> Tag:
    """The reviewer's pill for a tag: label, icon and tooltip straight from the table."""
    return tags.span(
        icon(d.icon),
        tags.span(d.label, class_="tr-pill-label"),
        tags.span(f" {count}", class_="tr-pill-count") if count is not None else "",
        class_=f"tr-pill tr-pill-{d.pill_class} {extra_class}".strip(),
        # the tooltip (static/app.js) shows on hover and on keyboard focus alike
        data_tip=d.body,
        tabindex="0",
        data_tag=d.tag or "none",
        role="note",
        aria_label=f"{d.label}: {d.body}",
    )


def format_json(value: Any) -> str:
    if isinstance(value, str):
        try:
            value = json.loads(text := value)
        except json.JSONDecodeError:
            return text
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False)


def tool_card(
    name: str | None,
    arguments: Any,
    result: Any,
    answered: bool,
    show_all: Tag | str = "",
    request: str | None = None,
    note: Tag | str = "",
) -> Tag:
    """A collapsible card: SQL and R shown as code, other arguments as formatted JSON.
    `show_all` is offered under a result longer than SHOWN_CHARS (the page holds that
    much of it)."""
    code_arg = None
    if isinstance(arguments, dict):
        for key in ("sql", "code", "query"):
            if isinstance(arguments.get(key), str):
                code_arg = (key, arguments[key])
                break
    args_block: list[Tag] = []
    if code_arg:
        args_block.append(tags.pre(clipped(code_arg[1])[0], class_=f"tr-code tr-{code_arg[0]}"))
        rest = {k: v for k, v in arguments.items() if k != code_arg[0]}
        if rest:
            args_block.append(tags.pre(clipped(format_json(rest))[0], class_="tr-json"))
    else:
        args_block.append(tags.pre(clipped(format_json(arguments))[0], class_="tr-json"))
    result_text = format_json(result) if answered else "(no result recorded)"
    if len(result_text) > RESULT_PREVIEW_CHARS:
        shown, cut = clipped(result_text)
        result_block: Tag | TagList = TagList(
            tags.pre(result_text[:RESULT_PREVIEW_CHARS] + "…", class_="tr-result"),
            tags.details(
                tags.summary("show all", class_="tr-show-all"),
                tags.pre(shown + ("…" if cut else ""), class_="tr-result"),
                show_all if cut else "",
            ),
        )
    else:
        result_block = tags.pre(result_text, class_="tr-result")
    return tags.details(
        tags.summary(
            tags.span("tool", class_="tr-tool-kicker"),
            tags.code(name or "(unnamed tool)", class_="tr-tool-name"),
        ),
        tags.div(
            tags.div("arguments", class_="tr-card-label"),
            *args_block,
            tags.div("result", class_="tr-card-label"),
            result_block,
            note,
            tags.details(
                tags.summary(
                    "Added by the assistant, not by the tool: a request to cite",
                    class_="tr-request-summary",
                ),
                tags.p(request, class_="tr-request-text"),
                class_="tr-tool-request",
            )
            if request
            else "",
            class_="tr-card-body",
        ),
        class_="tr-tool-card",
    )
